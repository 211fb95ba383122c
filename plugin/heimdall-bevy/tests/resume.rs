//! An offloaded inference keeps what the GPU computed: when the coordinator moves a model to the
//! CPU while the GPU is part way through one of its inferences, the CPU goes on from the GPU's
//! activations at the step reached (downloaded after that frame's chunks) instead of starting
//! again from the input. The frames leave the DNN a GPU budget of about half a millisecond (30 Hz
//! with a 32.8 ms margin: each of its inferences, 2 a second, spreads over several frames), then
//! none (32 Hz), and the inference the GPU has part way goes on on the CPU at once.
//!
//! The move is made by the rule the placement planner replaced (`PlacementRule::OffloadRule`),
//! which keeps a model on the GPU while it has a budget and moves it only when the budget goes.
//! The planner would move this model to the CPU as soon as it is placed (a 2 Hz chain that the
//! GPU spreads over several frames at this budget and a CPU slot runs in well under a millisecond), so
//! an inference would rarely be part way on the GPU when the budget goes: the test would depend
//! on timing. What is tested here is the plugin's resume, which is the same for both rules.
//!
//! The model is a chain of exact multiplications (identity in f32) on frames whose index is
//! written into their pixels: a resumed result decodes to the frame it is stamped with only if
//! the CPU took over that inference's own activations, whole and in place.

mod common;

use std::time::Duration;

use bevy::prelude::*;
use bevy::render::RenderApp;
use common::{DecodedIndex, FrameIndexDecoder};
use heimdall_bevy::prelude::*;

/// One result of a DNN under test.
struct Outcome {
    dnn: Entity,
    index: DecodedIndex,
    /// The frame it is stamped with.
    frame: u64,
    /// The step the CPU resumed from.
    from: Option<usize>,
    backend: Backend,
    /// When its frame was captured (the request's frame) and how long until the result.
    capture: Duration,
    latency: Duration,
}

/// Every result, in order.
#[derive(Resource, Default)]
struct Seen(Vec<Outcome>);

#[test]
fn an_offloaded_inference_goes_on_from_the_gpus_step() {
    if common::skip_gpu() {
        common::skipping("HEIMDALL_SKIP_GPU=1");
        return;
    }
    let (h, w) = (48usize, 64usize);
    let mut app = offload_app();
    let scales: Vec<f32> = [2.0, 0.5].repeat(20);
    let model = common::add_model(&mut app, common::scale_graph("chain", h, w, &scales));
    let camera = app
        .world_mut()
        .spawn(common::synthetic_camera(w as u32, h as u32))
        .id();
    // The budget goes while an inference is part way on the GPU: its chunks take a few frames
    // from its request, on the grid of the request period. Each attempt is a new DNN (registered
    // anew, so it starts on the GPU while there is a budget) aimed a little later into its
    // next inference, until one resumes: a slow frame can still put the move between two.
    let mut attempts = 0;
    let mut dnn = Entity::PLACEHOLDER;
    while resumed(&app) == 0 && attempts < ATTEMPTS {
        attempts += 1;
        dnn = attempt_resume(&mut app, model.clone(), camera, attempts);
    }
    check_results(&app, dnn, attempts, scales.len());
}

/// The headless app of the test, collecting results in [`Seen`]: f32, no guard, offload by the
/// rule the planner replaced, at [`CALM_HZ`] with a 32.8 ms margin.
fn offload_app() -> App {
    // At 30 Hz a 32 ms margin leaves the DNNs about 1 ms of GPU a frame: the model runs on the
    // GPU, a few steps a frame. At 32 Hz it leaves none: the planner moves the model to the CPU
    // at once, with the inference the GPU has part way.
    let settings = HeimdallSettings {
        frame_rate: FrameRateTarget::Fixed(CALM_HZ),
        margin_ms: 32.8,
        relaxation_ms: 0.0,
        precision: heimdall_gpu::Precision::F32,
        guard: None,
        offload: true,
        placement_rule: PlacementRule::OffloadRule,
        ..default()
    };
    let mut app = common::headless_app(settings);
    app.init_resource::<Seen>();
    app
}

/// How many results so far were resumed on the CPU from a GPU step.
fn resumed(app: &App) -> usize {
    app.world()
        .resource::<Seen>()
        .0
        .iter()
        .filter(|s| s.from.is_some())
        .count()
}

/// Attempt number `attempt`: a new DNN of `model` on `camera`, run on the GPU, then the budget
/// taken away part way into an inference; a DNN whose attempt missed is despawned. Returns it.
fn attempt_resume(
    app: &mut App,
    model: Handle<DnnModel>,
    camera: Entity,
    attempt: usize,
) -> Entity {
    set_rate(app, CALM_HZ);
    let dnn = spawn_dnn(app, model, camera);
    let before = app.world().resource::<Seen>().0.len();
    let on_gpu = |app: &App| {
        app.world().resource::<Seen>().0[before..]
            .iter()
            .filter(|s| s.backend == Backend::Gpu)
            .count()
    };
    common::run_until(app, Duration::from_secs(20), |app| on_gpu(app) >= 2);
    // The next inference is requested a period after this one's frame and its GPU chunks
    // end a little before its latency (which adds the readback): the budget goes a
    // fraction of that latency into it.
    let last = app.world().resource::<Seen>().0[before..]
        .iter()
        .rfind(|s| s.backend == Backend::Gpu)
        .map(|s| (s.capture, s.latency));
    let Some((capture, latency)) = last else {
        app.world_mut().despawn(dnn);
        return dnn;
    };
    let into = latency.mul_f64(AIM[attempt % AIM.len()]);
    let at = capture + REQUEST + into;
    let clock = *app.world().resource::<HeimdallClock>();
    common::run_until(app, REQUEST * 2, |_| clock.elapsed() >= at);
    set_rate(app, CONTENDED_HZ);
    let before = app.world().resource::<Seen>().0.len();
    // A resume comes with the next result; without one, the attempt has missed.
    common::run_until(app, Duration::from_secs(20), |app| {
        let n = app.world().resource::<Seen>().0.len() - before;
        (resumed(app) >= 1 && n >= 10) || (resumed(app) == 0 && n >= 4)
    });
    if resumed(app) == 0 {
        app.world_mut().despawn(dnn);
        app.update();
    }
    dnn
}

/// Every result of the last DNN `dnn` is decoded, each to the frame it is stamped with; some were
/// resumed, on the CPU, from a step inside the chain of `chain_len` scales; the stats count them.
fn check_results(app: &App, dnn: Entity, attempts: usize, chain_len: usize) {
    let seen = &app.world().resource::<Seen>().0;
    let of_last = |e: Entity| e == dnn;
    let results = app.world().resource::<common::Results>().0.iter();
    assert_eq!(
        results.filter(|r| of_last(r.entity)).count(),
        seen.iter().filter(|s| of_last(s.dnn)).count(),
        "every result decodes to a frame index (a resumed one from the right activations)"
    );
    for s in seen {
        assert_eq!(
            u64::from(s.index.decoded),
            s.frame,
            "stamped {}, computed from frame {} (resumed from {:?})",
            s.frame,
            s.index.decoded,
            s.from
        );
        if s.from.is_some() {
            assert_eq!(s.backend, Backend::Cpu);
        }
    }
    let steps: Vec<usize> = seen.iter().filter_map(|s| s.from).collect();
    eprintln!(
        "{} results in {attempts} attempt(s), resumed from steps {steps:?}",
        seen.len()
    );
    assert!(
        !steps.is_empty(),
        "no inference was resumed from the GPU's step in {attempts} attempts ({} results)",
        seen.len()
    );
    assert!(steps.iter().all(|&k| k > 0 && k < chain_len + 2));
    let stats = app.world().resource::<HeimdallStats>();
    let counted: usize = stats.models.values().map(|m| m.resumed_from_gpu).sum();
    assert_eq!(counted, steps.len());
}

/// New DNNs tried before the test gives up on seeing a resume.
const ATTEMPTS: usize = 24;
/// How far into an inference's latency the budget goes, by attempt.
const AIM: [f64; 3] = [0.15, 0.25, 0.4];
/// The DNN's request interval: rare enough that its GPU share never makes the planner move it
/// while the frames leave it a budget.
const REQUEST: Duration = Duration::from_millis(500);
/// The frame rate with a GPU budget for the DNN, and the one without.
const CALM_HZ: f64 = 30.0;
const CONTENDED_HZ: f64 = 32.0;

/// The render world's frame rate target (the coordinator's budget follows it each frame).
fn set_rate(app: &mut App, hz: f64) {
    app.sub_app_mut(RenderApp)
        .world_mut()
        .resource_mut::<HeimdallSettings>()
        .frame_rate = FrameRateTarget::Fixed(hz);
}

/// The DNN under test, its results collected in [`Seen`].
fn spawn_dnn(app: &mut App, model: Handle<DnnModel>, camera: Entity) -> Entity {
    app.world_mut()
        .spawn(
            Dnn::new(model, camera)
                .with_decoder(FrameIndexDecoder)
                .with_request(RequestMode::Every(REQUEST))
                .with_conv_cache(ConvCache::Off),
        )
        .observe(
            |r: On<DnnResult>, q: Query<&DecodedIndex>, mut seen: ResMut<Seen>| {
                let index = q
                    .get(r.entity)
                    .expect("the decoder's component is in place");
                let o = &r.output;
                seen.0.push(Outcome {
                    dnn: r.entity,
                    index: *index,
                    frame: o.frame_index,
                    from: o.resumed_from_step,
                    backend: o.backend,
                    capture: o.capture_time,
                    latency: o.latency,
                });
            },
        )
        .id()
}
