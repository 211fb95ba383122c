//! Whole MediaPipe models on the GPU backend against the TFLite goldens
//! (`assets/goldens/<model>/<case>/`): relative L2 error per output ≤ 2e-4 in f32 and ≤ 1e-2 in
//! f16 and packed f16; any-range encoding bit-identical to a whole run; no wgpu errors.
//! face_landmark_with_attention runs entirely on the GPU, its MediaPipe custom ops included
//! (`ops::landmarks_to_transform`, `ops::transform_tensor_bilinear`, `ops::transform_landmarks`,
//! tested op by op in tests/mediapipe_kernels.rs); its goldens cover
//! outputs 0 and 6 (see assets/goldens/README.md).

mod common;

use heimdall::assets::{goldens_dir, model_path};
use heimdall::npy::read_npy;
use heimdall::{LoadOptions, load_model};
use heimdall_gpu::{GpuModel, GpuOptions, Precision};
use heimdall_ir::Graph;

fn graph(name: &str) -> Graph {
    let path = model_path(name).unwrap_or_else(|e| panic!("{e}"));
    load_model(&path, LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// A golden case: its name, the input, and the golden of each output (if there is one).
type Case = (String, Vec<f32>, Vec<Option<Vec<f32>>>);

fn cases(name: &str, outputs: usize) -> Vec<Case> {
    let mut dirs: Vec<_> = std::fs::read_dir(goldens_dir(name))
        .unwrap_or_else(|e| panic!("goldens of {name}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 2, "{name}: expected two golden cases");
    dirs.into_iter()
        .map(|d| {
            let input = read_npy(d.join("input_0.npy")).expect("input").data;
            let golden = (0..outputs)
                .map(|i| {
                    let p = d.join(format!("output_{i}.npy"));
                    p.exists().then(|| read_npy(&p).expect("golden").data)
                })
                .collect();
            (
                d.file_name().unwrap().to_string_lossy().into_owned(),
                input,
                golden,
            )
        })
        .collect()
}

/// The one model that f16 storage cannot bring within 1e-2: pose_landmark_full (f32 meets 2e-4
/// on every output). It is ill-conditioned: its segmentation logits (output 2, -1710..268)
/// amplify any rounding about a thousand times (TFLite's builtin and XNNPACK f32 kernels already
/// differ by 1.2e-4 there). tests/f16_storage.rs runs the CPU backend with f16 storage emulated
/// between ops: it misses 1e-2 by itself (1.4e-1 on the synthetic input, 1.6e-2 on the
/// astronaut), and the GPU's f16 result is as far from the goldens as that emulation. Rounding
/// the first layer's output alone costs 5e-2, and keeping any half of the network in f32 still
/// leaves more than 1e-2, so no per-op choice short of f32 nearly everywhere meets the bound.
/// Its f16 outputs are held to these looser bounds instead, so that a regression still fails:
/// (model, output or every output, bound).
const F16_EXCEPTIONS: &[(&str, Option<usize>, f64)] = &[
    ("pose_landmark_full", Some(2), 2e-1),
    ("pose_landmark_full", None, 5e-2),
];

fn tolerance(name: &str, output: usize, p: Precision) -> f64 {
    match p {
        Precision::F32 => 2e-4,
        _ => F16_EXCEPTIONS
            .iter()
            .find(|(n, o, _)| *n == name && o.is_none_or(|o| o == output))
            .map_or(1e-2, |e| e.2),
    }
}

/// Relative L2 with an absolute floor for near-zero references (sigmoid flags about 1e-4,
/// see assets/goldens/README.md): the denominator is at least 1e-3 per value (RMS).
fn rel_l2_floored(out: &[f32], reference: &[f32]) -> f64 {
    let num: f64 = out
        .iter()
        .zip(reference)
        .map(|(a, b)| (*a as f64 - *b as f64).powi(2))
        .sum();
    let den: f64 = reference.iter().map(|b| (*b as f64).powi(2)).sum();
    num.sqrt() / den.sqrt().max(1e-3 * (reference.len() as f64).sqrt())
}

fn check_goldens(name: &str) {
    let Some(gpu) = common::gpu() else { return };
    let graph = graph(name);
    let cases = cases(name, graph.outputs.len());
    // face_landmark_with_attention's goldens cover 2 of its outputs, other models all.
    let per_case = match name {
        "face_landmark_with_attention" => 2,
        _ => graph.outputs.len(),
    };
    let goldens: usize = cases.iter().map(|c| c.2.iter().flatten().count()).sum();
    assert_eq!(
        goldens,
        per_case * cases.len(),
        "{name}: golden outputs found"
    );
    for p in Precision::ALL {
        let model = GpuModel::compile(&gpu.ctx, &graph, GpuOptions::new(p))
            .unwrap_or_else(|e| panic!("{name} {p:?}: {e}"));
        let r = model.report();
        println!(
            "{name} {p:?} (as {:?}): compile {:.0} ms, {} pipelines, {} dispatches, activations peak {} KiB of {} KiB, weights {} KiB",
            r.precision,
            r.compile_time.as_secs_f64() * 1e3,
            r.pipelines,
            r.dispatches,
            r.peak_bytes / 1024,
            r.total_bytes / 1024,
            r.weight_bytes / 1024
        );
        for (case, input, golden) in &cases {
            let start = std::time::Instant::now();
            let out = model
                .run(&[input])
                .unwrap_or_else(|e| panic!("{name} {p:?}: {e}"));
            let ms = start.elapsed().as_secs_f64() * 1e3;
            for (i, g) in golden.iter().enumerate() {
                let Some(g) = g else { continue };
                let err = rel_l2_floored(&out[i], g);
                println!("  {case}: output {i}: rel-L2 {err:.2e} ({ms:.0} ms run)");
                let tol = tolerance(name, i, p);
                assert!(
                    err <= tol,
                    "{name} {p:?} {case} output {i}: rel-L2 {err:.3e} > {tol:.0e}"
                );
            }
        }
    }
    gpu.assert_no_errors();
}

/// A small deterministic generator for cut points.
fn cuts(seed: u64, n: usize) -> Vec<std::ops::Range<usize>> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut points: Vec<usize> = (0..4)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % (n as u64 + 1)) as usize
        })
        .collect();
    points.extend([0, n]);
    points.sort_unstable();
    points.windows(2).map(|w| w[0]..w[1]).collect()
}

fn check_any_range(name: &str) {
    let Some(gpu) = common::gpu() else { return };
    let graph = graph(name);
    let (_, input, _) = cases(name, graph.outputs.len()).swap_remove(0);
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

macro_rules! gpu_model_tests {
    ($($name:ident),* $(,)?) => {
        mod goldens {
            $( #[test] fn $name() { super::check_goldens(stringify!($name)); } )*
        }
        mod any_range {
            $( #[test] fn $name() { super::check_any_range(stringify!($name)); } )*
        }
    };
}

gpu_model_tests!(
    face_detection_short_range,
    face_landmark_with_attention,
    face_detection_full_range_sparse,
    face_landmark,
    iris_landmark,
    palm_detection_lite,
    palm_detection_full,
    hand_landmark_lite,
    hand_landmark_full,
    hand_recrop,
    pose_detection,
    pose_landmark_full,
    selfie_segmentation,
    selfie_segmentation_landscape,
);

/// Per-op precision overrides: an f16 model with every op overridden to f32 is the f32 model,
/// bit for bit; with no override it differs.
#[test]
fn per_op_precision_overrides() {
    let Some(gpu) = common::gpu() else { return };
    let name = "face_detection_short_range";
    let graph = graph(name);
    let (_, input, _) = cases(name, graph.outputs.len()).swap_remove(0);
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

/// Per-step timing: every step gets a time, GPU steps from timestamps where the adapter has
/// them. Prints each model's GPU time (sum of per-step medians); `HEIMDALL_GPU_TABLE=1` does
/// every model in f32 and f16 (the lavapipe table of the report), otherwise two models.
#[test]
fn profile_step_times() {
    let Some(gpu) = common::gpu() else { return };
    let all = std::env::var("HEIMDALL_GPU_TABLE").is_ok_and(|v| v == "1");
    let models: &[&str] = if all {
        &heimdall::assets::MEDIAPIPE_MODELS
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
        let root = heimdall::assets::workspace_root();
        let present = ["assets/models", ".cache/models"]
            .iter()
            .any(|d| root.join(d).join(format!("{name}.tflite")).exists());
        if all && !present {
            println!("| {name} | (model not present) |");
            continue;
        }
        let graph = graph(name);
        let (_, input, _) = cases(name, graph.outputs.len()).swap_remove(0);
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
