//! Whole MediaPipe models on the GPU backend beyond their goldens (which the golden suite checks,
//! tests/goldens.rs): any-range encoding bit-identical to a whole run, per-op precision
//! overrides, per-step timing; no wgpu errors. face_landmark_with_attention runs entirely on the
//! GPU, its MediaPipe custom ops included (`ops::landmarks_to_transform`,
//! `ops::transform_tensor_bilinear`, `ops::transform_landmarks`, tested op by op in
//! tests/mediapipe_kernels.rs).

mod common;

use heimdall::{LoadOptions, load_model};
use heimdall_gpu::{GpuModel, GpuOptions, Precision};
use heimdall_ir::Graph;

fn graph(name: &str) -> Graph {
    let path = heimdall_testkit::model_path(name).unwrap_or_else(|e| panic!("{e}"));
    load_model(&path, LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// The first golden case's input 0 of a model.
fn golden_input(name: &str) -> Vec<f32> {
    heimdall_testkit::goldens::cases(name)
        .swap_remove(0)
        .inputs
        .swap_remove(0)
        .data
}

/// A small deterministic generator for cut points.
fn cuts(seed: u64, n: usize) -> Vec<std::ops::Range<usize>> {
    let mut r = heimdall_testkit::XorShift::new(seed);
    let mut points: Vec<usize> = (0..4)
        .map(|_| (r.next_u64() % (n as u64 + 1)) as usize)
        .collect();
    points.extend([0, n]);
    points.sort_unstable();
    points.windows(2).map(|w| w[0]..w[1]).collect()
}

fn check_any_range(name: &str) {
    let Some(gpu) = common::gpu() else { return };
    let graph = graph(name);
    let input = golden_input(name);
    for p in [Precision::F32, Precision::PackedF16] {
        let model = GpuModel::compile(&gpu.ctx, &graph, GpuOptions::new(p)).expect("compile");
        let whole = model.run(&[&input]).expect("run");
        for seed in 1..4 {
            let ranges = cuts(seed + name.len() as u64, model.num_steps());
            let parts = model.run_ranges(&[&input], &ranges).expect("run ranges");
            for (i, (a, b)) in whole.iter().zip(&parts).enumerate() {
                let same = a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(
                    same,
                    "{name} {p:?}: output {i} differs when run as {ranges:?}"
                );
            }
        }
    }
    gpu.assert_no_errors();
}

mod any_range {
    heimdall_testkit::mediapipe_model_tests!(super::check_any_range);
}

/// Per-op precision overrides: an f16 model with every op overridden to f32 is the f32 model,
/// bit for bit; with no override it differs.
#[test]
fn per_op_precision_overrides() {
    let Some(gpu) = common::gpu() else { return };
    let name = "face_detection_short_range";
    let graph = graph(name);
    let input = golden_input(name);
    let run = |o: GpuOptions| {
        let m = GpuModel::compile(&gpu.ctx, &graph, o).expect("compile");
        (m.run(&[&input]).expect("run"), m.report().peak_bytes)
    };
    let (f32_out, f32_peak) = run(GpuOptions::new(Precision::F32));
    let mut all_f32 = GpuOptions::new(Precision::F16);
    all_f32.overrides.push((0..graph.ops.len(), Precision::F32));
    let (over_out, over_peak) = run(all_f32);
    let (f16_out, f16_peak) = run(GpuOptions::new(Precision::F16));
    assert!(
        f32_out == over_out,
        "all-f32 overrides differ from the f32 model"
    );
    assert_eq!(f32_peak, over_peak);
    assert!(f32_out != f16_out, "f16 gave the f32 result bit for bit");
    assert!(f16_peak < f32_peak);
    gpu.assert_no_errors();
}

/// A profile of a model whose steps all run on the GPU submits its runs in bursts and waits for
/// the GPU once per burst (on a device shared with a renderer, each wait also waits for the
/// frames queued meanwhile): on an own device (unbounded bursts) the first run alone, then the
/// other six together, 2 waits; with a budget of 0, one wait per run, 7.
#[test]
fn a_profile_waits_for_the_gpu_once_per_burst() {
    let Some(gpu) = common::gpu() else { return };
    let name = "face_detection_short_range";
    let input = golden_input(name);
    let timestamps = gpu.ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY);
    for (ctx, expected) in [
        (gpu.ctx.clone(), 2),
        (gpu.ctx.clone().with_background_burst_ms(0.0), 7),
    ] {
        let model = GpuModel::compile(&ctx, &graph(name), GpuOptions::new(Precision::F16))
            .expect("compile");
        let all_gpu = model
            .placement()
            .iter()
            .all(|p| *p == heimdall_gpu::Placement::Gpu);
        let before = heimdall_gpu::waits_on_this_thread();
        let prof = model.profile(&[&input], 2, 5).expect("profile");
        let waits = heimdall_gpu::waits_on_this_thread() - before;
        assert_eq!(prof.steps.len(), model.num_steps());
        assert_eq!(prof.runs, 5);
        if all_gpu && timestamps {
            assert_eq!(
                waits, expected,
                "burst budget {} ms",
                ctx.background_burst_ms
            );
            let timed = prof.steps.iter().filter(|d| !d.is_zero()).count();
            assert!(
                timed * 10 >= model.num_steps() * 9,
                "only {timed} steps timed"
            );
        } else {
            eprintln!("no timestamps or a CPU step here: {waits} waits, one per run or step");
        }
        // The model still runs and matches itself after the profile (its buffers were not left
        // mapped or half-written).
        let a = model.run(&[&input]).expect("run");
        let b = model.run(&[&input]).expect("run");
        assert_eq!(a, b);
    }
    gpu.assert_no_errors();
}

/// Per-step timing: every step gets a time, GPU steps from timestamps where the adapter has
/// them. Prints each model's GPU time (sum of per-step medians); `HEIMDALL_GPU_TABLE=1` does
/// every model in f32 and f16 (the lavapipe table of the report), otherwise two models.
#[test]
fn profile_step_times() {
    let Some(gpu) = common::gpu() else { return };
    let all = std::env::var("HEIMDALL_GPU_TABLE").is_ok_and(|v| v == "1");
    let models: &[&str] = if all {
        &heimdall_testkit::MEDIAPIPE_MODELS
    } else {
        &["face_detection_short_range", "face_landmark_with_attention"]
    };
    let precisions: &[Precision] = if all {
        &[Precision::F32, Precision::F16]
    } else {
        &[Precision::F16]
    };
    for name in models {
        // The table covers the models present (the device machine gets a subset).
        if all && !heimdall_testkit::model_present(name) {
            println!("| {name} | (model not present) |");
            continue;
        }
        let graph = graph(name);
        let input = golden_input(name);
        for &p in precisions {
            let model = GpuModel::compile(&gpu.ctx, &graph, GpuOptions::new(p)).expect("compile");
            let prof = model.profile(&[&input], 1, 3).expect("profile");
            assert_eq!(prof.steps.len(), model.num_steps());
            let timed = prof.steps.iter().filter(|d| !d.is_zero()).count();
            assert!(
                timed * 10 >= model.num_steps() * 9,
                "{name}: only {timed} steps timed"
            );
            if gpu.ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY) {
                assert_eq!(prof.source, heimdall_gpu::TimingSource::Timestamps);
            }
            let r = model.report();
            println!(
                "| {name} | {p:?} | {:.2} ms GPU | {:.0} ms compile | {} KiB peak of {} KiB |",
                prof.gpu_total(model.placement()).as_secs_f64() * 1e3,
                r.compile_time.as_secs_f64() * 1e3,
                r.peak_bytes / 1024,
                r.total_bytes / 1024
            );
        }
    }
    gpu.assert_no_errors();
}
