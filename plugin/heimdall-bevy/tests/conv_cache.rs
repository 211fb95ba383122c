//! The convolution cache ([`ConvCache`]) in a headless app on the GPU (lavapipe): the bundled
//! palm detector on a still camera (letterbox crop, `[0, 1]` pixels) with the cache on. After
//! the first run, every block of the still frame is unchanged, so the runs reuse the cached
//! tiles: the model's stats show cached runs with a mean hit rate over 0.5, `stats.json`'s entry
//! has them, and the outputs are those of the first, fully computed run.

mod common;
mod decoders_support;

use std::time::Duration;

use bevy::prelude::*;
use decoders_support as support;
use heimdall_bevy::prelude::*;
use heimdall_vision::image::Normalization;

const TIMEOUT: Duration = Duration::from_secs(240);
const RUNS: usize = 6;

#[test]
fn still_camera_hits_the_cache() {
    if common::skip_gpu() {
        eprintln!("HEIMDALL_SKIP_GPU=1: skipping");
        return;
    }
    let mut app = support::app();
    let model = support::load_model(
        &mut app,
        &common::assets_dir().join("models/palm_detection_lite.tflite"),
        Vec::new(),
    );
    let (camera, _source) = support::spawn_camera(&mut app, support::image("two_hands.jpg"));
    // No expiry by time: on a slow software GPU a run may take longer than DeepMon's second.
    let settings = ConvCacheConfig {
        expiry_ms: 0,
        ..default()
    };
    app.world_mut().spawn(
        Dnn::new(model, camera)
            .with_crop(InputCrop::Letterbox)
            .with_normalization(Normalization::ZERO_TO_ONE)
            .with_conv_cache(ConvCache::On(settings)),
    );
    let runs = |app: &App| {
        app.world()
            .resource::<HeimdallStats>()
            .models
            .get("palm_detection_lite")
            .map_or(0, |m| m.cache_runs)
    };
    common::run_until(&mut app, TIMEOUT, |app| runs(app) >= RUNS);
    let stats = app.world().resource::<HeimdallStats>();
    let m = &stats.models["palm_detection_lite"];
    println!(
        "{} cached runs of {} results, {} cached ops, mean hit rate {:.3}, mean dirty blocks {:.3}",
        m.cache_runs, m.results, m.cached_ops, m.cache_hit_rate_mean, m.cache_dirty_block_rate_mean
    );
    assert!(m.cache_runs >= RUNS, "only {} cached runs", m.cache_runs);
    assert!(m.cached_ops > 0, "no op is cached");
    assert!(
        m.cache_hit_rate_mean > 0.5,
        "mean hit rate {} on a still camera",
        m.cache_hit_rate_mean
    );
    assert!(
        m.cache_hit_rate_last > 0.9,
        "the latest run recomputed {:.3} of its tiles",
        1.0 - m.cache_hit_rate_last
    );
    let json = stats.to_json(&HeimdallSettings::default(), "gpu", 0);
    let c = &json["models"]["palm_detection_lite"]["conv_cache"];
    assert_eq!(c["runs"], m.cache_runs);
    assert!(c["hit_rate_mean"].as_f64().unwrap() > 0.5, "{c}");

    // The cached runs give the outputs of the first run (the same still frame).
    let results = &app.world().resource::<common::Results>().0;
    let (first, last) = (
        &results[0].output.tensors,
        &results[results.len() - 1].output.tensors,
    );
    let worst = first
        .iter()
        .zip(last.iter())
        .flat_map(|(a, b)| a.iter().zip(b).map(|(x, y)| (x - y).abs()))
        .fold(0.0f32, f32::max);
    assert!(worst <= 1e-3, "outputs differ by {worst}");
}
