//! The simulator's display model against the app's blanks (issue #15 item 6): a recording
//! carries where the display's vertical blanks fell (`vsync_phase_ms`, from the presentation
//! times the app's display layer gave), and the simulator shows each frame at the first of
//! those blanks at or after its render's end. By hand.

use heimdall_coordinator::sim::{Replay, RunRecorder, Scenario, SimOptions, simulate_opts};
use heimdall_coordinator::{CoordinatorConfig, FrameBudget, policy_by_name};

const P: f64 = 1000.0 / 60.0;

fn recorder() -> RunRecorder {
    let mut r = RunRecorder::new(&CoordinatorConfig::new(FrameBudget::new(
        60.0, 3.0, 1.0, 5.0,
    )));
    r.set_frame_rate(60.0);
    r
}

/// Six frames from 1000 ms on the 60 Hz grid, each shown `shown[k]` ms after its start.
fn exported_phase(shown: &[f64]) -> Option<f64> {
    let mut r = recorder();
    for (k, s) in shown.iter().enumerate() {
        let start = 1000.0 + k as f64 * P;
        r.frame(start, Some(2.0));
        r.shown(start + s);
    }
    r.export().1.vsync_phase_ms
}

/// Blanks 5 ms after each frame start give a phase of 5 ms, also when each one is shown a
/// period or two later; blanks alternating 0.5 ms after and 0.5 ms before the grid give 0 (a
/// plain mean would say half a period); a run without presentation times has none.
#[test]
fn the_recording_says_where_the_blanks_fall() {
    let phase = exported_phase(&[5.0, 5.0 + P, 5.0, 5.0 + 2.0 * P, 5.0, 5.0]).unwrap();
    assert!((phase - 5.0).abs() < 1e-9, "{phase}");
    let wrapped = exported_phase(&[0.5, P - 0.5, 0.5, P - 0.5, 0.5, P - 0.5]).unwrap();
    assert!(wrapped.min(P - wrapped) < 1e-9, "{wrapped}");
    let mut r = recorder();
    r.frame(1000.0, Some(2.0));
    assert_eq!(r.export().1.vsync_phase_ms, None);
    // A non-finite time is ignored.
    r.shown(f64::NAN);
    assert_eq!(r.ignored(), 1);
    assert_eq!(r.export().1.vsync_phase_ms, None);
}

/// 30 frames on the 60 Hz grid whose renders alternate 5 and 14 ms (the one DNN is asked after
/// the run), with the blanks `phase` ms into the period and, if given, each frame presented
/// `present` ms after its start: the simulator's frame report.
fn alternating(phase: Option<f64>, present: Option<f64>) -> heimdall_coordinator::sim::FrameStats {
    let text = r#"{"frame_rate": 60, "render_ms": 5, "duration_s": 0.5, "cpu_workers": 1,
        "decisions": "per_frame",
        "dnns": [{"name": "a", "gpu_op_ms": [0.1], "cpu_op_ms": [50],
                  "request": {"events_ms": [2000]}}]}"#;
    let sc = Scenario::from_json(text).unwrap();
    let replay = Replay {
        render_ms: vec![5.0, 14.0],
        frame_start_ms: (0..30).map(|k| k as f64 * P).collect(),
        vsync_phase_ms: phase,
        present_ms: present.map_or(Vec::new(), |p| vec![Some(p); 30]),
        ..Replay::default()
    };
    replay.check(&sc).unwrap();
    let opts = SimOptions {
        replay: Some(replay),
        ..SimOptions::default()
    };
    let policy = policy_by_name("max_total_utility").unwrap();
    simulate_opts(&sc, policy, &opts, |_| {})
        .unwrap()
        .report
        .frames
}

/// The alternating renders. With the blanks on the frame grid every render ends before the
/// next blank: each frame is shown one period after the one before, 100 %. With the blanks 10 ms
/// into the period, a 5 ms render makes its frame's own blank at +10 and a 14 ms one the next at
/// +26.7: frames are shown at blanks 0, 2, 2, 4, 4, ..., half the intervals two periods long.
/// The GPU proxy does not depend on the blanks.
#[test]
fn the_display_model_uses_the_recorded_blanks() {
    let grid = alternating(None, None);
    assert_eq!(grid.rendered, 30);
    assert_eq!(grid.wall_on_time_rate, 1.0, "{grid:?}");
    let late = alternating(Some(10.0), None);
    // 29 intervals: 2, 0, 2, 0, ...: 14 of the 29 are 0 (at most 1.25), 15 are 2.
    assert!(
        (late.wall_on_time_rate - 14.0 / 29.0).abs() < 1e-9,
        "{late:?}"
    );
    assert_eq!(late.max_interval_periods, 2.0);
    assert_eq!(late.on_time_rate, grid.on_time_rate);
    assert_eq!(late.work_fits_rate, grid.work_fits_rate);
}

/// A FIFO swap chain gives each frame the blank after the frames queued before it, counting its
/// submission and not its GPU work; the app's `swapchain.after_gpu` book shows it at the first
/// blank at or after both, one frame per blank. With the recorded presentation times the
/// display model does the same. The alternating renders, blanks 10 ms into the period:
/// - presented one blank after their own (+26.7 ms, as behind a full queue): every render has
///   ended by then, each frame is shown a period after the one before: 100 % (14 of 29 without
///   the presentation times, above);
/// - presented at their own blank (+10 ms): frame 1's 14 ms render misses it (blank 2), and one
///   frame per blank keeps each later frame a blank behind its own (blanks 0, 2, 3, 4, ...):
///   one interval of two periods, 28 of 29.
#[test]
fn the_display_model_shows_a_frame_no_earlier_than_its_presentation() {
    let queued = alternating(Some(10.0), Some(10.0 + P));
    assert_eq!(queued.rendered, 30);
    assert_eq!(queued.wall_on_time_rate, 1.0, "{queued:?}");
    assert_eq!(queued.max_interval_periods, 1.0);
    let own = alternating(Some(10.0), Some(10.0));
    assert!(
        (own.wall_on_time_rate - 28.0 / 29.0).abs() < 1e-9,
        "{own:?}"
    );
    assert_eq!(own.max_interval_periods, 2.0);
    // The GPU proxy does not depend on the display.
    assert_eq!(own.work_fits_rate, queued.work_fits_rate);
    // Presentations far past the run (a valid, absurd recording): every frame lands on the
    // last blank the count can hold, without overflowing (this panicked in a debug build).
    let far = alternating(Some(10.0), Some(1e300));
    assert_eq!(far.rendered, 30);
    assert_eq!(far.max_interval_periods, 0.0, "{far:?}");
}

/// The recorder exports each frame's presentation after its start.
#[test]
fn the_recording_has_each_frames_presentation() {
    let mut r = recorder();
    for k in 0..4 {
        let start = 1000.0 + k as f64 * P;
        r.frame(start, Some(2.0));
        if k != 2 {
            r.shown(start + 5.0 + k as f64);
        }
    }
    let present = r.export().1.present_ms;
    assert_eq!(present, vec![Some(5.0), Some(6.0), None, Some(8.0)]);
}

/// A phase outside the period, or a presentation time before its frame's start, is refused,
/// naming the field.
#[test]
fn a_phase_outside_the_period_is_refused() {
    let text = r#"{"frame_rate": 60, "render_ms": 5, "duration_s": 0.1, "cpu_workers": 1,
        "dnns": [{"name": "a", "gpu_op_ms": [0.1], "cpu_op_ms": [50],
                  "request": {"events_ms": [5]}}]}"#;
    let sc = Scenario::from_json(text).unwrap();
    for bad in [-1.0, P, 20.0, f64::NAN] {
        let replay = Replay {
            vsync_phase_ms: Some(bad),
            ..Replay::default()
        };
        let err = replay.check(&sc).unwrap_err().to_string();
        assert!(err.contains("vsync_phase_ms"), "{bad}: {err}");
    }
    // So is a presentation before its frame's start, or not finite.
    for bad in [-1.0, f64::INFINITY] {
        let replay = Replay {
            present_ms: vec![Some(1.0), Some(bad)],
            ..Replay::default()
        };
        let err = replay.check(&sc).unwrap_err().to_string();
        assert!(err.contains("present_ms[1]"), "{bad}: {err}");
    }
}
