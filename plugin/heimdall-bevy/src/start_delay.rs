//! The late frame start's controller ([`StartDelay`], pure: times in ms), which
//! [`crate::frame_start`]'s plugin drives and the camera phase lock
//! (`camera_phase.rs`) reads its margins from.

use bevy::prelude::*;

/// The most the delay may take of a frame period.
pub const MAX_SHARE: f64 = 0.6;
/// A render thread that waited longer than this for the main world (ms) backs the delay off
/// at once.
pub const BACK_OFF_MS: f64 = 1.0;
/// Room left between the end of the update and the hand-over, as a share of the period (the
/// main world's update varies from frame to frame; a longer one than the room delays the
/// hand-over), and at least [`MIN_MARGIN_MS`].
pub const MARGIN_SHARE: f64 = 0.3;
/// The least room left, ms.
pub const MIN_MARGIN_MS: f64 = 3.0;
/// How far the delay moves each update towards its target.
const GAIN: f64 = 0.25;

/// The controller of the delay (pure: times in ms).
#[derive(Clone, Debug, Default, PartialEq, Reflect)]
#[reflect(Debug, Default, PartialEq, Clone)]
pub struct StartDelay {
    /// The current delay, ms.
    pub delay_ms: f64,
}

impl StartDelay {
    /// Updates the delay from the gap before this update, the render thread's latest wait for
    /// the main world and the frame period (all ms); returns the new delay.
    pub fn update(&mut self, gap_ms: f64, render_wait_ms: f64, period_ms: f64) -> f64 {
        self.update_after_wait(gap_ms, render_wait_ms, period_ms, 0.0)
    }

    /// [`StartDelay::update`] after an update that slept `extra_ms` past its delay (the camera
    /// phase lock's wait, [`crate::camera_phase`]): the gap it left is that much shorter, which
    /// is not a reason to shorten the delay.
    pub fn update_after_wait(
        &mut self,
        gap_ms: f64,
        render_wait_ms: f64,
        period_ms: f64,
        extra_ms: f64,
    ) -> f64 {
        let cap = (MAX_SHARE * period_ms).max(0.0);
        if render_wait_ms > BACK_OFF_MS {
            self.delay_ms = (self.delay_ms - render_wait_ms).max(0.0);
        } else if gap_ms > 2.0 * period_ms {
            // Not a display-paced loop at this rate (a GPU far slower than the period, an app
            // that updates on input only): nothing to wait for, the delay fades out.
            self.delay_ms *= 1.0 - GAIN;
        } else {
            let slept = self.delay_ms + extra_ms.max(0.0);
            let target = slept + gap_ms - margin_ms(period_ms) - render_wait_ms;
            self.delay_ms += GAIN * (target - self.delay_ms);
        }
        self.delay_ms = self.delay_ms.clamp(0.0, cap);
        self.delay_ms
    }
}

/// The room left before the hand-over for a frame period, ms.
pub fn margin_ms(period_ms: f64) -> f64 {
    (MARGIN_SHARE * period_ms).max(MIN_MARGIN_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A display-paced loop: the render thread is ready for the next frame `handover_ms` after
    /// the update starts (without delay) and never waits for the main world while the update,
    /// `update_ms` long, ends before that. The delay settles at the hand-over wait less the
    /// margin, and the update then still ends before the hand-over.
    #[test]
    fn settles_at_the_handover_wait_less_the_margin() {
        let (period, update, handover) = (16.7, 4.0, 16.6);
        let mut c = StartDelay::default();
        for _ in 0..100 {
            let end = c.delay_ms + update;
            let (gap, render_wait) = if end <= handover {
                (handover - end, 0.28)
            } else {
                (0.0, end - handover)
            };
            c.update(gap, render_wait, period);
        }
        let wait = handover - update;
        assert!(
            (c.delay_ms - (wait - margin_ms(period) - 0.28)).abs() < 0.1,
            "{c:?}"
        );
        assert!(c.delay_ms + update < handover);
    }

    /// An idle render thread (its frame takes 4.5 ms, the update 4 ms, a pacer sleeps to each
    /// slot): the render thread waits for the main world, so the delay stays near zero.
    #[test]
    fn stays_near_zero_when_the_render_thread_waits() {
        let (period, update, render) = (16.7, 4.0, 4.5);
        let mut c = StartDelay::default();
        for _ in 0..100 {
            let end = c.delay_ms + update;
            let gap = period - end;
            let render_wait = (period - render).max(0.0);
            c.update(gap, render_wait, period);
        }
        assert_eq!(c.delay_ms, 0.0);
    }

    /// A render thread that had to wait takes that wait off the delay at once; the delay never
    /// exceeds its share of the period; gaps longer than two periods (a slow GPU, an app that
    /// updates on input only) make it fade out instead of grow.
    #[test]
    fn backs_off_at_once_is_capped_and_fades_on_long_gaps() {
        let mut c = StartDelay { delay_ms: 8.0 };
        assert_eq!(c.update(0.0, 5.0, 16.7), 3.0);
        let mut long_wait = StartDelay::default();
        for _ in 0..100 {
            long_wait.update(30.0, 0.0, 16.7);
        }
        assert!((long_wait.delay_ms - MAX_SHARE * 16.7).abs() < 1e-9);
        for _ in 0..100 {
            long_wait.update(150.0, 0.0, 16.7);
        }
        assert!(long_wait.delay_ms < 0.01, "{long_wait:?}");
    }
}
