//! Repeated inference keeps the process's memory flat. Each bundled MediaPipe model is fed by
//! the preprocessing kernel from a 320x240 camera texture, with a crop that moves every run (as
//! the plugin's requests do: a tracked face or hand is a new rotated rectangle each frame), runs
//! [`WARMUP`] times, then [`RUNS`] more; the C heap (glibc's count, which holds the Vulkan
//! driver's host allocations too) may grow by at most [`MAX_GROWTH_PER_RUN`] a run on average.
//!
//! This is the test for a defect the emoji soak found on lavapipe: Mesa 22.3's lavapipe
//! compiles a new shader variant at every dispatch of a kernel whose uniform parameters steer
//! its control flow, and keeps each until the pipeline goes (`GpuContext::params_space` moves
//! parameters to storage buffers there). `HEIMDALL_PARAMS=uniform` brings the defect back on
//! lavapipe and the test fails (docs/soak.md has the figures).
//!
//! One test in its own binary: nothing else allocates while it measures. Needs a GPU adapter
//! (lavapipe in CI); `HEIMDALL_SKIP_GPU=1` skips.

mod common;

use common::gpu;
use heimdall::{LoadOptions, load_model};
use heimdall_gpu::preprocess::Preprocessor;
use heimdall_gpu::{GpuModel, GpuOptions, Precision};
use heimdall_image::Vec2;
use heimdall_image::{Border, Crop, CropTransform, Normalization, RotatedRect};
use heimdall_testkit::{heap_stats, model_path};

/// Runs before the first measurement (pipelines warm, readback buffers mapped once).
const WARMUP: usize = 4;
/// Runs measured.
const RUNS: usize = 20;
/// Average heap growth allowed per run, bytes. A run allocates its outputs and frees them; what
/// stays is allocator noise of a few kB in all. One camera frame at 320x240 is 300 kB, a
/// lavapipe shader variant 100 kB to a few MB.
const MAX_GROWTH_PER_RUN: usize = 16 << 10;

/// The bundled models (nothing to fetch).
const MODELS: [&str; 5] = heimdall_testkit::BUNDLED_MEDIAPIPE_MODELS;

/// A 320x240 RGBA8 texture of deterministic bytes.
fn camera_texture(ctx: &heimdall_gpu::GpuContext) -> wgpu::TextureView {
    let (w, h) = (320u32, 240u32);
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let rgba: Vec<u8> = (0..w * h * 4)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 24) as u8
        })
        .collect();
    heimdall_gpu::preprocess::upload_rgba8(ctx, "test camera", &rgba, (w, h), &[])
        .expect("a 320x240 frame")
        .create_view(&Default::default())
}

/// The crop of run `i`: a rotated rectangle that drifts and turns, partly outside the frame.
fn crop(i: usize) -> Crop {
    let t = i as f32;
    let rect = RotatedRect {
        center: Vec2::new(0.5 + 0.2 * (0.13 * t).sin(), 0.5 + 0.15 * (0.07 * t).cos()),
        size: Vec2::new(0.6 + 0.01 * (t % 7.0), 0.7),
        rotation: 0.05 * t,
    };
    Crop {
        transform: CropTransform::from_rotated_rect(&rect, 320, 240),
        border: if i.is_multiple_of(2) {
            Border::ZERO
        } else {
            Border::Clamp
        },
    }
}

/// One run: preprocessing with this run's crop, the model, the readback (blocking).
fn run(
    model: &GpuModel,
    pre: &Preprocessor,
    binding: &heimdall_gpu::preprocess::PreprocessBinding,
    i: usize,
) {
    let ctx = model.context();
    pre.set_crop(&ctx.queue, &crop(i)).expect("crop");
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    pre.encode(&mut encoder, binding);
    model
        .encode(&mut encoder, 0..model.num_steps())
        .expect("encode");
    model.encode_readback(&mut encoder).expect("readback");
    ctx.queue.submit([encoder.finish()]);
    model.request_readback().expect("request");
    loop {
        ctx.device
            .poll(wgpu::PollType::Wait {
                submission_index: None,
                timeout: None,
            })
            .expect("poll");
        if model.take_outputs().expect("take").is_some() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
}

#[test]
fn repeated_inference_keeps_the_heap_flat() {
    let Some(gpu) = gpu() else { return };
    if heap_stats().is_none() {
        heimdall_testkit::skip(
            "memory::repeated_inference_keeps_the_heap_flat",
            "no glibc heap counters here",
        );
        return;
    }
    println!(
        "{} ({:?}), parameters in {:?} buffers",
        gpu.ctx.info.name,
        gpu.ctx.info.device_type,
        gpu.ctx.params_space()
    );
    let view = camera_texture(&gpu.ctx);
    let mut failures = Vec::new();
    for name in MODELS {
        let graph = load_model(model_path(name).expect("model"), LoadOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let model = GpuModel::compile(&gpu.ctx, &graph, GpuOptions::new(Precision::F32))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let pre = Preprocessor::new(&model, 0, Normalization::MINUS_ONE_TO_ONE).expect("pre");
        let binding = pre.bind(&view).expect("bind");
        for i in 0..WARMUP {
            run(&model, &pre, &binding, i);
        }
        let before = heap_stats().expect("heap").allocated();
        for i in WARMUP..WARMUP + RUNS {
            run(&model, &pre, &binding, i);
        }
        let after = heap_stats().expect("heap").allocated();
        let per_run = after.saturating_sub(before) / RUNS;
        println!(
            "{name}: heap {:.1} -> {:.1} MB over {RUNS} runs ({:.1} kB a run)",
            before as f64 / 1e6,
            after as f64 / 1e6,
            per_run as f64 / 1e3
        );
        if per_run > MAX_GROWTH_PER_RUN {
            failures.push(format!("{name}: {:.1} kB a run", per_run as f64 / 1e3));
        }
    }
    gpu.assert_no_errors();
    assert!(
        failures.is_empty(),
        "the heap grew by more than {} kB a run: {failures:?}",
        MAX_GROWTH_PER_RUN >> 10
    );
}
