//! The scenario parser of `heimdall simulate` (JSON, then validation) on arbitrary text; a
//! valid scenario's derived values are computed, and a short one (≤ 300 frames) is simulated.
#![no_main]

use heimdall_coordinator::sim::{Scenario, simulate};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(scenario) = Scenario::from_json(text) else {
        return;
    };
    let _ = scenario.budget();
    let _ = scenario.priority_dnn();
    let end_ms = scenario.duration_s * 1000.0;
    let mut requests = 0;
    for d in &scenario.dnns {
        let _ = d.spec();
        requests += d.request.times(end_ms).len();
        let _ = scenario.only(&d.name);
    }
    let ops: usize = scenario.dnns.iter().map(|d| d.gpu_op_ms.len()).sum();
    if scenario.duration_s * scenario.frame_rate <= 300.0 && requests <= 1000 && ops <= 2000 {
        let _ = simulate(&scenario, "max_total_utility", false);
    }
});
