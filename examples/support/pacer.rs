//! A steady frame pacer for headless runs (a window's swap chain paces windowed runs): updates
//! start on an absolute schedule `t0 + k · period`, not "period after the last update ended"
//! (which adds every update's overrun and the sleep's overshoot to the next interval). The
//! thread sleeps until shortly before the deadline and yields for the rest; a frame that starts
//! more than a period late re-anchors the schedule instead of bursting to catch up.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bevy::app::{App, Plugin, PluginsState};
use bevy::prelude::Resource;

use crate::latency::LatencyLog;

/// Runs the app's updates at a fixed rate (replaces the app's runner).
pub struct PacedRunnerPlugin {
    /// Time between update starts.
    pub period: Duration,
}

/// The pacer's schedule `anchor + k · period` (a resource the pacer inserts), shared with the headless display emulation: its
/// vertical blanks are the slots the updates start in, as an app driven by a display's vsync
/// starts each frame at a blank and shows it at a later one.
#[derive(Resource, Clone, Debug)]
pub struct VblankClock(Arc<Mutex<(Instant, Duration)>>);

impl VblankClock {
    /// A schedule starting now.
    pub fn new(period: Duration) -> Self {
        VblankClock(Arc::new(Mutex::new((Instant::now(), period))))
    }

    /// The period.
    pub fn period(&self) -> Duration {
        self.0.lock().map(|g| g.1).unwrap_or(Duration::ZERO)
    }

    /// Moves the schedule to start at `anchor`.
    pub fn re_anchor(&self, anchor: Instant) {
        if let Ok(mut g) = self.0.lock() {
            g.0 = anchor;
        }
    }

    /// The first blank at or after `now`.
    pub fn next_blank(&self, now: Instant) -> Instant {
        let Ok(&(anchor, period)) = self.0.lock().as_deref() else {
            return now;
        };
        if period.is_zero() || now <= anchor {
            return now.max(anchor);
        }
        let since = (now - anchor).as_nanos();
        let p = period.as_nanos();
        let k = since.div_ceil(p);
        anchor + Duration::from_nanos((k * p).min(u64::MAX as u128) as u64)
    }
}

/// What the pacer saw of each update from [`PacerLog::start`] on: how long the update took (the
/// main world's schedule, which waits for the render world of the frame before), and how late it
/// started against its slot. A late frame whose update was short was held up between updates (the
/// sleep); one whose update was long, by the app itself. A diagnosis of frame pacing, reported
/// in `stats.json` as `pacer`. Bounded for runs of any length: the logs keep the latest
/// [`LatencyLog::CAPACITY`] samples for the quantiles, and count all.
#[derive(Resource, Debug, Clone)]
pub struct PacerLog {
    recording: bool,
    /// Update durations, ms.
    pub update_ms: LatencyLog,
    /// How late each update started after its slot, ms.
    pub start_late_ms: LatencyLog,
    /// Updates that took longer than a period.
    pub long_updates: usize,
}

impl Default for PacerLog {
    fn default() -> Self {
        PacerLog {
            recording: false,
            update_ms: LatencyLog::preallocated(),
            start_late_ms: LatencyLog::preallocated(),
            long_updates: 0,
        }
    }
}

impl PacerLog {
    /// Starts recording (the statistics' window: after the warm-up).
    pub fn start(&mut self) {
        self.recording = true;
    }

    fn record(&mut self, late: Duration, update: Duration, period: Duration) {
        if self.recording {
            self.update_ms.push(update.as_secs_f64() * 1e3);
            self.start_late_ms.push(late.as_secs_f64() * 1e3);
            self.long_updates += usize::from(update > period);
        }
    }

    /// As JSON for `stats.json`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "update_ms": self.update_ms.summary(),
            "start_late_ms": self.start_late_ms.summary(),
            "updates_longer_than_a_period": self.long_updates,
        })
    }
}

/// How long before a deadline the pacer stops sleeping and starts yielding.
const SPIN: Duration = Duration::from_micros(700);

impl Plugin for PacedRunnerPlugin {
    fn build(&self, app: &mut App) {
        let period = self.period;
        let clock = VblankClock::new(period);
        app.init_resource::<PacerLog>();
        app.insert_resource(clock.clone());
        app.set_runner(move |mut app: App| {
            if app.plugins_state() != PluginsState::Cleaned {
                while app.plugins_state() == PluginsState::Adding {
                    bevy::tasks::tick_global_task_pools_on_main_thread();
                }
                app.finish();
                app.cleanup();
            }
            let mut anchor = Instant::now();
            clock.re_anchor(anchor);
            let mut k: u32 = 0;
            let mut deadline = anchor;
            loop {
                let start = Instant::now();
                app.update();
                let update = start.elapsed();
                if let Some(mut log) = app.world_mut().get_resource_mut::<PacerLog>() {
                    log.record(start.saturating_duration_since(deadline), update, period);
                }
                if let Some(exit) = app.should_exit() {
                    return exit;
                }
                k += 1;
                deadline = anchor + period * k;
                let now = Instant::now();
                if now > deadline + period {
                    // Far behind (a stall): start a new schedule from now.
                    anchor = now;
                    clock.re_anchor(anchor);
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
    fn blanks_are_on_the_pacer_schedule() {
        let clock = VblankClock::new(Duration::from_millis(10));
        let anchor = Instant::now();
        clock.re_anchor(anchor);
        let ms = |m: u64| anchor + Duration::from_millis(m);
        assert_eq!(clock.next_blank(ms(0)), ms(0));
        assert_eq!(clock.next_blank(ms(1)), ms(10));
        assert_eq!(clock.next_blank(ms(10)), ms(10));
        assert_eq!(clock.next_blank(ms(25)), ms(30));
        assert_eq!(clock.next_blank(anchor - Duration::from_millis(3)), anchor);
        assert_eq!(clock.period(), Duration::from_millis(10));
    }

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
