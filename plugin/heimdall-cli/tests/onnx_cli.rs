//! `heimdall` on ONNX models: a dynamic input without `--input-shape` is a clear error naming
//! it; `run` reads and writes `.npy` in the model's own NCHW layout (transposed at the boundary
//! only) and matches ONNX Runtime's golden; `inspect` lists ops and unsupported op types.

mod common;

use common::heimdall;
use heimdall::npy::read_npy;
use heimdall_testkit::{goldens_dir, onnx_model_path};

#[test]
fn dynamic_input_needs_input_shape() {
    let path = onnx_model_path("multistyle26").unwrap_or_else(|e| panic!("{e}"));
    let out = heimdall(&["inspect", path.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("'image'") && err.contains("--input-shape image="),
        "{err}"
    );
    let out = heimdall(&[
        "inspect",
        path.to_str().unwrap(),
        "--input-shape",
        "image=1x3x32x32",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(doc["file_ops"]["total"], 709);
}

#[test]
fn run_uses_nchw_at_the_boundary() {
    let path = onnx_model_path("PP-OCRv6_det_small").unwrap_or_else(|e| panic!("{e}"));
    let case = goldens_dir("PP-OCRv6_det_small").join("text_page");
    let out_dir = std::env::temp_dir().join(format!("heimdall-onnx-cli-{}", std::process::id()));
    let out = heimdall(&[
        "run",
        path.to_str().unwrap(),
        "--input",
        case.join("input_0.npy").to_str().unwrap(),
        "--input-shape",
        "x=1x3x320x320",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ours = read_npy(out_dir.join("output_0.npy")).expect("output");
    let reference = read_npy(case.join("output_0.npy")).expect("golden");
    assert_eq!(ours.shape, vec![1, 1, 320, 320]);
    let err = heimdall_testkit::rel_l2(&ours.data, &reference.data);
    assert!(err <= 1e-4, "rel-L2 {err}");
    let _ = std::fs::remove_dir_all(out_dir);
}

/// A model with ops heimdall does not map: `inspect` names them with their counts before the
/// import error.
#[test]
fn inspect_lists_unsupported_ops() {
    use heimdall::onnx::proto::{GraphProto, ModelProto, NodeProto, OperatorSetIdProto};
    use prost::Message;
    let vi = |name: &str| common::onnx_f32_vector(name, 4);
    let node = |op: &str, i: &str, o: &str| NodeProto {
        op_type: Some(op.into()),
        input: vec![i.into()],
        output: vec![o.into()],
        ..Default::default()
    };
    let model = ModelProto {
        ir_version: Some(8),
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(13),
        }],
        graph: Some(GraphProto {
            node: vec![
                node("Relu", "x", "a"),
                node("Sin", "a", "b"),
                node("Sin", "b", "c"),
                node("Cos", "c", "y"),
            ],
            input: vec![vi("x")],
            output: vec![vi("y")],
            ..Default::default()
        }),
        ..Default::default()
    };
    let path =
        std::env::temp_dir().join(format!("heimdall-unsupported-{}.onnx", std::process::id()));
    std::fs::write(&path, model.encode_to_vec()).expect("write model");
    let out = heimdall(&["inspect", path.to_str().unwrap()]);
    let _ = std::fs::remove_file(&path);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unsupported ops (by name and count): Sin 2, Cos 1"),
        "{err}"
    );
    assert!(err.contains("node 1") && err.contains("Sin"), "{err}");
}
