//! Where a frame's wall time goes on the render thread: instants stamped at the boundaries of
//! Bevy's render schedules, turned into consecutive phases that add up to the frame's interval
//! (previous presentation to this one). `stats.json` summarises each phase and lists them for
//! every late frame, so a late frame can be told apart as a late main world, Bevy's own
//! preparation, the scene's recording, the DNN work we record (and submit, when it goes ahead of
//! the scene), the submission or the present.
//!
//! The stamps are `Instant::now()` calls in tiny systems: no GPU waits, no allocation.

use std::time::Instant;

use bevy::prelude::*;

pub use crate::bridge::phases::{FramePhases, PHASE_COUNT, PHASES};

/// A boundary between two phases; the index of the phase it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stamp {
    /// The extract schedule ran (the main world handed its frame over).
    Extract = 1,
    /// The render schedule started (`RenderSystems::ExtractCommands`).
    RenderBegin = 2,
    /// Our prepare systems start.
    HeimdallPrepare = 3,
    /// Our schedule systems ended; our DNN work's recording (ahead of the scene) starts.
    EncodeBegin = 4,
    /// Our DNN work ahead of the scene was recorded and submitted.
    EncodeEnd = 5,
    /// The render graph started (`RenderGraphSystems::Begin`).
    GraphBegin = 6,
    /// The scene passes were recorded (after `camera_driver`).
    SceneRecorded = 7,
    /// Our DNN work after the scene was recorded (when it does not go first).
    LateEncodeEnd = 8,
    /// The graph's submission ended (`RenderGraphSystems::Finish`).
    Submitted = 9,
}

/// The render thread's stamps for the frame in progress (render world).
#[derive(Resource, Debug, Default)]
pub(crate) struct PhaseClock {
    /// Start of each phase after the first (index = phase), this frame.
    starts: [Option<Instant>; PHASE_COUNT],
    /// When the previous frame was presented.
    last_presented: Option<Instant>,
}

impl PhaseClock {
    /// Stamps a boundary now (a later stamp of the same boundary in the frame wins only if none
    /// was made).
    /// `at`: a [`Stamp`] as `usize`.
    pub fn stamp(&mut self, at: usize, now: Instant) {
        let Some(slot) = self.starts.get_mut(at) else {
            return;
        };
        if slot.is_none() {
            *slot = Some(now);
        }
    }

    /// The frame was presented at `now`: its phases (`None` for the first frame, which has no
    /// interval), and the clock is ready for the next frame. A boundary that was not stamped
    /// (a system that did not run) gives its phase zero length.
    pub fn presented(&mut self, now: Instant, frame: Option<u64>) -> Option<FramePhases> {
        let starts = std::mem::take(&mut self.starts);
        let last = self.last_presented.replace(now)?;
        let mut bounds = [last; PHASE_COUNT + 1];
        bounds[PHASE_COUNT] = now;
        let mut prev = last;
        for (i, s) in starts.iter().enumerate().skip(1) {
            // Clamped so that the phases stay consecutive and add up to the interval.
            let t = s.unwrap_or(prev).clamp(prev, now);
            bounds[i] = t;
            prev = t;
        }
        let mut ms = [0.0f32; PHASE_COUNT];
        for (i, m) in ms.iter_mut().enumerate() {
            *m = (bounds[i + 1] - bounds[i]).as_secs_f32() * 1e3;
        }
        Some(FramePhases { ms, frame })
    }
}

/// A system stamping one boundary: `AT` is a [`Stamp`] as `usize`
/// (`stamp::<{ Stamp::Extract as usize }>`).
pub(crate) fn stamp<const AT: usize>(mut clock: ResMut<PhaseClock>) {
    clock.stamp(AT, Instant::now());
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn phases_add_up_to_the_interval_and_missing_stamps_are_empty() {
        let t0 = Instant::now();
        let ms = |m: u64| t0 + Duration::from_millis(m);
        let mut c = PhaseClock::default();
        assert_eq!(
            c.presented(t0, None),
            None,
            "the first frame has no interval"
        );
        c.stamp(Stamp::Extract as usize, ms(4));
        c.stamp(Stamp::RenderBegin as usize, ms(5));
        c.stamp(Stamp::RenderBegin as usize, ms(6)); // a second stamp does not move it
        c.stamp(Stamp::EncodeBegin as usize, ms(7));
        c.stamp(Stamp::EncodeEnd as usize, ms(8));
        c.stamp(Stamp::GraphBegin as usize, ms(9));
        c.stamp(Stamp::SceneRecorded as usize, ms(12));
        c.stamp(Stamp::LateEncodeEnd as usize, ms(13));
        c.stamp(Stamp::Submitted as usize, ms(15));
        let p = c.presented(ms(17), Some(7)).unwrap();
        assert_eq!(p.frame, Some(7));
        let want = [4.0, 1.0, 0.0, 2.0, 1.0, 1.0, 3.0, 1.0, 2.0, 2.0];
        for (i, (got, want)) in p.ms.iter().zip(want).enumerate() {
            assert!((got - want).abs() < 1e-3, "{}: {got} vs {want}", PHASES[i]);
        }
        assert!((p.ms.iter().sum::<f32>() - 17.0).abs() < 1e-3);
        // The next frame starts from this presentation, with fresh stamps; without any, its
        // whole interval is the last phase's (a missing boundary sits on the one before).
        let q = c.presented(ms(30), None).unwrap();
        assert!((q.ms[PHASE_COUNT - 1] - 13.0).abs() < 1e-3, "{q:?}");
        assert!(q.ms[..PHASE_COUNT - 1].iter().all(|&m| m == 0.0), "{q:?}");
    }

    #[test]
    fn a_stamp_out_of_order_is_clamped() {
        let t0 = Instant::now();
        let ms = |m: u64| t0 + Duration::from_millis(m);
        let mut c = PhaseClock::default();
        c.presented(t0, None);
        c.stamp(Stamp::GraphBegin as usize, ms(8));
        c.stamp(Stamp::SceneRecorded as usize, ms(6)); // before the graph began: clamped to it
        let p = c.presented(ms(10), None).unwrap();
        assert!(p.ms.iter().all(|&m| m >= 0.0));
        assert!((p.ms.iter().sum::<f32>() - 10.0).abs() < 1e-3);
        assert_eq!(p.ms[6], 0.0);
    }
}
