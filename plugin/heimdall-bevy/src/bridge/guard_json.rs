//! The accuracy guard's decision as JSON: the render world stores it between runs
//! (`render/guard_store.rs`) and the main world reports it (`stats.json`'s `guard`).

use heimdall_gpu::Precision;
use heimdall_gpu::guard::GuardDecision;
use serde_json::{Value, json};

/// A precision's name in the JSON (`F16`, `F32`, ...).
pub(crate) fn precision_name(p: Precision) -> String {
    format!("{p:?}")
}

/// Errors as JSON (infinity, a NaN output, as null).
fn errors_json(v: &[f64]) -> Value {
    json!(
        v.iter()
            .map(|e| e.is_finite().then_some(*e))
            .collect::<Vec<_>>()
    )
}

/// The decision as JSON (the store's and `stats.json`'s).
pub(crate) fn decision_json(d: &GuardDecision) -> Value {
    let ranges: Vec<[usize; 2]> = d.f32_ranges.iter().map(|r| [r.start, r.end]).collect();
    let overrides: Vec<Value> = d
        .overrides
        .iter()
        .map(|(r, p)| json!([r.start, r.end, precision_name(*p)]))
        .collect();
    json!({
        "summary": d.summary(), "precision": precision_name(d.precision),
        "f32_ranges": ranges, "overrides": overrides, "ops": d.ops, "bounds": d.bounds,
        "errors_before": errors_json(&d.errors_before), "errors_after": errors_json(&d.errors_after),
        "whole_f32": d.whole_f32, "passed": d.passed, "trials": d.trials,
        "cap_reached": d.cap_reached, "time_ms": d.time.as_secs_f64() * 1e3,
    })
}
