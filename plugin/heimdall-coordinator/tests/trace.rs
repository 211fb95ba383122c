//! The Chrome trace export of a short run is valid Chrome trace JSON.

use heimdall_coordinator::sim::{Scenario, simulate};
use serde_json::Value;

#[test]
fn trace_of_a_short_run_is_valid_chrome_trace_json() {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../assets/scenarios/immersive_shopping.json");
    let mut sc = Scenario::from_file(&path).unwrap();
    sc.duration_s = 2.0;
    let out = simulate(&sc, "max_total_utility", true).unwrap();
    let text = out.timeline.to_chrome_trace_string();
    let v: Value = serde_json::from_str(&text).expect("trace parses as JSON");
    let events = v["traceEvents"].as_array().expect("traceEvents array");
    assert!(events.len() > 100);
    let (mut spans, mut renders, mut chunks, mut cpu) = (0, 0, 0, 0);
    for e in events {
        let ph = e["ph"].as_str().expect("ph is a string");
        assert!(e["name"].is_string(), "{e}");
        assert!(e["pid"].is_u64() && e["tid"].is_u64(), "{e}");
        match ph {
            "M" => assert!(e["args"]["name"].is_string()),
            "X" => {
                let ts = e["ts"].as_f64().unwrap();
                let dur = e["dur"].as_f64().unwrap();
                assert!(ts >= 0.0 && dur >= 0.0 && ts <= 2.1e6, "{e}");
                spans += 1;
                match e["cat"].as_str().unwrap() {
                    "render" => renders += 1,
                    "chunk" => chunks += 1,
                    "cpu" => cpu += 1,
                    _ => {}
                }
            }
            "i" => {
                assert!(e["ts"].as_f64().is_some());
                assert!(["g", "p", "t"].contains(&e["s"].as_str().unwrap()));
            }
            other => panic!("unexpected phase {other}"),
        }
    }
    assert!(spans > 0 && chunks > 0 && cpu > 0);
    assert!(renders >= 59, "2 s at 30 fps: {renders} renders");
    // GPU spans on one queue never overlap (render and chunks share it).
    let mut gpu: Vec<(f64, f64)> = events
        .iter()
        .filter(|e| e["ph"] == "X" && (e["cat"] == "render" || e["cat"] == "chunk"))
        .map(|e| {
            (
                e["ts"].as_f64().unwrap(),
                e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap(),
            )
        })
        .collect();
    gpu.sort_by(|a, b| a.0.total_cmp(&b.0));
    for w in gpu.windows(2) {
        assert!(w[1].0 >= w[0].1 - 1e-3, "GPU spans overlap: {w:?}");
    }
}
