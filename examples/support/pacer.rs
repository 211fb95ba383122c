//! A steady frame pacer for headless runs (a window's swap chain paces windowed runs): updates
//! start on an absolute schedule `t0 + k · period`, not "period after the last update ended"
//! (which adds every update's overrun and the sleep's overshoot to the next interval). The
//! thread sleeps until shortly before the deadline and yields for the rest; a frame that starts
//! more than a period late re-anchors the schedule instead of bursting to catch up.

use std::time::{Duration, Instant};

use bevy::app::{App, Plugin, PluginsState};

/// Runs the app's updates at a fixed rate (replaces the app's runner).
pub struct PacedRunnerPlugin {
    /// Time between update starts.
    pub period: Duration,
}

/// How long before a deadline the pacer stops sleeping and starts yielding.
const SPIN: Duration = Duration::from_micros(700);

impl Plugin for PacedRunnerPlugin {
    fn build(&self, app: &mut App) {
        let period = self.period;
        app.set_runner(move |mut app: App| {
            if app.plugins_state() != PluginsState::Cleaned {
                while app.plugins_state() == PluginsState::Adding {
                    bevy::tasks::tick_global_task_pools_on_main_thread();
                }
                app.finish();
                app.cleanup();
            }
            let mut anchor = Instant::now();
            let mut k: u32 = 0;
            loop {
                app.update();
                if let Some(exit) = app.should_exit() {
                    return exit;
                }
                k += 1;
                let mut deadline = anchor + period * k;
                let now = Instant::now();
                if now > deadline + period {
                    // Far behind (a stall): start a new schedule from now.
                    anchor = now;
                    k = 0;
                    deadline = now;
                }
                wait_until(deadline);
            }
        });
    }
}

/// Sleeps until `SPIN` before `deadline`, then yields until it.
pub fn wait_until(deadline: Instant) {
    loop {
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        let left = deadline - now;
        if left > SPIN {
            std::thread::sleep(left - SPIN);
        } else {
            std::thread::yield_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_until_is_not_early_and_rarely_late() {
        // Not a timing benchmark: checks the contract (never early) and that the overshoot is
        // far below a frame on an idle machine.
        let mut late = Vec::new();
        for _ in 0..50 {
            let deadline = Instant::now() + Duration::from_millis(2);
            wait_until(deadline);
            let now = Instant::now();
            assert!(now >= deadline);
            late.push(now - deadline);
        }
        late.sort();
        assert!(
            late[25] < Duration::from_millis(2),
            "median overshoot {:?}",
            late[25]
        );
    }
}
