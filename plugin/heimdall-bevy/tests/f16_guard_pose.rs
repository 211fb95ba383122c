//! pose_landmark_full, which f16 storage cannot hold to the f16 bound (its segmentation logits
//! miss it by 2–4×, `heimdall-gpu/tests/f16_storage.rs`), as a DNN with the plugin's defaults
//! (f16, the guard on) in a headless app on the GPU (lavapipe), calibrated on its first frame (a
//! photo of a person): it runs in f32 until the guard decides, then with the ops the guard keeps
//! in f32, and its results meet the bound against the CPU backend in f32 on that frame. No
//! per-model setting: the guard finds the ops by itself.
//!
//! The model is not bundled: skipped when it is not in the tests' model cache (`heimdall models
//! fetch pose_landmark_full --cache-dir .cache`; this test never fetches). Slow on
//! lavapipe (the search compiles and runs the 256×256 model about 26 times: minutes).

mod common;
mod decoders_support;
mod guard_support;

use std::time::Duration;

use bevy::prelude::*;
use decoders_support as support;
use guard_support as g;
use heimdall_bevy::prelude::*;
use heimdall_gpu::Precision;
use heimdall_gpu::guard::{cpu_reference, output_error};
use heimdall_testkit::{model_path, model_present};
use heimdall_vision::image::resample;

const TIMEOUT: Duration = Duration::from_secs(900);

#[test]
fn pose_landmark_full_meets_the_f16_bound_with_the_plugins_defaults() {
    if common::skip_gpu() {
        eprintln!("HEIMDALL_SKIP_GPU=1: skipping");
        return;
    }
    let name = "pose_landmark_full";
    if !model_present(name) {
        eprintln!(
            "{name} is not in the model cache (heimdall models fetch {name} --cache-dir .cache): \
             skipped"
        );
        return;
    }
    let start = std::time::Instant::now();
    let mut app = g::app(Some(GuardConfig::default()), None);
    let camera = g::camera(&mut app);
    let path = model_path(name).expect("model");
    let model = support::load_model(&mut app, &path, Vec::new());
    let graph = app
        .world()
        .resource::<Assets<DnnModel>>()
        .get(&model)
        .map(|m| m.graph.clone())
        .expect("the model asset");
    // No convolution cache: the guard's own model is the one that runs (no third compile).
    let dnn = app
        .world_mut()
        .spawn(Dnn::new(model, camera).with_conv_cache(ConvCache::Off))
        .id();
    let watched = g::run_until_guarded(&mut app, &[dnn], TIMEOUT);
    let w = &watched[&dnn];
    let status = g::guard_of(&app, dnn);
    println!(
        "{name}: states {:?} after {:.1} s",
        w.states,
        start.elapsed().as_secs_f64()
    );
    let GuardStatus::Decided(outcome) = status else {
        panic!("{name}: not decided: {status:?}");
    };
    let d = &outcome.decision;
    println!("{}", d.log_line(name));
    // As asked, f16 storage misses the bound on this frame (the reason for the guard) ...
    assert!(
        d.errors_before.iter().any(|&e| e > g::BOUND),
        "f16 storage now meets the bound by itself: {:?}",
        d.errors_before
    );
    // ... and the guard's choice meets it, with part of the model in f16.
    assert!(d.passed && !d.whole_f32 && d.f32_ops() < d.ops, "{d:#?}");
    let p = g::precision_of(&mut app, dnn);
    assert!(
        matches!(p, Some(Precision::F16 | Precision::PackedF16)),
        "{p:?}"
    );
    // A result of the guarded model against the CPU backend in f32 on the same frame.
    let result = w
        .guarded_result
        .as_ref()
        .expect("a result of the guarded model");
    let photo = g::photo();
    let x = resample(
        &photo.data,
        photo.width as usize,
        photo.height as usize,
        &result.output.crop,
        &Normalization::ZERO_TO_ONE,
        [256, 256, 3],
    )
    .expect("resample");
    let reference = cpu_reference(&graph, &[&x]).expect("reference");
    for (i, (o, r)) in result.output.tensors.iter().zip(&reference).enumerate() {
        let err = output_error(o, r, g::FLOOR);
        println!(
            "{name}: output {i}: guarded {err:.2e} (as asked {:.2e})",
            d.errors_before[i]
        );
        assert!(err <= g::BOUND, "output {i}: {err:.3e}");
    }
    println!("total {:.1} s", start.elapsed().as_secs_f64());
}
