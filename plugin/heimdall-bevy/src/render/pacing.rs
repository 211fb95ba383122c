//! The pacing margin: how much of the frame the coordinator leaves unused, learned from the wall
//! clock. The GPU timestamps only time the passes they bracket; what they miss (the camera upload,
//! Bevy's own passes after the scene, submission gaps, a GPU that runs a little slower while it is
//! full) can still push a frame past its period even when every timed frame "fits". So the render
//! world watches its own frame-to-frame interval: a frame later than the on-time bound while DNN
//! chunks were running widens the margin at once; every on-time frame narrows it a little
//! (additive increase on lateness, slow linear decay), so the DNNs get back the slack the scene
//! does not need.
//!
//! The margin only answers occasional overruns. It does not grow when the scene alone does not
//! fit in a period (its measured GPU time is over it), nor when most frames of the last second
//! were late (a software rasteriser, a frame rate the device cannot draw, a busy CPU): such
//! lateness is systemic, holding DNNs back would starve them (their latency then grows past what a
//! synced background can show) without giving the scene its rate, and the chunk budget and CPU
//! offload are the tools there. It is also capped at a small share of the period.

use std::collections::VecDeque;
use std::time::Instant;

/// A frame is late when its interval exceeds this many periods (the on-time bound of the
/// stats' `wall_on_time_rate`).
pub const LATE_FACTOR: f64 = 1.25;
/// Margin added per late frame, ms.
const STEP_MS: f64 = 0.5;
/// Margin given back per on-time frame, ms (a full millisecond over ~100 on-time frames).
const DECAY_MS: f64 = 0.01;
/// At most this share of the period is held back (2.5 ms at 60 fps).
const MAX_SHARE: f64 = 0.15;
/// Lateness is systemic when more than this share of the last second's frames were late.
const SYSTEMIC_SHARE: f64 = 0.5;

/// The learned margin (render world).
#[derive(Debug, Default)]
pub struct PacingMargin {
    /// Extra margin now, ms (on top of the configured `margin_ms`).
    pub extra_ms: f64,
    last: Option<Instant>,
    /// Whether the previous frame ran GPU chunks (a late frame without any is not theirs).
    chunks_before: bool,
    /// Late (true) or on time, for the last second's frames.
    recent: VecDeque<bool>,
}

impl PacingMargin {
    /// Records a frame starting at `now` and returns the extra margin to use for it;
    /// `scene_ms`: the scene's measured GPU time.
    pub fn on_frame(&mut self, now: Instant, period_ms: f64, scene_ms: f64) -> f64 {
        if let Some(last) = self.last.replace(now) {
            let interval = (now - last).as_secs_f64() * 1e3;
            let dnns_can_matter = self.chunks_before && scene_ms < period_ms;
            self.observe(interval, period_ms, dnns_can_matter);
        }
        self.extra_ms
    }

    /// Whether the frame just planned runs DNN chunks on the GPU.
    pub fn planned(&mut self, chunks: bool) {
        self.chunks_before = chunks;
    }

    /// One frame interval, ms; `chunks`: whether the frame before it ran DNN chunks (and the
    /// scene alone fits in a period).
    pub fn observe(&mut self, interval_ms: f64, period_ms: f64, chunks: bool) {
        if !(period_ms.is_finite() && period_ms > 0.0 && interval_ms.is_finite()) {
            return;
        }
        let late = interval_ms > LATE_FACTOR * period_ms;
        let second = (1000.0 / period_ms).round().clamp(1.0, 1000.0) as usize;
        self.recent.push_back(late);
        while self.recent.len() > second {
            self.recent.pop_front();
        }
        let late_share =
            self.recent.iter().filter(|&&l| l).count() as f64 / self.recent.len() as f64;
        if late && chunks && late_share <= SYSTEMIC_SHARE {
            self.extra_ms = (self.extra_ms + STEP_MS).min(MAX_SHARE * period_ms);
        } else {
            self.extra_ms = (self.extra_ms - DECAY_MS).max(0.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: f64 = 1000.0 / 60.0;

    fn run(m: &mut PacingMargin, intervals: &[f64], chunks: bool) {
        for &i in intervals {
            m.observe(i, P, chunks);
        }
    }

    #[test]
    fn late_frames_with_chunks_widen_the_margin_and_on_time_frames_narrow_it() {
        let mut m = PacingMargin::default();
        run(&mut m, &[16.7; 50], true);
        assert_eq!(m.extra_ms, 0.0, "on-time frames never add margin");
        run(&mut m, &[25.0, 16.7, 30.0], true);
        assert!(
            (m.extra_ms - (2.0 * STEP_MS - DECAY_MS)).abs() < 1e-9,
            "{}",
            m.extra_ms
        );
        run(&mut m, &[16.7; 1000], true);
        assert_eq!(m.extra_ms, 0.0, "the margin decays back to zero");
    }

    #[test]
    fn late_frames_without_chunks_are_not_the_dnns_fault() {
        let mut m = PacingMargin::default();
        run(&mut m, &[16.7, 40.0, 16.7, 16.7, 40.0], false);
        assert_eq!(m.extra_ms, 0.0);
    }

    #[test]
    fn systemic_lateness_does_not_widen_the_margin() {
        // A device that cannot hold the rate: every frame late, every one with chunks. Only
        // the first late frames of the second (while they are still the minority) widen it.
        let mut m = PacingMargin::default();
        run(&mut m, &[16.7; 60], true);
        run(&mut m, &[40.0; 600], true);
        assert_eq!(m.extra_ms, 0.0, "{}", m.extra_ms);
    }

    #[test]
    fn the_margin_is_bounded() {
        let mut m = PacingMargin::default();
        // One late frame in three: occasional, not systemic.
        for _ in 0..400 {
            run(&mut m, &[100.0, 16.7, 16.7], true);
        }
        assert!(m.extra_ms <= MAX_SHARE * P + 1e-9, "{}", m.extra_ms);
        assert!(
            m.extra_ms >= MAX_SHARE * P - 2.0 * DECAY_MS,
            "{}",
            m.extra_ms
        );
        // Garbage intervals change nothing.
        let before = m.extra_ms;
        m.observe(f64::NAN, P, true);
        m.observe(20.0, 0.0, true);
        assert_eq!(m.extra_ms, before);
    }
}
