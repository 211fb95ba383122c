//! Helpers of the accuracy guard's tests (`f16_guard*.rs`): a camera showing the bundled
//! astronaut photo, the reference output of the overflow graph (the identity: its f32 result is
//! the preprocessed input, exactly), and waiting for guarded results.
#![allow(dead_code)]

use std::collections::HashMap;
use std::time::Duration;

use bevy::prelude::*;
use heimdall_bevy::prelude::*;
use heimdall_gpu::Precision;
use heimdall_vision::RgbaImage;
use heimdall_vision::image::resample;

use crate::common;
use crate::decoders_support as support;

/// The f16 bound of the guard's default settings and the golden suites.
pub const BOUND: f64 = heimdall_gpu::guard::DEFAULT_BOUND;
/// The floor of the error's denominator (RMS per value), as the guard's default.
pub const FLOOR: f64 = heimdall_gpu::guard::DEFAULT_FLOOR_RMS;
/// The side of the test models' input.
pub const SIDE: usize = 32;

/// The photo the camera shows.
pub fn photo() -> RgbaImage {
    support::image("astronaut.png")
}

/// The photo as the models' `[SIDE, SIDE, 3]` input in [0, 1] (the full-frame crop), by the CPU
/// preprocessing: the f32 output of the overflow graph and of the identity graph.
pub fn reference() -> Vec<f32> {
    let p = photo();
    resample(
        &p.data,
        p.width as usize,
        p.height as usize,
        &Crop::FULL,
        &Normalization::ZERO_TO_ONE,
        [SIDE, SIDE, 3],
    )
    .expect("resample")
}

/// The floored relative L2 error of `out` against [`reference`].
pub fn error(out: &[f32]) -> f64 {
    heimdall_gpu::guard::output_error(out, &reference(), FLOOR)
}

/// A DNN's guard status.
pub fn guard_of(app: &App, e: Entity) -> GuardStatus {
    app.world()
        .get::<GuardStatus>(e)
        .cloned()
        .unwrap_or_default()
}

/// The storage precision of the model `e` runs now.
pub fn precision_of(app: &mut App, e: Entity) -> Option<Precision> {
    let render = app.sub_app(bevy::render::RenderApp).world();
    heimdall_bevy::render::compiled_precision(render, e)
}

/// What a DNN went through while [`run_until_guarded`] watched it.
#[derive(Debug, Default, Clone)]
pub struct Watched {
    /// Every guard state it showed, in order, without repeats.
    pub states: Vec<&'static str>,
    /// The precision of its running model while its guard was pending (each update).
    pub pending_precisions: Vec<Option<Precision>>,
    /// The index in `common::Results` from which its results come from the guarded model.
    pub decided_at: Option<usize>,
    /// Its first result computed by the guarded model, if any yet.
    pub guarded_result: Option<DnnResult>,
}

/// Updates `app` until every DNN of `dnns` is decided and has a result of its guarded model
/// (one whose inference started after the swap), or `timeout`.
pub fn run_until_guarded(
    app: &mut App,
    dnns: &[Entity],
    timeout: Duration,
) -> HashMap<Entity, Watched> {
    let mut watched: HashMap<Entity, Watched> =
        dnns.iter().map(|e| (*e, Watched::default())).collect();
    let start = std::time::Instant::now();
    while start.elapsed() < timeout {
        app.update();
        if let Some(exit) = app.should_exit() {
            panic!("the app asked to exit ({exit:?})");
        }
        let results = app.world().resource::<common::Results>().0.clone();
        for (&e, w) in watched.iter_mut() {
            let status = guard_of(app, e);
            if w.states.last() != Some(&status.state_name()) {
                w.states.push(status.state_name());
            }
            if matches!(status, GuardStatus::Pending | GuardStatus::Checking) {
                let p = precision_of(app, e);
                w.pending_precisions.push(p);
            }
            // The swap happens while the DNN is idle, and its status is sent before the next
            // inference starts: every result after this point is the guarded model's.
            if matches!(status, GuardStatus::Decided(_)) && w.decided_at.is_none() {
                w.decided_at = Some(results.len());
            }
            if let (Some(at), None) = (w.decided_at, &w.guarded_result) {
                w.guarded_result = results[at..].iter().find(|r| r.entity == e).cloned();
            }
        }
        if watched.values().all(|w| w.guarded_result.is_some()) {
            break;
        }
    }
    watched
}

/// The app of these tests (the decoder tests' settings: 30 fps, no CPU offload) with `settings`'
/// guard and store.
pub fn app(guard: Option<GuardConfig>, store: Option<std::path::PathBuf>) -> App {
    common::headless_app(HeimdallSettings {
        frame_rate: FrameRateTarget::Fixed(30.0),
        offload: false,
        guard,
        guard_store: store,
        ..default()
    })
}

/// Spawns a camera showing [`photo`] and returns it.
pub fn camera(app: &mut App) -> Entity {
    support::spawn_camera(app, photo()).0
}
