//! A DNN the plan gives (almost) nothing is held to its floor, not let loose (issue 34, the
//! 4-core workspace at 90 Hz).
//!
//! Recorded on the H200 with `taskset -c 0-3` (one CPU slot, no GPU budget): text detection takes
//! 374–550 ms on one thread against a 200 ms deadline, palm detection (on demand) fills the slot
//! by itself, the hands ask every frame. The plan granted text 0 Hz (`deadline_unreachable`) and
//! the hands 0 Hz (`no_gpu_budget_cpu_full`), and the coordinator enforced neither: a grant of
//! zero, or a shortfall that is not a capacity cut, set no interval between admissions. Text then
//! ran as fast as it could, 1.5 Hz, ~90 % of the slot, and the others got 3–5 Hz with more than
//! half their deadlines missed. A cut is now enforced never below the floor (a tenth of the
//! request), also for a DNN whose deadline nothing meets.
//!
//! Checked to fail without the change (`coordinator/placing.rs` as before): text 2.3 Hz, palm
//! 4.7 Hz with 49 % misses, hands 0.2 Hz; with it text 1.0, palm 32 Hz (3 % misses), hands 5.9 Hz.

use heimdall_coordinator::sim::{Scenario, simulate};

/// 60 Hz, a 17 ms scene (no GPU budget), one CPU slot, per frame with CPU work handed out as the
/// slot frees, 10 s. Text: 40 ops, 400 ms on the CPU, every 100 ms, deadline 200. Palm: on
/// demand every frame, 14 ms, deadline 100. Hands: every frame, 5 ms, deadline 50.
fn one_slot() -> Scenario {
    let dnn = |name: &str, n: usize, cpu: f64, gpu: f64, period: f64, deadline: f64| {
        serde_json::json!({
            "name": name,
            "gpu_op_ms": vec![gpu / n as f64; n],
            "cpu_op_ms": vec![cpu / n as f64; n],
            "request": { "period_ms": period, "start_ms": 0.5 },
            "deadline_ms": deadline,
        })
    };
    let frame = 1000.0 / 60.0;
    let mut palm = dnn("palm", 20, 14.0, 0.8, frame, 100.0);
    palm["on_demand"] = true.into();
    let s = serde_json::json!({
        "frame_rate": 60,
        "render_ms": 17.0,
        "duration_s": 10.0,
        "cpu_workers": 1,
        "chunk_overhead_ms": 0.05,
        "budget_margin_ms": 1.0,
        "relaxation_ms": 0.5,
        "decisions": "per_frame",
        "cpu_dispatch_on_completion": true,
        "dnns": [dnn("text", 40, 400.0, 4.0, 100.0, 200.0), palm, dnn("hands", 20, 5.0, 0.5, frame, 50.0)],
    });
    Scenario::from_json(&s.to_string()).unwrap()
}

#[test]
fn a_dnn_granted_nothing_runs_at_its_floor_and_the_others_get_the_slot() {
    let sc = one_slot();
    let r = simulate(&sc, "max_total_utility", false).unwrap().report;
    let by = |name: &str| r.dnns.iter().find(|d| d.name == name).unwrap();
    let (text, palm, hands) = (by("text"), by("palm"), by("hands"));
    let msg = format!("{r:#?}");
    // Text at its floor: a tenth of 10 Hz (and its deadline, shorter than its 400 ms, missed).
    assert!(
        text.rate_hz > 0.8 && text.rate_hz <= 1.1,
        "text {} Hz: {msg}",
        text.rate_hz
    );
    // What text no longer takes goes to the others: palm (on demand, never cut) at a third of
    // its 60 Hz or more with few misses, the hands near their 6 Hz floor.
    assert!(palm.rate_hz >= 20.0, "palm {} Hz: {msg}", palm.rate_hz);
    assert!(
        palm.deadline_miss_rate <= 0.1,
        "palm misses {}: {msg}",
        palm.deadline_miss_rate
    );
    assert!(hands.rate_hz >= 4.0, "hands {} Hz: {msg}", hands.rate_hz);
}
