//! The convolution cache ([`ConvCache`]) in a headless app on the GPU (lavapipe), on still
//! cameras. One app (one app test per binary: see `common::quiet_runtime_dir`) with four DNNs:
//!
//! - the bundled palm detector, letterbox crop, the cache forced on (`ConvCache::On`): after the
//!   first run every block of the still frame is unchanged, so the runs reuse the cached tiles;
//!   the model's stats show cached runs with a mean hit rate over 0.5, `stats.json`'s entry has
//!   them, and the outputs are those of the model's first, fully computed run (with the plugin's
//!   default f16 guard the first results come from the f32 model that runs until the guarded
//!   one, with the cache, replaces it: the comparison starts at the swap);
//! - the default ([`ConvCache::Auto`]) on face detection with a full-frame crop: the calibration
//!   keeps the cache (it saves ~95 % of a run on a CPU device), and the still frame hits it;
//! - the default on a DNN whose crop is a region of interest: never a cache;
//! - the default on face detection with every block expiring after one run (`expiry_runs: 1`):
//!   a still scene can reuse nothing, and the calibrated decision drops the cache (the model is
//!   compiled again without it).

mod common;
mod decoders_support;

use std::time::Duration;

use bevy::prelude::*;
use decoders_support as support;
use heimdall_bevy::asset::{DnnModelSettings, import};
use heimdall_bevy::prelude::*;
use heimdall_vision::image::{Border, Crop, CropTransform, Normalization};

const TIMEOUT: Duration = Duration::from_secs(240);
const RUNS: usize = 6;

/// A bundled model under another name (two DNNs of one model get their own stats).
fn load_as(app: &mut App, file: &str, name: &str) -> Handle<DnnModel> {
    let path = common::assets_dir().join("models").join(file);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut graph = import(&bytes, name, path.extension(), &DnnModelSettings::default())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    graph.name = name.into();
    common::add_model(app, graph)
}

/// The stats of the model `name`, once it has some.
fn stats_of<'a>(app: &'a App, name: &str) -> Option<&'a heimdall_bevy::stats::ModelStats> {
    app.world().resource::<HeimdallStats>().models.get(name)
}

#[test]
fn forced_default_and_dropped_caches_on_still_cameras() {
    if common::skip_gpu() {
        common::skipping("HEIMDALL_SKIP_GPU=1");
        return;
    }
    let mut app = support::app();
    // No expiry by time: on a slow software GPU a run may take longer than DeepMon's second.
    let by_runs = ConvCacheConfig {
        expiry_ms: 0,
        expiry_runs: 30,
        ..default()
    };
    let palm = spawn_palm(&mut app, by_runs);
    spawn_face_dnns(&mut app, by_runs);

    let palm_guarded_from = run_until_cached(&mut app, palm);
    let stats = app.world().resource::<HeimdallStats>();
    let json = stats.to_json(&HeimdallSettings::default(), "gpu", 0);
    print_cache_stats(stats);

    check_forced(stats, &json);
    check_kept(stats, &json);
    check_roi_has_none(stats);
    check_dropped(stats, &json);

    // The cached runs give the outputs of the model's first run (the same still frame).
    let from = palm_guarded_from.expect("the palm detector's guard decided");
    check_outputs_match_first(&app, palm, from);
}

/// Spawns the two-hands camera and the palm detector on it, letterbox crop, the cache forced on
/// (with `by_runs`' settings, no expiry); returns the DNN.
fn spawn_palm(app: &mut App, by_runs: ConvCacheConfig) -> Entity {
    let palm = support::load_model(
        app,
        &common::assets_dir().join("models/palm_detection_lite.tflite"),
        Vec::new(),
    );
    let (hands, _source) = support::spawn_camera(app, support::image("two_hands.jpg"));
    app.world_mut()
        .spawn(
            Dnn::new(palm, hands)
                .with_crop(InputCrop::Letterbox)
                .with_normalization(Normalization::ZERO_TO_ONE)
                .with_conv_cache(ConvCache::On(ConvCacheConfig {
                    expiry_runs: 0,
                    ..by_runs
                })),
        )
        .id()
}

/// Spawns the astronaut camera and its three DNNs with the default cache: face detection on the
/// full frame (`face_auto`), the identity on a region of interest, and face detection with
/// every block expiring after one run (`face_dropped`).
fn spawn_face_dnns(app: &mut App, by_runs: ConvCacheConfig) {
    let (face, _source) = support::spawn_camera(app, support::image("astronaut.png"));
    let kept = Dnn::new(
        load_as(app, "face_detection_short_range.tflite", "face_auto"),
        face,
    )
    .with_normalization(Normalization::MINUS_ONE_TO_ONE);
    assert_eq!(kept.crop, InputCrop::Full);
    assert_eq!(kept.conv_cache, ConvCache::default());
    assert_eq!(
        ConvCache::default(),
        ConvCache::auto(),
        "the default is Auto"
    );
    // The default's decision with the expiry by runs (see above).
    app.world_mut()
        .spawn(kept.with_conv_cache(ConvCache::Auto(by_runs)));

    let roi = app
        .world_mut()
        .spawn(RegionOfInterest {
            frame_index: 0,
            crop: Crop {
                transform: CropTransform::rect(0.25, 0.25, 0.75, 0.75),
                border: Border::Clamp,
            },
        })
        .id();
    let identity = common::add_model(app, common::identity_graph(32, 32));
    // The default, as `Dnn::new` makes it.
    app.world_mut()
        .spawn(Dnn::new(identity, face).with_crop(InputCrop::Roi(roi)));

    let dropped = load_as(app, "face_detection_short_range.tflite", "face_dropped");
    app.world_mut().spawn(
        Dnn::new(dropped, face)
            .with_normalization(Normalization::MINUS_ONE_TO_ONE)
            .with_conv_cache(ConvCache::Auto(ConvCacheConfig {
                expiry_runs: 1,
                ..by_runs
            })),
    );
}

/// Updates `app` until both cached models have [`RUNS`] cached runs and the other two two
/// results; returns the index in `common::Results` from which the palm detector's results come
/// from its guarded model (the one with the cache), if its guard decided.
fn run_until_cached(app: &mut App, palm: Entity) -> Option<usize> {
    let cache_runs = |app: &App, name: &str| stats_of(app, name).map_or(0, |m| m.cache_runs);
    let results = |app: &App, name: &str| stats_of(app, name).map_or(0, |m| m.results);
    let mut palm_guarded_from = None;
    common::run_until(app, TIMEOUT, |app| {
        if palm_guarded_from.is_none()
            && app
                .world()
                .get::<GuardStatus>(palm)
                .is_some_and(|g| matches!(g, GuardStatus::Decided(_)))
        {
            palm_guarded_from = Some(app.world().resource::<common::Results>().0.len());
        }
        cache_runs(app, "palm_detection_lite") >= RUNS
            && cache_runs(app, "face_auto") >= RUNS
            && results(app, "identity") >= 2
            && results(app, "face_dropped") >= 2
    });
    palm_guarded_from
}

/// Prints each model's cache statistics.
fn print_cache_stats(stats: &HeimdallStats) {
    for (name, m) in &stats.models {
        println!(
            "{name}: {} results, {} cached runs, {} cached ops, mean hit rate {:.3}, mean dirty \
             blocks {:.3}; {:?}",
            m.results,
            m.cache_runs,
            m.cached_ops,
            m.cache_hit_rate_mean,
            m.cache_dirty_block_rate_mean,
            m.cache_decision
        );
    }
}

/// Forced on: the palm detector's cached runs hit the still frame, in its stats and `json`.
fn check_forced(stats: &HeimdallStats, json: &serde_json::Value) {
    let m = &stats.models["palm_detection_lite"];
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
    let decision = m.cache_decision.as_deref().unwrap_or_default();
    assert!(decision.starts_with("on (forced)"), "{decision}");
    let c = &json["models"]["palm_detection_lite"]["conv_cache"];
    assert_eq!(c["runs"], m.cache_runs);
    assert!(c["hit_rate_mean"].as_f64().unwrap() > 0.5, "{c}");
}

/// (a) The default on a full frame: kept by the calibration, and hit on the still frame.
fn check_kept(stats: &HeimdallStats, json: &serde_json::Value) {
    let m = &stats.models["face_auto"];
    let decision = m.cache_decision.as_deref().unwrap_or_default();
    assert!(decision.starts_with("kept: "), "{decision}");
    assert!(m.cached_ops > 0, "no op is cached");
    assert!(m.cache_runs >= RUNS, "only {} cached runs", m.cache_runs);
    assert!(
        m.cache_hit_rate_mean > 0.5,
        "mean hit rate {} on a still camera",
        m.cache_hit_rate_mean
    );
    let c = &json["models"]["face_auto"]["conv_cache"];
    assert_eq!(c["decision"], decision);
    assert!(c["hit_rate_mean"].as_f64().unwrap() > 0.5, "{c}");
}

/// (b) The default on a region of interest: no cache, and it runs.
fn check_roi_has_none(stats: &HeimdallStats) {
    let m = &stats.models["identity"];
    let decision = m.cache_decision.as_deref().unwrap_or_default();
    assert!(
        decision.starts_with("off: ") && decision.contains("region of interest"),
        "{decision}"
    );
    assert!(m.results >= 2);
    assert_eq!((m.cache_runs, m.cached_ops), (0, 0));
}

/// (c) Where a still scene cannot reuse anything: calibrated, then dropped.
fn check_dropped(stats: &HeimdallStats, json: &serde_json::Value) {
    let m = &stats.models["face_dropped"];
    let decision = m.cache_decision.as_deref().unwrap_or_default();
    assert!(
        decision.starts_with("dropped: ") && decision.contains("break-even"),
        "{decision}"
    );
    assert!(m.results >= 2, "{} results", m.results);
    assert_eq!((m.cache_runs, m.cached_ops), (0, 0), "the cache is gone");
    let c = &json["models"]["face_dropped"]["conv_cache"];
    assert_eq!(c["decision"], decision);
    assert_eq!(c["runs"], 0);
}

/// The palm detector's results from index `from` of `common::Results` on (its cached runs): the
/// last one's outputs are the first one's, within 1e-3.
fn check_outputs_match_first(app: &App, palm: Entity, from: usize) {
    let palm_results: Vec<_> = app.world().resource::<common::Results>().0[from..]
        .iter()
        .filter(|r| r.entity == palm)
        .collect();
    assert!(palm_results.len() >= 2, "{} results", palm_results.len());
    let (first, last) = (
        &palm_results[0].output.tensors,
        &palm_results[palm_results.len() - 1].output.tensors,
    );
    let worst = first
        .iter()
        .zip(last.iter())
        .flat_map(|(a, b)| a.iter().zip(b).map(|(x, y)| (x - y).abs()))
        .fold(0.0f32, f32::max);
    assert!(worst <= 1e-3, "outputs differ by {worst}");
}
