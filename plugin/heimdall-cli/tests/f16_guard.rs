//! The accuracy guard on the command line: `run` and `bench` with `--precision f16` on a small
//! ONNX model where exactly one op overflows f16 (`y = x·1024·1024·2⁻¹⁰·2⁻¹⁰·2`: the second
//! product exceeds 65504) switch exactly that op to f32 and say so on stderr; with `--no-guard`
//! the overflow shows in the output; a model that meets the bound is left as asked. Needs a GPU
//! adapter (lavapipe in CI); `HEIMDALL_SKIP_GPU=1` skips.

mod common;

use std::path::PathBuf;

use common::heimdall;
use heimdall::npy::{read_npy, write_npy};
use serde_json::Value;

/// `HEIMDALL_SKIP_GPU=1`: if so, says that the running test skips (counted by CI).
fn skip() -> bool {
    let test = std::thread::current().name().unwrap_or("?").to_string();
    heimdall_testkit::skip_gpu(&format!("f16_guard::{test}"))
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("heimdall-guard-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    fn file(&self, name: &str) -> String {
        self.0.join(name).to_str().expect("utf-8 path").to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const SCALES: [f32; 5] = [1024.0, 1024.0, 1.0 / 1024.0, 1.0 / 1024.0, 2.0];

/// The ONNX model `y = x·SCALES[0]·…·SCALES[4]` on a vector of 16: five `Mul` ops, the second of
/// which overflows f16 for |x| > 1/16 (the last one's input is f32 in every precision).
fn overflow_model() -> Vec<u8> {
    use heimdall::onnx::proto::{
        GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto,
    };
    use prost::Message;
    let vi = |name: &str| common::onnx_f32_vector(name, 16);
    let mut node = Vec::new();
    let mut initializer = Vec::new();
    for (k, s) in SCALES.into_iter().enumerate() {
        let input = if k == 0 { "x".into() } else { format!("t{k}") };
        let output = if k == SCALES.len() - 1 {
            "y".into()
        } else {
            format!("t{}", k + 1)
        };
        initializer.push(TensorProto {
            dims: vec![1],
            data_type: Some(1),
            float_data: vec![s],
            name: Some(format!("s{k}")),
            ..Default::default()
        });
        node.push(NodeProto {
            op_type: Some("Mul".into()),
            input: vec![input, format!("s{k}")],
            output: vec![output],
            ..Default::default()
        });
    }
    ModelProto {
        ir_version: Some(8),
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(13),
        }],
        graph: Some(GraphProto {
            node,
            initializer,
            input: vec![vi("x")],
            output: vec![vi("y")],
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec()
}

/// Values in ±[0.25, 1).
fn input() -> Vec<f32> {
    (0..16)
        .map(|k| {
            let v = 0.25 + 0.05 * k as f32;
            if k % 2 == 0 { v } else { -v }
        })
        .collect()
}

fn rel_l2(a: &[f32], b: &[f32]) -> f64 {
    let num: f64 = a.iter().zip(b).map(|(x, y)| f64::from(x - y).powi(2)).sum();
    let den: f64 = b.iter().map(|y| f64::from(*y).powi(2)).sum();
    let e = (num / den).sqrt();
    if e.is_nan() { f64::INFINITY } else { e }
}

fn run_f16(dir: &TempDir, extra: &[&str]) -> (std::process::Output, Vec<f32>) {
    let out_dir = dir.file(&format!("out{}", extra.len()));
    let model = dir.file("overflow.onnx");
    let x = dir.file("x.npy");
    let mut args = vec![
        "run",
        model.as_str(),
        "--input",
        x.as_str(),
        "--out",
        out_dir.as_str(),
        "--backend",
        "gpu",
        "--precision",
        "f16",
    ];
    args.extend_from_slice(extra);
    let out = heimdall(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let y = read_npy(PathBuf::from(&out_dir).join("output_0.npy"))
        .expect("output")
        .data;
    (out, y)
}

#[test]
fn run_switches_the_overflowing_op_to_f32() {
    if skip() {
        return;
    }
    let dir = TempDir::new("run");
    std::fs::write(dir.file("overflow.onnx"), overflow_model()).expect("model");
    let x = input();
    write_npy(dir.file("x.npy"), &[16], &x).expect("npy");
    let expected: Vec<f32> = x.iter().map(|v| v * 2.0).collect();

    let (out, y) = run_f16(&dir, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("f16 guard") && err.contains("ops 1..2 in f32"),
        "{err}"
    );
    assert!(rel_l2(&y, &expected) <= 1e-3, "{y:?}");

    let (out, y) = run_f16(&dir, &["--no-guard"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("f16 guard"), "{err}");
    assert!(
        rel_l2(&y, &expected) > 1e-2,
        "no overflow without the guard: {y:?}"
    );
}

#[test]
fn bench_reports_the_guard_decision() {
    if skip() {
        return;
    }
    let dir = TempDir::new("bench");
    let model = dir.file("overflow.onnx");
    std::fs::write(&model, overflow_model()).expect("model");
    let x = dir.file("x.npy");
    write_npy(&x, &[16], &input()).expect("npy");
    let bench = |extra: &[&str]| -> Value {
        let mut args = vec![
            "bench",
            model.as_str(),
            "--backend",
            "gpu",
            "--precision",
            "f16",
            "--runs",
            "2",
            "--warmup",
            "0",
            "--json",
        ];
        args.extend_from_slice(extra);
        let out = heimdall(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("json")
    };
    let doc = bench(&["--calibration", x.as_str()]);
    let g = &doc["guard"];
    assert_eq!(g["f32_ranges"], serde_json::json!([[1, 2]]), "{doc:#}");
    assert_eq!(g["passed"], true);
    assert_eq!(g["whole_f32"], false);
    assert!(
        g["errors_before"][0].is_null(),
        "overflow is an infinite error: {g}"
    );
    assert!(g["errors_after"][0].as_f64().expect("error") <= 1e-3);
    let doc = bench(&["--no-guard"]);
    assert!(doc.get("guard").is_none(), "{doc:#}");
}

#[test]
fn a_model_that_meets_the_bound_runs_as_asked() {
    if skip() {
        return;
    }
    let model = heimdall_testkit::model_path("face_detection_short_range")
        .unwrap_or_else(|e| panic!("{e}"));
    let out = heimdall(&[
        "bench",
        model.to_str().unwrap(),
        "--backend",
        "gpu",
        "--precision",
        "f16",
        "--runs",
        "2",
        "--warmup",
        "0",
        "--input-range",
        "-1,1",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("json");
    let g = &doc["guard"];
    assert_eq!(g["f32_ranges"], serde_json::json!([]), "{doc:#}");
    assert_eq!(g["passed"], true);
    assert_eq!(g["trials"], 0);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("f16 as asked"), "{err}");
}
