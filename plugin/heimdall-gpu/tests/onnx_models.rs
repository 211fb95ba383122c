//! The two ONNX models on the GPU backend against ONNX Runtime's outputs
//! (`assets/goldens/<model>/<case>/`, from `scripts/make_onnx_goldens.py`: CPU provider, one
//! thread) on a photograph and a rendered page of text, at the goldens' input sizes
//! (multistyle26 1x3x256x256, PP-OCRv6_det_small 1x3x320x320). Every step must be a GPU step
//! (no CPU fallback), no wgpu error may be raised, and the relative L2 error
//! `||ours - ref|| / ||ref||` must be ≤ 1e-3 in f32, and within [`f16_tolerance`] in f16
//! (native where the device has `shader-f16`, else packed) and packed f16. Inputs and outputs are
//! in the ONNX layout (NCHW) and cross the IR boundary through `heimdall::boundary`, as in the
//! CLI and the CPU golden test (`plugin/heimdall/tests/onnx_goldens.rs`).

mod common;

use heimdall::assets::{goldens_dir, onnx_model_path};
use heimdall::npy::read_npy;
use heimdall::{LoadOptions, load, rel_l2};
use heimdall_gpu::{GpuModel, GpuOptions, Placement, Precision};

/// Bound of the f32 runs (measured on lavapipe: at most 1.9e-5, see the README's ONNX section).
const F32_TOLERANCE: f64 = 1e-3;

/// Bound of the f16 and packed-f16 runs (f16 storage of every activation and weight but the
/// graph output's producer). Measured on lavapipe: multistyle26 2.9e-3 (astronaut) and 7.2e-4
/// (text page) against 1e-2. PP-OCRv6_det_small reaches 2.5e-2 on the astronaut (1.8e-3 on the
/// text page; 1.2e-2 before the convolution kernels were re-blocked in the same working tree):
/// its output is a probability map that is near zero almost everywhere on a photograph (RMS
/// 0.09), so the f16 rounding of its backbone shows relative to a small norm. The ONNX-only
/// kernels are not the cause: with only their ops in f16 (the rest f32) the error is 2.3e-3,
/// with only the convolutions in f16 4.4e-3, with everything but the convolutions in f16 1.8e-2
/// (measured with `GpuOptions::overrides`). It is held to 5e-2 so that a regression still fails.
fn f16_tolerance(name: &str) -> f64 {
    match name {
        "PP-OCRv6_det_small" => 5e-2,
        _ => 1e-2,
    }
}

fn check(name: &str, image_input: &str) {
    let Some(gpu) = common::gpu() else { return };
    let path = onnx_model_path(name).unwrap_or_else(|e| panic!("{e}"));
    let mut cases: Vec<_> = std::fs::read_dir(goldens_dir(name))
        .unwrap_or_else(|e| panic!("no goldens for {name}: {e}"))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert!(cases.len() >= 2, "{name}: expected two golden cases");
    let mut failures = Vec::new();
    for dir in cases {
        let case = dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let mut inputs = Vec::new();
        while let Ok(t) = read_npy(dir.join(format!("input_{}.npy", inputs.len()))) {
            inputs.push(t);
        }
        let options = LoadOptions {
            passes: true,
            input_shapes: vec![(image_input.to_string(), inputs[0].shape.clone())],
        };
        let loaded = load(&path, options).unwrap_or_else(|e| panic!("{e}"));
        let ir_inputs: Vec<Vec<f32>> = inputs
            .iter()
            .enumerate()
            .map(|(i, t)| {
                assert_eq!(loaded.io.inputs[i].shape, t.shape, "input {i} shape");
                loaded.io.inputs[i].to_ir(&t.data)
            })
            .collect();
        let refs: Vec<&[f32]> = ir_inputs.iter().map(Vec::as_slice).collect();
        for p in [Precision::F32, Precision::F16, Precision::PackedF16] {
            let model = GpuModel::compile(&gpu.ctx, &loaded.graph, GpuOptions::new(p))
                .unwrap_or_else(|e| panic!("{name} {p:?}: compile: {e}"));
            let cpu_steps = model
                .placement()
                .iter()
                .filter(|s| **s != Placement::Gpu)
                .count();
            assert_eq!(cpu_steps, 0, "{name}: {cpu_steps} steps are not GPU steps");
            let outputs = model
                .run(&refs)
                .unwrap_or_else(|e| panic!("{name} {p:?}: run: {e}"));
            gpu.assert_no_errors();
            for (i, io) in loaded.io.outputs.iter().enumerate() {
                let reference =
                    read_npy(dir.join(format!("output_{i}.npy"))).expect("golden output");
                assert_eq!(io.shape, reference.shape, "output {i} shape");
                let ours = io.from_ir(&outputs[i]);
                let err = rel_l2(&ours, &reference.data);
                let bound = match p {
                    Precision::F32 => F32_TOLERANCE,
                    _ => f16_tolerance(name),
                };
                println!("{name}/{case}: {p:?}: output {i}: rel-L2 {err:.2e} (bound {bound:.0e})");
                if err.is_nan() || err > bound {
                    failures.push(format!(
                        "{name}/{case} {p:?} output {i}: {err:.3e} > {bound}"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn multistyle26_on_the_gpu() {
    check("multistyle26", "image");
}

#[test]
fn pp_ocrv6_det_small_on_the_gpu() {
    check("PP-OCRv6_det_small", "x");
}
