//! The ONNX models on the CPU backend against ONNX Runtime's outputs
//! (`scripts/make_onnx_goldens.py`: CPU provider, one thread) on a photograph and a rendered page
//! of text: relative L2 error `||ours - ref|| / ||ref||` <= 1e-4. Inputs and outputs are in the
//! ONNX layout (NCHW) and cross the IR boundary through [`heimdall::boundary`], as in the CLI.
//! The input size comes from the golden input (the models' spatial dimensions are dynamic).

use heimdall::assets::{goldens_dir, onnx_model_path};
use heimdall::npy::read_npy;
use heimdall::{LoadOptions, load, rel_l2};
use heimdall_cpu::{CpuModel, CpuOptions};

const TOLERANCE: f64 = 1e-4;

fn check(name: &str, image_input: &str, passes: bool) {
    let path = onnx_model_path(name).unwrap_or_else(|e| panic!("{e}"));
    let mut cases: Vec<_> = std::fs::read_dir(goldens_dir(name))
        .unwrap_or_else(|e| panic!("no goldens for {name}: {e}"))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert!(cases.len() >= 2, "{name}: expected two golden cases");
    for dir in cases {
        let mut inputs = Vec::new();
        while let Ok(t) = read_npy(dir.join(format!("input_{}.npy", inputs.len()))) {
            inputs.push(t);
        }
        let options = LoadOptions {
            passes,
            input_shapes: vec![(image_input.to_string(), inputs[0].shape.clone())],
        };
        let loaded = load(&path, options).unwrap_or_else(|e| panic!("{e}"));
        let mut model =
            CpuModel::compile(&loaded.graph, CpuOptions { threads: 2 }).expect("compile");
        for (i, t) in inputs.iter().enumerate() {
            assert_eq!(loaded.io.inputs[i].shape, t.shape, "input {i} shape");
            model
                .set_input(i, &loaded.io.inputs[i].to_ir(&t.data))
                .expect("input");
        }
        model.run().expect("run");
        for (i, io) in loaded.io.outputs.iter().enumerate() {
            let reference = read_npy(dir.join(format!("output_{i}.npy"))).expect("golden output");
            assert_eq!(io.shape, reference.shape, "output {i} shape");
            let ours = io.from_ir(model.output(i).expect("output"));
            let err = rel_l2(&ours, &reference.data);
            println!(
                "{name}/{}: output {i}: rel-L2 {err:.2e} (passes {passes})",
                dir.file_name().unwrap_or_default().to_string_lossy()
            );
            assert!(
                err <= TOLERANCE,
                "{name}/{}: rel-L2 {err:.3e} > {TOLERANCE}",
                dir.display()
            );
        }
    }
}

#[test]
fn multistyle26() {
    check("multistyle26", "image", true);
}

#[test]
fn multistyle26_without_passes() {
    check("multistyle26", "image", false);
}

#[test]
fn pp_ocrv6_det_small() {
    check("PP-OCRv6_det_small", "x", true);
}

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
