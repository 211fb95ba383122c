//! Tests that cannot check what they claim on this machine say so: [`skip`] prints one line
//! (`SKIP <test>: <why>`) to stderr and, where `HEIMDALL_SKIP_LOG` names a file, appends the same
//! line to it, so that CI counts the skips of a whole `cargo test` run (libtest keeps the
//! output of passing tests to itself; `.ci/run` prints the count and the lines).

use std::io::Write as _;

/// The environment variable naming the file skipped tests append their line to.
pub const SKIP_LOG: &str = "HEIMDALL_SKIP_LOG";

/// Reports that `test` skips (all or part of what it checks) because of `why`.
pub fn skip(test: &str, why: &str) {
    let log = std::env::var_os(SKIP_LOG);
    skip_to(test, why, log.as_deref().map(std::path::Path::new));
}

/// [`skip`] with the log file given.
fn skip_to(test: &str, why: &str, log: Option<&std::path::Path>) {
    let line = format!("SKIP {test}: {why}");
    eprintln!("{line}");
    let Some(path) = log else {
        return;
    };
    // One write of a whole line in append mode: lines of tests running at once do not mix.
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
    if let Err(e) = written {
        eprintln!("{SKIP_LOG}={}: {e}", path.display());
    }
}

/// Whether GPU tests are skipped (`HEIMDALL_SKIP_GPU=1`); if so, reports that `test` skips.
pub fn skip_gpu(test: &str) -> bool {
    let skipping = std::env::var("HEIMDALL_SKIP_GPU").is_ok_and(|v| v == "1");
    if skipping {
        skip(test, "HEIMDALL_SKIP_GPU=1");
    }
    skipping
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A skip appends exactly its line to the log file.
    #[test]
    fn skips_are_logged_to_the_file() {
        let path = std::env::temp_dir().join(format!("heimdall-skip-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        skip_to("a::test", "no tensor cores on this adapter", Some(&path));
        skip_to("b::test", "why", Some(&path));
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(
            text,
            "SKIP a::test: no tensor cores on this adapter\nSKIP b::test: why\n"
        );
    }
}
