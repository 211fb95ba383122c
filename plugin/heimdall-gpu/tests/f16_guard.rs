//! The accuracy guard for reduced precision (`heimdall_gpu::guard`) against the CPU reference:
//! - a model that meets the f16 bound stays f16 with no override and no trial compile;
//! - pose_landmark_full, which f16 storage cannot hold to 1e-2 (see `f16_storage.rs`), meets the
//!   f16 bound on a real photo with the f32 parts the guard picks, no per-model exception;
//! - a synthetic graph where exactly one op's output overflows f16 (values > 65504) gets exactly
//!   that op switched to f32.
//!
//! Needs a GPU adapter (lavapipe in CI); `HEIMDALL_SKIP_GPU=1` skips. Models that are not bundled
//! are skipped when they are not in the cache (this test never fetches).

mod common;

use heimdall::npy::read_npy;
use heimdall::{LoadOptions, load_model};
use heimdall_gpu::guard::{DEFAULT_BOUND, GuardConfig, GuardError, compile_guarded, cpu_reference};
use heimdall_gpu::{GpuOptions, Precision};
use heimdall_image::{Crop, Normalization, RgbaImage};
use heimdall_ir::{BinaryFn, Constant, DType, Graph, Op, OpKind, TensorId, TensorInfo};
use heimdall_testkit::{goldens_dir, model_path, rel_l2_floored};

/// The golden suites' floor for the GPU runtimes on TFLite goldens.
const FLOOR: f64 = 1e-3;

fn load(name: &str) -> Graph {
    load_model(
        model_path(name).unwrap_or_else(|e| panic!("{e}")),
        LoadOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The golden input of `case` (a TFLite model: NHWC, the IR's layout).
fn golden_input(name: &str, case: &str) -> Vec<f32> {
    read_npy(goldens_dir(name).join(case).join("input_0.npy"))
        .expect("golden input")
        .data
}

/// A bundled photo resized to the model's `[H, W, 3]` input in [0, 1].
fn photo(file: &str, shape: [usize; 3]) -> Vec<f32> {
    let path = heimdall_testkit::paths::assets_dir()
        .join("images")
        .join(file);
    RgbaImage::load(path)
        .expect("photo")
        .to_tensor(&Crop::FULL, &Normalization::range(0.0, 1.0), shape)
        .expect("tensor")
}

/// `[1.2e-3, ...]`.
fn sci(v: &[f64]) -> String {
    let v: Vec<String> = v.iter().map(|e| format!("{e:.2e}")).collect();
    format!("[{}]", v.join(", "))
}

/// `x` (`[h, w, c]`) mirrored left to right.
fn mirror(x: &[f32], h: usize, w: usize, c: usize) -> Vec<f32> {
    let mut out = vec![0.0; x.len()];
    for y in 0..h {
        for i in 0..w {
            let (src, dst) = ((y * w + i) * c, (y * w + (w - 1 - i)) * c);
            out[dst..dst + c].copy_from_slice(&x[src..src + c]);
        }
    }
    out
}

/// The CPU reference on `input`, and `graph` compiled in f16 through the guard with the default
/// settings, calibrated on `input` against that reference.
fn guard_f16(
    ctx: &heimdall_gpu::GpuContext,
    graph: &Graph,
    input: &[f32],
) -> (Vec<Vec<f32>>, heimdall_gpu::guard::GuardedModel) {
    let reference = cpu_reference(graph, &[input]).expect("reference");
    let guarded = compile_guarded(
        ctx,
        graph,
        GpuOptions::new(Precision::F16),
        &[input],
        &reference,
        &GuardConfig::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    (reference, guarded)
}

#[test]
fn a_model_that_meets_the_f16_bound_stays_f16() {
    let Some(gpu) = common::gpu() else { return };
    let name = "selfie_segmentation";
    let graph = load(name);
    let input = golden_input(name, "astronaut");
    let (_, guarded) = guard_f16(&gpu.ctx, &graph, &input);
    let d = &guarded.decision;
    println!("{}", d.log_line(name));
    assert!(d.passed && d.unchanged() && !d.whole_f32, "{d:#?}");
    assert!(d.overrides.is_empty(), "{:?}", d.overrides);
    assert_eq!(d.trials, 0);
    assert_eq!(d.errors_before, d.errors_after);
    assert_ne!(guarded.model.report().precision, Precision::F32);
    gpu.assert_no_errors();
}

#[test]
fn pose_landmark_full_meets_the_f16_bound_with_the_guard() {
    let Some(gpu) = common::gpu() else { return };
    let name = "pose_landmark_full";
    let graph = load(name);
    let input = golden_input(name, "astronaut");
    let (reference, guarded) = guard_f16(&gpu.ctx, &graph, &input);
    let d = &guarded.decision;
    println!("{}", d.log_line(name));
    println!("overrides: {:?}", d.overrides);
    // As asked, f16 misses the bound (the reason for the guard) ...
    assert!(
        d.errors_before.iter().any(|&e| e > DEFAULT_BOUND),
        "f16 storage now meets the bound by itself: {:?}",
        d.errors_before
    );
    // ... and the guard's choice meets it, checked again here on its returned model.
    assert!(d.passed, "{d:#?}");
    assert!(!d.whole_f32 && d.f32_ops() < d.ops, "{d:#?}");
    let ours = guarded.model.run(&[&input]).expect("run");
    for (i, (o, r)) in ours.iter().zip(&reference).enumerate() {
        let err = rel_l2_floored(o, r, FLOOR);
        assert!(err <= DEFAULT_BOUND, "output {i}: {err:.3e}");
    }
    // Inputs other than the calibration one: the same person mirrored and a hand photo (held to
    // the bound), and a photo without a person (reported only: its presence flag, 0.005, and the
    // segmentation of an empty scene are near zero, where f16 shows most).
    let plain = heimdall_gpu::GpuModel::compile(&gpu.ctx, &graph, GpuOptions::new(Precision::F16))
        .expect("plain f16");
    let mirrored = mirror(&input, 256, 256, 3);
    for (what, x) in [
        ("astronaut mirrored", mirrored),
        ("hand_src.jpg", photo("hand_src.jpg", [256, 256, 3])),
        ("home.jpg", photo("home.jpg", [256, 256, 3])),
    ] {
        let reference = cpu_reference(&graph, &[&x]).expect("reference");
        let ours = guarded.model.run(&[&x]).expect("run");
        let asked = plain.run(&[&x]).expect("run");
        let errs = |o: &[Vec<f32>]| -> Vec<f64> {
            o.iter()
                .zip(&reference)
                .map(|(o, r)| rel_l2_floored(o, r, FLOOR))
                .collect()
        };
        let (e_guard, e_asked) = (errs(&ours), errs(&asked));
        println!(
            "{what}: f16 as asked {}, guarded {}, flag {:?}",
            sci(&e_asked),
            sci(&e_guard),
            reference[1]
        );
        if what != "home.jpg" {
            for (i, e) in e_guard.iter().enumerate() {
                assert!(*e <= DEFAULT_BOUND, "{what} output {i}: {e:.3e}");
            }
        }
    }
    gpu.assert_no_errors();
}

/// input → ×1024 → ×1024 (overflows f16: |x| > 1/16 gives more than 65504) → ×2⁻¹⁰ → ×2⁻¹⁰ →
/// two copies (the output's producer and the tensor it reads are always f32), 6 ops.
fn overflow_graph() -> Graph {
    let shape = vec![1, 4, 4, 8];
    let mut tensors = Vec::new();
    let mut tensor = |name: &str, shape: &[usize], constant: Option<f32>| {
        tensors.push(TensorInfo {
            name: name.into(),
            shape: shape.to_vec(),
            dtype: DType::F32,
            constant: constant.map(|v| Constant::dense(vec![v])),
        });
        TensorId(tensors.len() as u32 - 1)
    };
    let x = tensor("x", &shape, None);
    let scales = [1024.0, 1024.0, 1.0 / 1024.0, 1.0 / 1024.0];
    let mut ops = Vec::new();
    let mut last = x;
    for (k, s) in scales.into_iter().enumerate() {
        let c = tensor(&format!("scale{k}"), &[1], Some(s));
        let y = tensor(&format!("y{k}"), &shape, None);
        ops.push(Op::new(
            OpKind::Binary(BinaryFn::Mul),
            vec![last, c],
            vec![y],
        ));
        last = y;
    }
    for k in 0..2 {
        let y = tensor(&format!("copy{k}"), &shape, None);
        ops.push(Op::new(OpKind::Reshape, vec![last], vec![y]));
        last = y;
    }
    Graph {
        name: "overflow".into(),
        tensors,
        ops,
        inputs: vec![x],
        outputs: vec![last],
    }
}

#[test]
fn an_op_that_overflows_f16_gets_exactly_that_op_in_f32() {
    let Some(gpu) = common::gpu() else { return };
    let graph = overflow_graph();
    graph.validate().expect("valid graph");
    let input: Vec<f32> = common::data(7, 4 * 4 * 8);
    let reference = cpu_reference(&graph, &[&input]).expect("reference");
    for precision in [Precision::F16, Precision::PackedF16] {
        let guarded = compile_guarded(
            &gpu.ctx,
            &graph,
            GpuOptions::new(precision),
            &[&input],
            &reference,
            &GuardConfig::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let d = &guarded.decision;
        println!("{precision:?}: {}", d.log_line("overflow"));
        assert!(
            d.errors_before[0] > 1.0,
            "{precision:?}: f16 did not overflow"
        );
        assert!(d.passed && !d.whole_f32, "{precision:?}: {d:#?}");
        assert_eq!(d.f32_ranges, vec![1..2], "{precision:?}: {d:#?}");
        assert_eq!(d.overrides, vec![(1..2, Precision::F32)]);
        assert!(d.errors_after[0] <= 1e-3, "{:?}", d.errors_after);
        assert!(!d.cap_reached && d.trials <= 8, "{d:#?}");
        // The returned model is the one decided on.
        let out = guarded.model.run(&[&input]).expect("run");
        assert!(rel_l2_floored(&out[0], &reference[0], 0.0) <= 1e-3);
    }
    gpu.assert_no_errors();
}

#[test]
fn a_trial_cap_of_zero_falls_back_to_f32_whole_and_bad_calibration_is_an_error() {
    let Some(gpu) = common::gpu() else { return };
    let graph = overflow_graph();
    let input: Vec<f32> = common::data(7, 4 * 4 * 8);
    let reference = cpu_reference(&graph, &[&input]).expect("reference");
    let config = GuardConfig {
        max_trials: 0,
        ..Default::default()
    };
    let options = GpuOptions::new(Precision::F16);
    let guarded = compile_guarded(
        &gpu.ctx,
        &graph,
        options.clone(),
        &[&input],
        &reference,
        &config,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let d = &guarded.decision;
    assert!(d.whole_f32 && d.passed && d.cap_reached, "{d:#?}");
    assert_eq!(d.f32_ranges, vec![0..graph.ops.len()]);
    // Wrong sizes are typed errors, not panics.
    let short = &input[..10];
    let err = compile_guarded(
        &gpu.ctx,
        &graph,
        options.clone(),
        &[short],
        &reference,
        &config,
    );
    assert!(matches!(err, Err(GuardError::Calibration(_))));
    let err = compile_guarded(&gpu.ctx, &graph, options, &[&input], &[], &config);
    assert!(matches!(err, Err(GuardError::Calibration(_))));
    assert!(matches!(
        cpu_reference(&graph, &[]),
        Err(GuardError::Calibration(_))
    ));
    gpu.assert_no_errors();
}
