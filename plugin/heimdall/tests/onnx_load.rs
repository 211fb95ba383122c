//! Loading the ONNX models: no layout ops remain after the passes, and a dynamic input without
//! a shape is a clear error. (Their outputs are checked by the golden suite, tests/goldens.rs.)

use heimdall::{LoadOptions, load};
use heimdall_testkit::onnx_model_path;

/// No runtime transposes remain around convolutions: the only layout ops of the imported
/// graphs are none at all (both models are convolutional end to end).
#[test]
fn no_transposes_in_the_models() {
    for (name, input, shape) in [
        ("multistyle26", "image", vec![1, 3, 64, 64]),
        ("PP-OCRv6_det_small", "x", vec![1, 3, 64, 64]),
    ] {
        let path = onnx_model_path(name).unwrap_or_else(|e| panic!("{e}"));
        let options = LoadOptions {
            passes: true,
            input_shapes: vec![(input.to_string(), shape)],
        };
        let g = load(&path, options).unwrap_or_else(|e| panic!("{e}")).graph;
        let transposes = g
            .ops
            .iter()
            .filter(|o| o.kind.name() == "TRANSPOSE")
            .count();
        assert_eq!(transposes, 0, "{name}: {transposes} transposes");
    }
}

/// A dynamic input without `--input-shape` is a clear error naming the input.
#[test]
fn dynamic_input_names_the_input() {
    let path = onnx_model_path("PP-OCRv6_det_small").unwrap_or_else(|e| panic!("{e}"));
    let err = load(&path, LoadOptions::default()).unwrap_err().to_string();
    assert!(
        err.contains("'x'") && err.contains("--input-shape x="),
        "{err}"
    );
}
