//! How a download shows its progress: a bar on stderr when stderr is a terminal (with the
//! `progress` feature), one line per download otherwise, or nothing.

/// How a download shows its progress.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Progress {
    /// A progress bar on stderr when stderr is a terminal (feature `progress`), else one line on
    /// stderr per download (what is downloaded, from where, how large).
    #[default]
    Auto,
    /// Nothing on stderr.
    Quiet,
}

/// The progress of one download.
#[cfg(feature = "download")]
pub(crate) struct Reporter {
    #[cfg(feature = "progress")]
    bar: Option<indicatif::ProgressBar>,
}

#[cfg(feature = "download")]
impl Reporter {
    /// Starts reporting the download of `total` bytes of `file` from `url`.
    pub(crate) fn start(mode: Progress, file: &str, url: &str, total: u64) -> Reporter {
        use std::io::IsTerminal;
        let terminal = std::io::stderr().is_terminal();
        if mode == Progress::Quiet {
            return Reporter::none();
        }
        #[cfg(feature = "progress")]
        if terminal {
            let bar = indicatif::ProgressBar::with_draw_target(
                Some(total),
                indicatif::ProgressDrawTarget::stderr(),
            );
            let style = indicatif::ProgressStyle::with_template(
                "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {eta}",
            )
            .map(|s| s.progress_chars("=> "))
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
            bar.set_style(style);
            bar.set_message(format!("downloading {file}"));
            return Reporter { bar: Some(bar) };
        }
        let _ = terminal;
        eprintln!(
            "heimdall-models: downloading {file} ({:.1} MB) from {url}",
            total as f64 / 1e6
        );
        Reporter::none()
    }

    fn none() -> Reporter {
        Reporter {
            #[cfg(feature = "progress")]
            bar: None,
        }
    }

    /// `n` more bytes arrived.
    pub(crate) fn advance(&self, n: u64) {
        #[cfg(feature = "progress")]
        if let Some(bar) = &self.bar {
            bar.inc(n);
        }
        let _ = n;
    }

    /// The download ended (either way): the bar is cleared.
    pub(crate) fn finish(&self) {
        #[cfg(feature = "progress")]
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(feature = "download")]
impl Drop for Reporter {
    fn drop(&mut self) {
        self.finish();
    }
}
