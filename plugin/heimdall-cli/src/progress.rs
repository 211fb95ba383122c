//! Progress on stderr for the CLI's long steps (compiling for the GPU, the accuracy guard; the
//! downloads show their own bar, from `heimdall-models`): a spinner with the step and its elapsed
//! time while it runs, cleared when it ends, only when stderr is a terminal (pipes and logs get
//! nothing).

use std::io::IsTerminal;
use std::time::Duration;

/// Runs `f` with a spinner naming `what` on stderr when stderr is a terminal.
pub fn step<T>(what: impl Into<String>, f: impl FnOnce() -> T) -> T {
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar =
            indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
        if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
            bar.set_style(style);
        }
        bar.set_message(what.into());
        bar.enable_steady_tick(Duration::from_millis(120));
        bar
    });
    let out = f();
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    out
}
