//! The simulator and the Bevy plugin's CPU lane (issue #34): the plugin hands CPU work out the
//! moment a worker finishes only while its render world lends the coordinator to the workers,
//! from the end of its frame (`RenderSystems::Cleanup`) to its next preparation; a worker that
//! finishes while the render thread holds it (its preparation, the scene, the present) waits for
//! the lend or the next frame's decision. The scenario's `cpu_lend_ms` is that part of the frame.
//! Where CPU slots are few (a 4-core host's two, or one) the wait is much of a DNN's latency.
//! And the plugin's longest piece of continuous CPU work (`cpu_chunk_ms`).

use heimdall_coordinator::policy_by_name;
use heimdall_coordinator::sim::{Scenario, SimOptions, SimOutput, simulate_opts};

/// 60 Hz with a 20 ms scene (the frames leave the GPU no budget: both DNNs run on the CPU), one
/// CPU slot, CPU work handed out as workers finish; two DNNs of 4 ms on the CPU, each asked 1 ms
/// into every frame. `extra` adds top-level fields.
fn two_on_one_slot(extra: &str) -> Scenario {
    let events: Vec<String> = (0..60)
        .map(|i| format!("{:.3}", 1.0 + f64::from(i) * 1000.0 / 60.0))
        .collect();
    let events = events.join(", ");
    Scenario::from_json(&format!(
        r#"{{"frame_rate": 60, "render_ms": 20, "duration_s": 1, "cpu_workers": 1,
            "decisions": "per_frame", "cpu_dispatch_on_completion": true {extra},
            "dnns": [{{"name": "a", "gpu_op_ms": [1, 1], "cpu_op_ms": [2, 2],
                       "request": {{"events_ms": [{events}]}}}},
                     {{"name": "b", "gpu_op_ms": [1, 1], "cpu_op_ms": [2, 2],
                       "request": {{"events_ms": [{events}]}}}}]}}"#
    ))
    .unwrap()
}

fn run(sc: &Scenario, opts: &SimOptions) -> SimOutput {
    simulate_opts(
        sc,
        policy_by_name("max_total_utility").unwrap(),
        opts,
        |_| {},
    )
    .unwrap()
}

fn latencies(out: &SimOutput) -> Vec<f64> {
    out.completions
        .iter()
        .map(|c| c.finished_ms - c.admitted_ms)
        .collect()
}

const P: f64 = 1000.0 / 60.0;

/// Lent the whole frame (no `cpu_lend_ms`), the second DNN takes the slot when the first ends
/// (4 ms, then 8 ms): both run every frame. Lent only the last 2 ms before each decision, the
/// second waits for the lend (16.67 - 2 ms) and ends at 18.67 ms, after the next decision: each
/// DNN runs every other frame.
#[test]
fn a_worker_that_finishes_while_the_render_world_holds_the_coordinator_waits_for_the_lend() {
    let always = run(&two_on_one_slot(""), &SimOptions::default());
    assert!(
        always.completions.len() >= 110,
        "{}",
        always.completions.len()
    );
    assert!(latencies(&always).iter().all(|&l| l <= 8.0 + 1e-6));
    let lent = run(
        &two_on_one_slot(r#", "cpu_lend_ms": 2"#),
        &SimOptions::default(),
    );
    let n = lent.completions.len();
    assert!((55..=62).contains(&n), "{n}");
    let waited = latencies(&lent)
        .iter()
        .filter(|&&l| (l - (P - 2.0 + 4.0)).abs() < 1e-6)
        .count();
    assert!(waited * 2 >= n - 2, "{:?}", latencies(&lent));
}

/// A lend at least as long as the frame is the whole frame: as without it.
#[test]
fn a_lend_of_a_whole_frame_changes_nothing() {
    let always = run(&two_on_one_slot(""), &SimOptions::default());
    let whole = run(
        &two_on_one_slot(r#", "cpu_lend_ms": 17"#),
        &SimOptions::default(),
    );
    assert_eq!(latencies(&always), latencies(&whole));
}

/// A simulated run records how it handed CPU work out (`cpu_dispatch_on_completion`,
/// `cpu_lend_ms`), and its export replayed reproduces it; a negative lend is refused.
#[test]
fn the_lend_is_recorded_and_checked() {
    let sc = two_on_one_slot(r#", "cpu_lend_ms": 2"#);
    let out = run(
        &sc,
        &SimOptions {
            record_run: true,
            ..SimOptions::default()
        },
    );
    let (scenario, replay) = out.recorded.clone().expect("recorded");
    assert!(scenario.cpu_dispatch_on_completion);
    assert_eq!(scenario.cpu_lend_ms, Some(2.0));
    let again = run(
        &scenario,
        &SimOptions {
            replay: Some(replay),
            ..SimOptions::default()
        },
    );
    let (a, b) = (latencies(&out), latencies(&again));
    assert_eq!(a.len(), b.len());
    assert!(a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-6));
    let bad = serde_json::to_string(&sc)
        .unwrap()
        .replace(r#""cpu_lend_ms":2.0"#, r#""cpu_lend_ms":-1.0"#);
    let err = Scenario::from_json(&bad).unwrap_err().to_string();
    assert!(err.contains("`cpu_lend_ms`"), "{err}");
}

/// One CPU slot and no GPU budget (a 20 ms scene at 60 Hz): "big", 40 ms of CPU work every
/// 50 ms, is cut into pieces when it takes the last slot, so that the on-demand "tap" (1 ms, asked
/// 5 ms into each of big's inferences) waits at most one piece. `chunk` is the scenario's
/// `cpu_chunk_ms` field (empty: none).
fn big_and_tap(chunk: &str) -> Scenario {
    let taps: Vec<String> = (0..19).map(|i| format!("{}", 105 + 100 * i)).collect();
    Scenario::from_json(&format!(
        r#"{{"frame_rate": 60, "render_ms": 20, "duration_s": 2, "cpu_workers": 1 {chunk},
            "dnns": [{{"name": "big", "gpu_op_ms": [1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
                       "cpu_op_ms": [4, 4, 4, 4, 4, 4, 4, 4, 4, 4],
                       "request": {{"period_ms": 50}}}},
                     {{"name": "tap", "gpu_op_ms": [1], "cpu_op_ms": [1], "on_demand": true,
                       "request": {{"events_ms": [{}]}}}}]}}"#,
        taps.join(", ")
    ))
    .unwrap()
}

/// The tap's latencies, ms.
fn tap_latencies(out: &SimOutput) -> Vec<f64> {
    out.completions
        .iter()
        .filter(|c| c.model.0 == 1)
        .map(|c| c.finished_ms - c.admitted_ms)
        .collect()
}

/// The plugin cuts continuous CPU work into pieces of 0.75 of a frame (12.5 ms at 60 Hz), not the
/// coordinator's default 8 ms: the scenario's `cpu_chunk_ms` sets it. By default big runs in
/// pieces of two 4 ms steps (100-108 ms...): the tap at 105 ms runs at 108, 4 ms after it came;
/// with 12.5 ms pieces of three steps (100-112 ms) it runs at 112, 8 ms after. A simulated run
/// records the value its coordinator had.
#[test]
fn the_cpu_piece_is_the_scenarios() {
    let by_default = run(&big_and_tap(""), &SimOptions::default());
    let t = tap_latencies(&by_default);
    assert_eq!(t.len(), 19);
    assert!(t.iter().all(|&l| (l - 4.0).abs() < 1e-6), "{t:?}");
    let plugin = run(
        &big_and_tap(r#", "cpu_chunk_ms": 12.5"#),
        &SimOptions {
            record_run: true,
            ..SimOptions::default()
        },
    );
    let t = tap_latencies(&plugin);
    assert_eq!(t.len(), 19);
    assert!(t.iter().all(|&l| (l - 8.0).abs() < 1e-6), "{t:?}");
    let (scenario, _) = plugin.recorded.expect("recorded");
    assert_eq!(scenario.cpu_chunk_ms, Some(12.5));
}
