//! `heimdall bench MODEL --conv-cache`: the face detector on a still scene with noise (GPU and
//! CPU), a sequence of `.npy` inputs played twice, and the error cases (missing file, wrong
//! shape, a model without an image input, no inputs at all).

mod common;

use std::path::PathBuf;

use serde_json::Value;

use common::{heimdall, root};

/// The keys every `--json` report has, beside others.
const KEYS: [&str; 4] = [
    "median_ms_uncached",
    "median_ms_cached",
    "hit_rate",
    "max_rel_l2",
];

fn face_detector() -> String {
    root()
        .join("assets/models/face_detection_short_range.tflite")
        .to_string_lossy()
        .into_owned()
}

/// Runs `bench` with `args` and parses its JSON; panics with stderr on failure.
fn bench_json(args: &[&str]) -> Value {
    let out = heimdall(args);
    assert!(
        out.status.success(),
        "heimdall {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// Runs `bench` with `args`, expects a failure and returns stderr.
fn bench_error(args: &[&str]) -> String {
    let out = heimdall(args);
    assert!(!out.status.success(), "heimdall {args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn check_report(doc: &Value, runs: u64) {
    for k in KEYS {
        assert!(doc[k].is_number(), "{k} missing or not a number: {doc}");
    }
    let hit = doc["hit_rate"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&hit), "hit rate {hit}");
    // Where everything is reused, a cached output is an earlier frame's uncached one: it can
    // differ from the current frame's by as much as the uncached frames differ among themselves.
    let err = doc["max_rel_l2"].as_f64().unwrap();
    let own = doc["max_rel_l2_between_frames"].as_f64().unwrap();
    assert!(
        err.is_finite() && err <= own * 1.001 + 1e-6,
        "max rel L2 {err} > {own}"
    );
    assert!(doc["median_ms_uncached"].as_f64().unwrap() > 0.0);
    assert!(doc["median_ms_cached"].as_f64().unwrap() > 0.0);
    assert_eq!(doc["runs"].as_u64(), Some(runs));
    assert_eq!(
        doc["per_input"].as_array().map(Vec::len),
        Some(runs as usize)
    );
    assert!(doc["timing"].is_string());
    assert!(!doc["cached_ops"].as_array().expect("cached_ops").is_empty());
}

fn still_scene(backend: &str) -> Value {
    let model = face_detector();
    let image = root().join("assets/images/astronaut.png");
    bench_json(&[
        "bench",
        &model,
        "--backend",
        backend,
        "--conv-cache",
        "--still",
        image.to_str().unwrap(),
        "--noise",
        "2",
        "--frames",
        "6",
        "--input-range",
        "-1,1",
        "--decode",
        "faces",
        "--json",
    ])
}

/// The face the detector finds is the same with the cache (the astronaut's portrait).
fn check_decoded(doc: &Value) {
    let d = &doc["decoded"];
    assert_eq!(d["kind"], "faces", "{doc}");
    assert_eq!(d["count_mismatches"], 0, "{doc}");
    assert!(d["min_iou"].as_f64().unwrap() > 0.9, "{doc}");
}

#[test]
fn gpu_still_scene_reports_hit_rate_and_error() {
    if heimdall_testkit::skip_gpu("bench_conv_cache::gpu_still_scene_reports_hit_rate_and_error") {
        return;
    }
    let doc = still_scene("gpu");
    check_report(&doc, 6);
    assert_eq!(doc["backend"], "gpu");
    let timing = doc["timing"].as_str().unwrap();
    assert!(
        timing == "gpu_timestamps" || timing == "wall_run_readback",
        "{timing}"
    );
    check_decoded(&doc);
}

#[test]
fn cpu_still_scene_reports_hit_rate_and_error() {
    let doc = still_scene("cpu");
    check_report(&doc, 6);
    assert_eq!(doc["backend"], "cpu");
    assert_eq!(doc["timing"], "wall_run");
    check_decoded(&doc);
    // A still scene with noise of 2/255: most blocks stay clean.
    assert!(doc["hit_rate"].as_f64().unwrap() > 0.5, "{doc}");
}

/// A temporary directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("heimdall-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    fn file(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A smooth 128x128 RGB image in [0, 1]; `patch` brightens the top-left 32x32 corner.
fn frame(patch: bool) -> Vec<f32> {
    let mut x = Vec::with_capacity(128 * 128 * 3);
    for y in 0..128 {
        for xx in 0..128 {
            for c in 0..3 {
                let mut v = (y as f32 / 127.0) * 0.5 + (xx as f32 / 127.0) * 0.3 + c as f32 * 0.05;
                if patch && y < 32 && xx < 32 {
                    v = 1.0 - v * 0.5;
                }
                x.push(v);
            }
        }
    }
    x
}

#[test]
fn npy_sequence_played_twice() {
    let dir = TempDir::new("bench-cache-npy");
    let shape = [1, 128, 128, 3];
    let (a, b) = (dir.file("a.npy"), dir.file("b.npy"));
    heimdall::npy::write_npy(&a, &shape, &frame(false)).expect("write");
    heimdall::npy::write_npy(&b, &shape, &frame(true)).expect("write");
    let model = face_detector();
    let doc = bench_json(&[
        "bench",
        &model,
        "--conv-cache",
        "--inputs",
        &a,
        &a,
        &b,
        "--repeat",
        "2",
        "--cache-expiry-ms",
        "0",
        "--cache-range",
        "0,1",
        "--json",
    ]);
    check_report(&doc, 6);
    assert_eq!(doc["cache"]["range"], serde_json::json!([0.0, 1.0]));
    let runs = doc["per_input"].as_array().unwrap();
    let hit = |k: usize| runs[k]["hit_rate"].as_f64().unwrap();
    // The same input as the first full run: nothing recomputed, the same outputs.
    assert_eq!(hit(0), 1.0);
    assert_eq!(hit(1), 1.0);
    assert!(runs[1]["rel_l2"].as_f64().unwrap() < 1e-5, "{}", runs[1]);
    // The corner changed: some tiles recomputed, not all.
    assert!(hit(2) > 0.0 && hit(2) < 1.0, "{}", runs[2]);
    // Back to the first input: the corner again.
    assert!(hit(3) < 1.0, "{}", runs[3]);
    assert_eq!(runs[5]["input"], 2);
    assert_eq!(runs[5]["repeat"], 1);
}

#[test]
fn errors_are_clear() {
    let model = face_detector();
    // A missing image.
    let err = bench_error(&["bench", &model, "--conv-cache", "--still", "missing.jpg"]);
    assert!(
        err.contains("--still") && err.contains("missing.jpg"),
        "{err}"
    );
    // No inputs.
    let err = bench_error(&["bench", &model, "--conv-cache"]);
    assert!(err.contains("--inputs, --still or --clip"), "{err}");
    // An input of the wrong shape.
    let dir = TempDir::new("bench-cache-errors");
    let small = dir.file("small.npy");
    heimdall::npy::write_npy(&small, &[1, 64, 64, 3], &vec![0.5; 64 * 64 * 3]).expect("write");
    let err = bench_error(&["bench", &model, "--conv-cache", "--inputs", &small]);
    assert!(
        err.contains("[1, 128, 128, 3]") && err.contains("[1, 64, 64, 3]"),
        "{err}"
    );
    // A model whose input is not an image.
    let onnx = dir.file("vector.onnx");
    std::fs::write(&onnx, vector_model()).expect("write model");
    let err = bench_error(&["bench", &onnx, "--conv-cache", "--inputs", &small]);
    assert!(
        err.contains("needs a model whose first input is an image"),
        "{err}"
    );
    // Cache settings out of range.
    let err = bench_error(&[
        "bench",
        &model,
        "--conv-cache",
        "--inputs",
        &small,
        "--cache-grid",
        "0x8",
    ]);
    assert!(err.contains("--cache-grid"), "{err}");
}

/// An ONNX model `y = Relu(x)` on a vector of 4.
fn vector_model() -> Vec<u8> {
    use heimdall::onnx::proto::{GraphProto, ModelProto, NodeProto, OperatorSetIdProto};
    use prost::Message;
    let vi = |name: &str| common::onnx_f32_vector(name, 4);
    ModelProto {
        ir_version: Some(8),
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(13),
        }],
        graph: Some(GraphProto {
            node: vec![NodeProto {
                op_type: Some("Relu".into()),
                input: vec!["x".into()],
                output: vec!["y".into()],
                ..Default::default()
            }],
            input: vec![vi("x")],
            output: vec![vi("y")],
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec()
}
