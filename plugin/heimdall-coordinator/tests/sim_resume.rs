//! A scenario's `resumable_steps`: where an offloaded inference the GPU had started continues on
//! the CPU from the GPU's activations (`Coordinator::set_resumable_steps`), as the Bevy plugin
//! declares it for every GPU model while its `offload_resumes_from_gpu` stays off.
//!
//! The model is moved by the old offload rule (`PlacementRule::OffloadRule`), whose check once a
//! second catches an inference part way on the GPU at a time these cases compute by hand; the
//! placement planner sees the deadline missed at its first plan and moves the model before any
//! inference starts. The mechanism of resuming is the same for both (`tests/offload.rs` has the
//! planner's own cases: the GPU budget collapsing under a running inference).

use heimdall_coordinator::sim::{Decisions, Scenario, SimOptions, SimOutput, simulate_opts};
use heimdall_coordinator::{PlacementRule, policy_by_name};

/// 30 Hz, a 3 ms render, one CPU worker; one DNN of ten steps, 10 ms each on the GPU and 1 ms on
/// the CPU, deadline 100 ms, requested every 250 ms from 180 ms. On the GPU it runs two steps
/// per frame (20 ms chunks for a 29.33 ms budget), 150-160 ms an inference: late. The request
/// at 930 ms gets steps 0..2 after frame 28's render (936.33..956.33) and 2..4 after frame 29's
/// (969.67..989.67); after frame 30's render (1000..1003) the offload check (every second)
/// moves the model to the CPU with the GPU at boundary 4, and it stays there.
const LATE_ON_THE_GPU: &str = r#"{"frame_rate": 30, "render_ms": 3, "duration_s": 3,
    "cpu_workers": 1,
    "dnns": [{"name": "m", "gpu_op_ms": [10, 10, 10, 10, 10, 10, 10, 10, 10, 10],
              "cpu_op_ms": [1, 1, 1, 1, 1, 1, 1, 1, 1, 1], "deadline_ms": 100,
              "request": {"period_ms": 250, "start_ms": 180}}]}"#;

fn scenario(steps: Option<Vec<usize>>) -> Scenario {
    let mut sc = Scenario::from_json(LATE_ON_THE_GPU).unwrap();
    sc.dnns[0].resumable_steps = steps;
    sc
}

/// `sc` with the configuration's `offload_resumes_from_gpu` at `flag`.
fn run(sc: &Scenario, flag: bool) -> SimOutput {
    simulate_opts(
        sc,
        policy_by_name("max_total_utility").unwrap(),
        &SimOptions::default(),
        |c| {
            c.offload_resumes_from_gpu = flag;
            c.placement.rule = PlacementRule::OffloadRule;
        },
    )
    .unwrap()
}

/// Finish time of the inference captured at 930 ms, the one the offload catches on the GPU.
fn caught_finish(out: &SimOutput) -> f64 {
    let c: Vec<_> = out
        .completions
        .iter()
        .filter(|c| c.request.capture_ms == 930.0)
        .collect();
    assert_eq!(c.len(), 1, "{:?}", out.completions);
    c[0].finished_ms
}

/// By hand: listing boundary 4 (even with the flag off, the plugin's configuration) continues
/// the caught inference on the CPU from it, steps 4..10, 1003..1009; leaving 4 out (even with
/// the flag on) restarts it from its input, steps 0..10, 1003..1013. The CPU's time differs by
/// the four steps run again (86 against 90 ms over the run), and so does the mean latency (by
/// 4 ms over 12 inferences). Without the field the flag decides, as before.
#[test]
fn a_listed_boundary_resumes_and_an_unlisted_one_restarts() {
    let resumed = run(&scenario(Some(vec![4])), false);
    let restarted = run(&scenario(Some(vec![0, 2, 6, 8, 10])), true);
    let (r, s) = (&resumed.report.dnns[0], &restarted.report.dnns[0]);
    assert_eq!((r.offload_switches, s.offload_switches), (1, 1));
    assert_eq!(
        (r.resumed_from_gpu, s.resumed_from_gpu),
        (1, 0),
        "{r:?} {s:?}"
    );
    assert!((caught_finish(&resumed) - 1009.0).abs() < 1e-9);
    assert!((caught_finish(&restarted) - 1013.0).abs() < 1e-9);
    assert!(
        (s.cpu_busy_ms - r.cpu_busy_ms - 4.0).abs() < 1e-9,
        "{r:?} {s:?}"
    );
    assert_eq!(r.completed, s.completed);
    let mean_gap = s.latency_ms.mean - r.latency_ms.mean;
    assert!(
        (mean_gap - 4.0 / r.completed as f64).abs() < 1e-9,
        "{r:?} {s:?}"
    );
    // Absent: every boundary as the flag says.
    assert_eq!(run(&scenario(None), true).report.dnns[0], *r);
    assert_eq!(run(&scenario(None), false).report.dnns[0], *s);
}

/// Per frame (how the plugin decides), the same way round: the listed boundary resumes, the
/// unlisted one restarts, and the restart costs the CPU more.
#[test]
fn per_frame_a_listed_boundary_resumes_too() {
    let per_frame = |steps| Scenario {
        decisions: Decisions::PerFrame,
        ..scenario(steps)
    };
    let all: Vec<usize> = (0..=10).collect();
    let resumed = run(&per_frame(Some(all)), false).report;
    let restarted = run(&per_frame(Some(vec![])), true).report;
    let (r, s) = (&resumed.dnns[0], &restarted.dnns[0]);
    assert!(r.resumed_from_gpu >= 1, "{r:?}");
    assert_eq!(s.resumed_from_gpu, 0, "{s:?}");
    assert!(s.cpu_busy_ms > r.cpu_busy_ms, "{r:?} {s:?}");
}

/// The field in a file: read, written back only when given, and a boundary past the op count
/// or a repeated one is an error naming it.
#[test]
fn resumable_steps_in_a_file() {
    let with = |list: &str| {
        LATE_ON_THE_GPU.replace(
            r#""deadline_ms": 100"#,
            &format!(r#""deadline_ms": 100, "resumable_steps": {list}"#),
        )
    };
    let sc = Scenario::from_json(&with("[0, 4, 10]")).unwrap();
    assert_eq!(sc.dnns[0].resumable_steps, Some(vec![0, 4, 10]));
    let text = serde_json::to_string(&sc).unwrap();
    assert_eq!(Scenario::from_json(&text).unwrap(), sc);
    let plain = Scenario::from_json(LATE_ON_THE_GPU).unwrap();
    assert_eq!(plain.dnns[0].resumable_steps, None);
    assert!(
        !serde_json::to_string(&plain)
            .unwrap()
            .contains("resumable_steps")
    );
    for (list, field) in [
        ("[4, 11]", "dnns[0].resumable_steps[1]"),
        ("[4, 4]", "dnns[0].resumable_steps[1]"),
    ] {
        let err = Scenario::from_json(&with(list)).unwrap_err().to_string();
        assert!(err.contains(field), "{list}: {err}");
    }
}
