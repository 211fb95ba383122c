//! CPU work goes out the moment a worker finishes, not only at the render world's next decision
//! (`HeimdallSettings::cpu_on_completion`, `render/cpu_lane.rs`).
//!
//! One CPU slot, no GPU budget (20 Hz with a 60 ms margin), frames paced at 20 Hz, and three
//! face detectors asking for an inference every frame (a few milliseconds each on the CPU here).
//! Decided once per frame, the one slot takes one inference a frame: the three share 20 Hz,
//! about 6.7 Hz each, with the slot idle most of the frame. Handed out as the slot frees, the
//! three run back to back in each frame: each answers at nearly the frame rate. The same app
//! runs both ways, per frame first, then on completion (the setting is read every frame). Each
//! way's window is recorded (`HeimdallRecording`): the scenario says how CPU work went out
//! (`cpu_dispatch_on_completion`), so that `heimdall simulate` models the run as it was.

mod common;

use std::time::{Duration, Instant};

use bevy::prelude::*;
use bevy::render::RenderApp;
use heimdall_bevy::prelude::*;

/// The frame rate, as the coordinator plans it and as the test paces its updates.
const HZ: f64 = 20.0;
/// How long each way is measured.
const WINDOW: Duration = Duration::from_secs(4);
const DNNS: usize = 3;

#[test]
fn cpu_work_goes_out_when_a_worker_finishes() {
    if common::skip_gpu() {
        eprintln!("HEIMDALL_SKIP_GPU=1: skipping");
        return;
    }
    let settings = HeimdallSettings {
        cpu_on_completion: false,
        ..one_slot_no_gpu_budget()
    };
    let (mut app, dnns) = detectors(
        settings,
        "models/face_detection_short_range.tflite",
        DNNS,
        |_| {},
    );
    let (per_frame, fps_per_frame, scenario) = rates_and_frames(&mut app, &dnns);
    let recorded_per_frame = on_completion(&scenario);

    app.sub_app_mut(RenderApp)
        .world_mut()
        .resource_mut::<HeimdallSettings>()
        .cpu_on_completion = true;
    paced(&mut app, Duration::from_secs(1));
    let (completion_hz, fps, scenario) = rates_and_frames(&mut app, &dnns);
    let recorded_on_completion = on_completion(&scenario);

    eprintln!(
        "per frame: {per_frame:.1?} Hz (sum {:.1}) at {fps_per_frame:.1} fps; on completion: \
         {completion_hz:.1?} Hz at {fps:.1} fps",
        per_frame.iter().sum::<f64>()
    );
    assert_eq!(
        (recorded_per_frame, recorded_on_completion),
        (false, true),
        "the recordings' cpu_dispatch_on_completion"
    );
    // Per frame, the slot runs one inference a frame (within the pacing's jitter). Both are
    // held to the frames the window actually ran: paced at [`HZ`], a busy host (lavapipe
    // drawing on the same two cores) runs fewer, and no DNN can answer more often than that.
    assert!(
        per_frame.iter().sum::<f64>() <= 1.15 * fps_per_frame,
        "per frame: {per_frame:?} Hz at {fps_per_frame} fps"
    );
    // On completion, each DNN gets most frames' inference.
    for hz in &completion_hz {
        assert!(
            *hz >= 0.7 * fps,
            "on completion: {completion_hz:?} Hz at {fps} fps"
        );
    }
    // Where the CPU runs' time went (`stats.json`'s `cpu_runs`): each DNN's inferences ran on
    // the CPU model, on one thread (no pool, so no parts), each measured from its queue to its
    // ops, the ops of a whole inference taking longer than nothing and at most its latency, the
    // caller on a core for some of it.
    let stats = app.world().resource::<HeimdallStats>();
    assert_eq!(stats.models.len(), DNNS, "{:?}", stats.models.keys());
    for (name, m) in &stats.models {
        let r = &m.cpu_runs;
        // A result reaches the main world straight from its worker, the run's times with the
        // render world's next drain of the workers' reports: the last few may still travel.
        assert!(
            m.cpu_results > 0 && r.count + 2 * DNNS >= m.cpu_results,
            "{name}: {} runs, {} results from the CPU",
            r.count,
            m.cpu_results
        );
        assert_eq!(r.threads, 1, "{name}");
        assert_eq!((r.pool.jobs, r.caller_parts_share.len()), (0, 0), "{name}");
        assert!(
            !r.whole_run_ms.is_empty(),
            "{name}: no whole inference measured"
        );
        let median = |v: &[f64]| {
            let mut v = v.to_vec();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (run, latency) = (median(&r.whole_run_ms), median(&m.latencies_ms));
        assert!(
            run > 0.0 && run <= latency,
            "{name}: ops {run} ms, latency {latency} ms"
        );
        assert_eq!(r.prepare_ms.len(), r.queued_ms.len(), "{name}");
        if cfg!(target_os = "linux") {
            assert!(
                !r.caller_on_cpu_share.is_empty(),
                "{name}: no scheduler statistics"
            );
            assert!(median(&r.caller_on_cpu_share) > 0.0, "{name}: {r:?}");
        }
    }
}

/// How long the render world's frame draws after the DNN work is encoded, in the test below (a
/// scene and a present that take most of a frame, as a phone's do).
const DRAW: Duration = Duration::from_millis(40);
/// Palm detectors in the test below (a few milliseconds each on one core here: together more
/// than the time between two render frames, less than [`DRAW`]).
const DRAWN_DNNS: usize = 4;

/// A CPU slot freed while the render world draws its frame takes the next piece at once: the
/// coordinator is lent to the CPU workers from the end of the frame's DNN encoding
/// (`HeimdallSettings::cpu_lend_after_encode`), not only from the end of the render frame.
///
/// One slot, no GPU budget, four palm detectors asking every frame, and a render world whose
/// frame spends [`DRAW`] after its DNN work is encoded (a system in `RenderSystems::Render`).
/// Lent only between render frames (the recording's `cpu_lend_ms` well under [`DRAW`]), a piece
/// that ends while the frame is drawn leaves the slot idle until the frame ends, so the four
/// fall behind the frame rate. Lent from the encoding on (`cpu_lend_ms` over [`DRAW`]), the slot
/// runs the four back to back while the frame is drawn: each answers at nearly the frame rate.
/// The same app runs both ways, the old one first.
#[test]
fn a_worker_that_finishes_while_the_frame_is_drawn_gets_work_at_once() {
    if common::skip_gpu() {
        eprintln!("HEIMDALL_SKIP_GPU=1: skipping");
        return;
    }
    let settings = HeimdallSettings {
        cpu_on_completion: true,
        cpu_lend_after_encode: false,
        ..one_slot_no_gpu_budget()
    };
    let (mut app, dnns) = detectors(
        settings,
        "models/palm_detection_lite.tflite",
        DRAWN_DNNS,
        |app| {
            app.sub_app_mut(RenderApp).add_systems(
                bevy::render::Render,
                (|| std::thread::sleep(DRAW)).in_set(bevy::render::RenderSystems::Render),
            );
        },
    );
    let (at_frame_end, fps_end, before) = rates_and_frames(&mut app, &dnns);
    app.sub_app_mut(RenderApp)
        .world_mut()
        .resource_mut::<HeimdallSettings>()
        .cpu_lend_after_encode = true;
    paced(&mut app, Duration::from_secs(1));
    let (after_encode, fps, after) = rates_and_frames(&mut app, &dnns);
    let draw_ms = DRAW.as_secs_f64() * 1000.0;
    eprintln!(
        "lent at the frame's end ({:.1} ms a frame): {at_frame_end:.1?} Hz at {fps_end:.1} fps; \
         from the encoding ({:.1} ms): {after_encode:.1?} Hz at {fps:.1} fps",
        lend_ms(&before),
        lend_ms(&after)
    );
    assert!(on_completion(&before) && on_completion(&after));
    assert!(
        lend_ms(&before) < 0.5 * draw_ms && lend_ms(&after) > draw_ms,
        "lent {} then {} ms a frame",
        lend_ms(&before),
        lend_ms(&after)
    );
    for hz in &after_encode {
        assert!(
            *hz >= 0.7 * fps,
            "lent from the encoding: {after_encode:?} Hz at {fps} fps"
        );
    }
    let (old, new) = (
        at_frame_end.iter().sum::<f64>() / fps_end,
        after_encode.iter().sum::<f64>() / fps,
    );
    assert!(
        new > old,
        "inferences a frame: {old} lent at the frame's end, {new} from the encoding"
    );
}

/// One CPU slot and no GPU budget (50 ms - render - 60 ms) at [`HZ`], f32, no guard.
fn one_slot_no_gpu_budget() -> HeimdallSettings {
    HeimdallSettings {
        frame_rate: FrameRateTarget::Fixed(HZ),
        margin_ms: 60.0,
        relaxation_ms: 0.0,
        precision: heimdall_gpu::Precision::F32,
        guard: None,
        cpu_workers: Some(1),
        ..default()
    }
}

/// A headless app with `settings` (and `setup` run on it) and `n` DNNs of `model` on one
/// synthetic camera, each having answered three times, paced from the start: the DNNs' request
/// rate is the frame rate (unpaced, the loop would ask for hundreds of inferences a second and
/// the coordinator would cut their rates).
fn detectors(
    settings: HeimdallSettings,
    model: &str,
    n: usize,
    setup: impl FnOnce(&mut App),
) -> (App, Vec<Entity>) {
    let mut app = common::headless_app(settings);
    app.init_resource::<Record>()
        .add_systems(Update, ask_for_the_recording);
    setup(&mut app);
    let camera = app
        .world_mut()
        .spawn(common::synthetic_camera(128, 96))
        .id();
    let model = common::load_model(&app, model.to_string());
    let dnns: Vec<Entity> = (0..n)
        .map(|_| {
            app.world_mut()
                .spawn(Dnn::new(model.clone(), camera).with_conv_cache(ConvCache::Off))
                .id()
        })
        .collect();
    let start = Instant::now();
    while !dnns.iter().all(|&d| common::results_of(&app, d) >= 3) {
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "the DNNs never answered"
        );
        paced(&mut app, Duration::from_millis(200));
    }
    (app, dnns)
}

/// Updates `app` every `1 / HZ` (or as fast as its frames allow, when slower) for `d`; returns
/// how many updates ran.
fn paced(app: &mut App, d: Duration) -> usize {
    let start = Instant::now();
    let period = Duration::from_secs_f64(1.0 / HZ);
    let mut next = start;
    let mut frames = 0;
    while start.elapsed() < d {
        app.update();
        frames += 1;
        if let Some(exit) = app.should_exit() {
            panic!("the app asked to exit ({exit:?})");
        }
        next = (next + period).max(Instant::now() - period);
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    frames
}

/// Each DNN's results per second over [`WINDOW`] of paced frames, every one from the CPU, the
/// window's frames per second and its recorded scenario.
fn rates_and_frames(app: &mut App, dnns: &[Entity]) -> (Vec<f64>, f64, serde_json::Value) {
    app.world_mut().resource_mut::<Record>().start = true;
    let before = app.world().resource::<common::Results>().0.len();
    let start = Instant::now();
    let frames = paced(app, WINDOW);
    let secs = start.elapsed().as_secs_f64();
    let window = &app.world().resource::<common::Results>().0[before..];
    assert!(
        window.iter().all(|r| r.output.backend == Backend::Cpu),
        "no GPU budget: every result from the CPU"
    );
    let hz = dnns
        .iter()
        .map(|&d| window.iter().filter(|r| r.entity == d).count() as f64 / secs)
        .collect();
    app.world_mut().resource_mut::<Record>().export = true;
    let mut run = None;
    for _ in 0..100 {
        app.update();
        run = app.world_mut().resource_mut::<HeimdallRecording>().take();
        if run.is_some() {
            break;
        }
    }
    let run = run.expect("the recording never arrived");
    let scenario: serde_json::Value = serde_json::from_str(&run.scenario_json).unwrap();
    (hz, frames as f64 / secs, scenario)
}

/// The recording's `cpu_dispatch_on_completion`.
fn on_completion(scenario: &serde_json::Value) -> bool {
    scenario
        .get("cpu_dispatch_on_completion")
        .is_some_and(|v| v == true)
}

/// The recording's `cpu_lend_ms`: how long the coordinator was lent to the workers each frame.
fn lend_ms(scenario: &serde_json::Value) -> f64 {
    scenario
        .get("cpu_lend_ms")
        .and_then(|v| v.as_f64())
        .unwrap_or(0.0)
}

/// What the test asks of the recording at the next update (the plugin reads
/// `HeimdallRecording`'s requests in the update they are made).
#[derive(Resource, Default)]
struct Record {
    start: bool,
    export: bool,
}

fn ask_for_the_recording(mut ask: ResMut<Record>, mut recording: ResMut<HeimdallRecording>) {
    if std::mem::take(&mut ask.start) {
        recording.start();
    }
    if std::mem::take(&mut ask.export) {
        recording.request();
    }
}
