//! `heimdall simulate --replay` on arbitrary text: a scenario and a replay separated by a line
//! `---`. Both are parsed and the replay checked against the scenario; a valid pair whose run is
//! short (≤ 300 frames) is simulated per frame with the replay (its frame starts, submission
//! delays, presentations, readbacks per frame and per model, step times).
#![no_main]

use heimdall_coordinator::sim::{Decisions, Replay, Scenario, SimOptions, simulate_opts};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Some((scenario, replay)) = text.split_once("\n---\n") else {
        return;
    };
    let (Ok(scenario), Ok(replay)) = (Scenario::from_json(scenario), Replay::from_json(replay))
    else {
        return;
    };
    if replay.check(&scenario).is_err() {
        return;
    }
    let requests: usize = scenario
        .dnns
        .iter()
        .map(|d| d.request.times(scenario.duration_s * 1000.0).len())
        .sum();
    let ops: usize = scenario.dnns.iter().map(|d| d.gpu_op_ms.len()).sum();
    if scenario.duration_s * scenario.frame_rate > 300.0 || requests > 1000 || ops > 2000 {
        return;
    }
    let scenario = Scenario {
        decisions: Decisions::PerFrame,
        ..scenario
    };
    let opts = SimOptions {
        replay: Some(replay),
        ..SimOptions::default()
    };
    if let Ok(policy) = heimdall_coordinator::policy_by_name("max_total_utility") {
        let _ = simulate_opts(&scenario, policy, &opts, |_| {});
    }
});
