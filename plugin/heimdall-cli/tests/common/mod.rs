//! Shared by the CLI tests: running the binary, the references, the backends under test, small
//! ONNX models built in the test.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

/// The workspace root.
pub fn root() -> PathBuf {
    heimdall_testkit::workspace_root()
}

/// Runs `heimdall` with `args`, finding the workspace's `assets/` and using the tests' model
/// cache (`$HEIMDALL_CACHE_DIR` or `.cache/`).
pub fn heimdall(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_heimdall"))
        .args(args)
        .env("BEVY_ASSET_ROOT", root())
        .env(
            "HEIMDALL_CACHE_DIR",
            heimdall_testkit::ModelCache::workspace().dir,
        )
        .env(
            "XDG_RUNTIME_DIR",
            std::env::var("XDG_RUNTIME_DIR").unwrap_or("/tmp".into()),
        )
        .output()
        .expect("run heimdall")
}

/// `heimdall detect KIND IMAGE --json` plus `extra`, parsed; panics with stderr on failure.
pub fn detect(kind: &str, image: &str, extra: &[&str]) -> Value {
    let path = root().join("assets/images").join(image);
    let mut args = vec!["detect", kind, path.to_str().unwrap(), "--json"];
    args.extend_from_slice(extra);
    let out = heimdall(&args);
    assert!(
        out.status.success(),
        "heimdall {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// A reference file of `assets/references/`.
pub fn reference(kind: &str) -> Value {
    let path = root()
        .join("assets/references")
        .join(format!("{kind}.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("reference")).expect("JSON")
}

/// The backends every comparison runs on: CPU, GPU f32, GPU f16.
pub const BACKENDS: [(&str, &[&str]); 3] = [
    ("cpu", &["--backend", "cpu"]),
    ("gpu f32", &["--backend", "gpu", "--precision", "f32"]),
    ("gpu f16", &["--backend", "gpu", "--precision", "f16"]),
];

/// A JSON array of numbers as f32.
pub fn floats(v: &Value) -> Vec<f32> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number") as f32)
        .collect()
}

/// IoU of two `[xmin, ymin, xmax, ymax]` boxes.
pub fn box_iou(a: &[f32], b: &[f32]) -> f32 {
    let iw = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
    let ih = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
    let inter = iw * ih;
    let union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
    if union > 0.0 { inter / union } else { 0.0 }
}

/// An ONNX graph input or output `name`: a float vector of `len` values.
pub fn onnx_f32_vector(name: &str, len: i64) -> heimdall::onnx::proto::ValueInfoProto {
    use heimdall::onnx::proto::{
        TensorShapeProto, TypeProto, ValueInfoProto, tensor_shape_proto::Dimension,
        tensor_shape_proto::dimension, type_proto,
    };
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            denotation: None,
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: Some(1),
                shape: Some(TensorShapeProto {
                    dim: vec![Dimension {
                        denotation: None,
                        value: Some(dimension::Value::DimValue(len)),
                    }],
                }),
            })),
        }),
        ..Default::default()
    }
}
