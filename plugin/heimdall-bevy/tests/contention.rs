//! Under GPU contention no DNN starves (issue 34): the scene leaves the GPU no budget at all
//! (30 Hz with a 40 ms safety margin: `period - render - margin` is below zero whatever the
//! scene takes), and three DNNs asking for 10 Hz each still answer, every one of them on the
//! CPU slots the plugin sized to this host (`HeimdallSettings::cpu_workers` left at `None`), at
//! least half the rate they ask for; `stats.json` says where each ran and that none runs short.
//!
//! Before the placement planner, the coordinator moved at most one model a second to the CPU,
//! only while one of its two workers was free: the third DNN stayed on a GPU that had no budget
//! for it and got a step now and then (a fraction of a hertz), on the GPU. Checked on this
//! branch (2026-12-02) by putting that rule back in the plugin's coordinator
//! (`cfg.placement.rule = PlacementRule::OffloadRule` in `Scheduler::new`): face detection moved
//! to the CPU at 10 Hz, selfie segmentation and hand landmarks stayed on the GPU at 0.7 and
//! 0.5 Hz, and the test failed ("selfie_segmentation answered at 0.7 Hz with no GPU budget").
//!
//! The bundled small models (face detection 128×128, selfie segmentation 256×256, hand
//! landmarks 224×224) on a 128×96 synthetic camera; a CPU inference of each takes a few
//! milliseconds on this 2-core machine, so one slot (2 cores less the app's threads) holds the
//! three at 10 Hz with room to spare.

mod common;

use std::time::{Duration, Instant};

use bevy::prelude::*;
use heimdall_bevy::prelude::*;

/// The request interval of each DNN (10 Hz).
const REQUEST: Duration = Duration::from_millis(100);
/// The least rate each DNN must answer at, Hz: half what it asks for.
const MIN_HZ: f64 = 5.0;
/// How long the rates are measured, once every DNN answers.
const WINDOW: Duration = Duration::from_secs(4);

const MODELS: [&str; 3] = [
    "face_detection_short_range",
    "selfie_segmentation",
    "hand_landmark_lite",
];

#[test]
fn with_no_gpu_budget_every_dnn_answers_on_the_cpu() {
    if common::skip_gpu() {
        eprintln!("HEIMDALL_SKIP_GPU=1: skipping");
        return;
    }
    let settings = HeimdallSettings {
        frame_rate: FrameRateTarget::Fixed(30.0),
        // 33.3 ms - render - 40 ms: no GPU budget in any frame.
        margin_ms: 40.0,
        relaxation_ms: 0.0,
        precision: heimdall_gpu::Precision::F32,
        guard: None,
        ..default()
    };
    let mut app = common::headless_app(settings);
    let camera = app
        .world_mut()
        .spawn(common::synthetic_camera(128, 96))
        .id();
    let dnns: Vec<Entity> = MODELS
        .iter()
        .map(|name| {
            let model = common::load_model(&app, format!("models/{name}.tflite"));
            app.world_mut()
                .spawn(
                    Dnn::new(model, camera)
                        .with_request(RequestMode::Every(REQUEST))
                        .with_conv_cache(ConvCache::Off),
                )
                .id()
        })
        .collect();
    // Compiled (lavapipe compiles slowly), placed, and answering.
    common::run_until(&mut app, Duration::from_secs(300), |app| {
        dnns.iter().all(|&d| common::results_of(app, d) >= 3)
    });
    for &d in &dnns {
        assert!(
            common::results_of(&app, d) >= 3,
            "{:?} never answered ({:?})",
            app.world().get::<DnnStatus>(d),
            common::results_of(&app, d)
        );
    }
    let before = app.world().resource::<common::Results>().0.len();
    let start = Instant::now();
    common::run_until(&mut app, WINDOW + Duration::from_secs(1), |_| {
        start.elapsed() >= WINDOW
    });
    let secs = start.elapsed().as_secs_f64();
    let window = &app.world().resource::<common::Results>().0[before..];
    let stats = app.world().resource::<HeimdallStats>().to_json(
        app.world().resource::<HeimdallSettings>(),
        "gpu",
        0,
    );
    // Every DNN's figures first, then the checks.
    let rows: Vec<(&str, f64, usize)> = dnns
        .iter()
        .zip(MODELS)
        .map(|(&d, name)| {
            let of = || window.iter().filter(|r| r.entity == d);
            let hz = of().count() as f64 / secs;
            let on_gpu = of().filter(|r| r.output.backend == Backend::Gpu).count();
            let m = &stats["models"][name];
            eprintln!(
                "{name}: {hz:.1} Hz in the window ({on_gpu} on the GPU); placement {}, \
                 granted {} of {} Hz, shortfall {}",
                m["placement"], m["granted_rate_hz"], m["requested_rate_hz"], m["shortfall"]
            );
            (name, hz, on_gpu)
        })
        .collect();
    for &(name, hz, on_gpu) in &rows {
        assert!(
            hz >= MIN_HZ,
            "{name} answered at {hz:.1} Hz with no GPU budget, asked for 10"
        );
        assert_eq!(
            on_gpu, 0,
            "{name}: the GPU has no budget; every result from the CPU"
        );
        let m = &stats["models"][name];
        assert_eq!(m["placement"]["processor"], "cpu", "{name}: {m}");
        assert!(
            m["shortfall"].is_null(),
            "{name} runs short: {}",
            m["shortfall"]
        );
    }
    // The slots the plugin sized: the cores this test may use, less the two kept for the app's
    // own threads (at least one).
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(stats["cpu_slots"], cores.saturating_sub(2).max(1));
    assert_eq!(
        stats["cpu_slots"],
        heimdall_bevy::settings::auto_cpu_slots(cores)
    );
}
