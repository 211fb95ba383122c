//! Camera phase lock: the late frame start ([`crate::HeimdallPacingPlugin`]) waits a little
//! longer when a camera frame is due just after the update would start, so the update takes that
//! frame instead of the previous one (see [`CameraPhase`]; pure, times in ms). The camera runs
//! on its own clock (a 30 Hz webcam, a clip paced with [`crate::camera::FramePacing::Rate`]),
//! the display on another: without the lock, a run whose camera frames arrive just after the
//! update started sees each of them sit for a whole frame period before the update that takes
//! it (`stats.json`'s `latency_stages_ms.capture_to_start`), one whose frames arrive just before
//! does not, and which of the two a run gets depends on where the two clocks happen to fall.
//!
//! The wait is bounded by the room the delay leaves before the hand-over to the render thread:
//! the time from the end of one update to the start of the next, sleep included (the smallest
//! one seen lately), less the delay and half of the delay's margin
//! ([`crate::frame_start::margin_ms`]), and at most [`MAX_WAIT_SHARE`] of the frame period. It
//! does not wait when the delay is zero (the loop is not paced by the display, or the render
//! thread waits for the main world: any wait would make the frame late), when the render thread
//! waited for the main world before this update, or when a camera's frame is not due within that
//! room; a camera that stopped delivering (its next frame overdue) is never waited for.

use crate::start_delay::{BACK_OFF_MS, margin_ms};

/// The most a camera wait may take of a frame period.
pub const MAX_WAIT_SHARE: f64 = 0.25;
/// The share of the delay's margin that a camera wait leaves untouched (the update's own
/// variation from frame to frame).
pub const MARGIN_KEPT: f64 = 0.5;
/// How long past a camera frame's due time the update starts, ms (a capture thread hands the
/// frame over).
pub const ARRIVAL_SLACK_MS: f64 = 0.25;
/// How fast the free time's estimate rises again after a shorter one (it falls at once).
const RISE: f64 = 0.1;

/// A camera's clock as its source knows it (ms on the plugin's clock).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CameraDue {
    /// When its latest frame arrived (was captured, or was due on its clock).
    pub last_ms: f64,
    /// Its frame period.
    pub period_ms: f64,
}

impl CameraDue {
    /// When its next frame is expected.
    pub fn next_ms(&self) -> f64 {
        self.last_ms + self.period_ms
    }
}

/// The camera phase lock's controller (pure: times in ms).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CameraPhase {
    /// The time from the end of one update to the start of the next, sleep included (the
    /// smallest one seen lately); `None` before the first or after a loop the display did not
    /// pace.
    free_ms: Option<f64>,
}

impl CameraPhase {
    /// Learns from the gap before this update (end of the previous update to now, before any
    /// sleep) and what the previous update slept (its delay and camera wait).
    pub fn observe(&mut self, gap_ms: f64, slept_ms: f64, period_ms: f64) {
        if !(gap_ms.is_finite() && slept_ms.is_finite()) || gap_ms > 2.0 * period_ms {
            // Not a display-paced loop at this rate (see `StartDelay`): nothing to learn.
            self.free_ms = None;
            return;
        }
        let sample = gap_ms + slept_ms;
        self.free_ms = Some(match self.free_ms {
            Some(f) if sample > f => f + RISE * (sample - f),
            _ => sample,
        });
    }

    /// How much later than its delay (`delay_ms`) this update may start, given the render
    /// thread's latest wait for the main world and the frame period.
    pub fn room_ms(&self, delay_ms: f64, render_wait_ms: f64, period_ms: f64) -> f64 {
        let Some(free) = self.free_ms else {
            return 0.0;
        };
        if delay_ms <= 0.0 || render_wait_ms > BACK_OFF_MS {
            return 0.0;
        }
        let left = free - delay_ms - MARGIN_KEPT * margin_ms(period_ms);
        left.min(MAX_WAIT_SHARE * period_ms).max(0.0)
    }

    /// How long to wait past `start_ms` (where the update would start after its delay) for the
    /// cameras: until the latest of the frames due within `room_ms` (plus
    /// [`ARRIVAL_SLACK_MS`]), or 0 when none is (a frame already due, a stalled camera, one due
    /// after the room).
    pub fn wait_ms(
        start_ms: f64,
        cameras: impl IntoIterator<Item = CameraDue>,
        room_ms: f64,
    ) -> f64 {
        cameras
            .into_iter()
            .filter(|c| c.period_ms > 0.0 && c.last_ms.is_finite() && c.period_ms.is_finite())
            .map(|c| c.next_ms() - start_ms)
            .filter(|&ahead| ahead > 0.0)
            .map(|ahead| ahead + ARRIVAL_SLACK_MS)
            .filter(|&wait| wait <= room_ms)
            .fold(0.0, f64::max)
    }
}

#[cfg(test)]
mod tests;
