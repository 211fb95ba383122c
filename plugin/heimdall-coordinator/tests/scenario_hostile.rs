//! Hostile scenario files (found by `cargo fuzz run scenario`, docs/fuzzing.md): values that
//! validated but made `heimdall simulate` allocate without bound are typed errors naming the
//! field.

use heimdall_coordinator::sim::{Scenario, ScenarioError};

/// A valid one-DNN scenario with `top` spliced into the top level and `request` as the DNN's
/// request pattern.
fn scenario(top: &str, request: &str) -> String {
    format!(
        r#"{{ {top}, "render_ms": 0, "budget_margin_ms": 0,
             "dnns": [{{ "name": "a", "gpu_op_ms": [1], "cpu_op_ms": [1],
                         "request": {request} }}] }}"#
    )
}

fn invalid_field(text: &str) -> String {
    match Scenario::from_json(text) {
        Err(ScenarioError::Invalid { field, .. }) => field,
        other => panic!("expected an invalid field, got {other:?}"),
    }
}

#[test]
fn the_well_formed_base_is_valid() {
    let ok = scenario(
        r#""frame_rate": 30, "duration_s": 1, "cpu_workers": 2"#,
        r#"{"period_ms": 33}"#,
    );
    Scenario::from_json(&ok).expect("valid");
}

#[test]
fn a_huge_frame_rate_is_an_error() {
    // 10^12 Hz for an hour: 3.6e15 vsync events queued up front.
    let text = scenario(
        r#""frame_rate": 1e12, "duration_s": 3600, "cpu_workers": 1"#,
        r#"{"events_ms": [0]}"#,
    );
    assert_eq!(invalid_field(&text), "frame_rate");
}

#[test]
fn a_tiny_request_period_is_an_error() {
    // A request every 1e-9 ms for 10 s: 10^13 requests (and `t += p` stalls once t >> p).
    let text = scenario(
        r#""frame_rate": 30, "duration_s": 10, "cpu_workers": 1"#,
        r#"{"period_ms": 1e-9}"#,
    );
    assert_eq!(invalid_field(&text), "dnns[0].request.period_ms");
}

#[test]
fn a_huge_worker_count_is_an_error() {
    // One slot per worker: 2^60 workers is an allocation failure, not a typed error.
    let text = scenario(
        r#""frame_rate": 30, "duration_s": 1, "cpu_workers": 1152921504606846976"#,
        r#"{"period_ms": 33}"#,
    );
    assert_eq!(invalid_field(&text), "cpu_workers");
}
