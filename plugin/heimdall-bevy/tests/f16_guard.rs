//! The f16 accuracy guard in a headless app on the GPU (lavapipe), with the plugin's defaults
//! (f16 storage, the guard on): one app (one app at a time: see `common::quiet_runtime_dir`)
//! with a camera showing a photo and three DNNs,
//!
//! - the overflow graph (`common::overflow_graph`: its second op's output exceeds f16's range
//!   wherever a pixel exceeds 1/16), calibrated on its first frame: it runs in f32 while
//!   pending, then the guard's decision (op 1 in f32, found by the search) replaces it; its
//!   results are within the f16 bound of the f32 result, which the model as asked misses
//!   (infinite error);
//! - the same graph calibrated on an image asset ([`Calibration::Image`]): the same decision;
//! - the same graph calibrated on an image that does not exist: the guard fails (with the
//!   reason, in its status and `stats.json`) and the DNN keeps running in f32;
//! - a model f16 holds (`common::scale_graph` with ×4, ×4, ×¼, ×¼: the identity in f32, stored
//!   in f16 within its rounding): it stays f16 as asked (no trial compile: one compile and one
//!   run of the guard), and its results are within the bound;
//!
//! then a second app with the guard off, where the overflow graph runs in f16 as asked and
//! misses the bound.

mod common;
mod decoders_support;
mod guard_support;

use std::time::Duration;

use bevy::prelude::*;
use guard_support as g;
use heimdall_bevy::prelude::*;
use heimdall_gpu::Precision;
use heimdall_gpu::guard::GuardDecision;

const TIMEOUT: Duration = Duration::from_secs(300);

/// The guarded app's four DNNs on the one camera.
struct Dnns {
    overflow: Entity,
    on_image: Entity,
    holds: Entity,
    missing: Entity,
}

#[test]
fn the_guard_repairs_an_overflowing_model_keeps_one_that_passes_and_without_it_f16_misses() {
    if common::skip_gpu() {
        common::skipping("HEIMDALL_SKIP_GPU=1");
        return;
    }
    let start = std::time::Instant::now();
    let mut app = g::app(Some(GuardConfig::default()), None);
    let Dnns {
        overflow,
        on_image,
        holds,
        missing,
    } = spawn_dnns(&mut app);
    assert_eq!(
        app.world()
            .get::<Dnn>(overflow)
            .map(|d| d.calibration.clone()),
        Some(Calibration::FirstFrame),
        "the default calibration is the first frame"
    );

    let watched = g::run_until_guarded(&mut app, &[overflow, on_image, holds], TIMEOUT);
    println!("guarded in {:.1} s", start.elapsed().as_secs_f64());
    for (name, e) in [
        ("overflow", overflow),
        ("overflow_image", on_image),
        ("holds", holds),
    ] {
        check_guarded(&mut app, name, e, &watched[&e]);
    }
    for e in [overflow, on_image] {
        check_search_switched_op_1(&app, e);
    }
    let d = g::guard_of(&app, holds)
        .decision()
        .cloned()
        .expect("decided");
    assert!(d.unchanged() && !d.whole_f32, "{d:#?}");
    assert_eq!(
        (d.trials, d.overrides.len()),
        (0, 0),
        "one compile, one run"
    );
    assert!(d.errors_before[0] <= g::BOUND);

    check_missing_image_fails(&mut app, missing);
    check_stats_json(&app, &d);
    drop(app);

    guard_off_misses();
    println!("total {:.1} s", start.elapsed().as_secs_f64());
}

/// Spawns the camera and the four DNNs of the module doc: the overflow graph calibrated on the
/// first frame and on an image, the model f16 holds, and the overflow graph on a missing image.
fn spawn_dnns(app: &mut App) -> Dnns {
    let camera = g::camera(app);
    let overflow = common::add_model(app, common::overflow_graph("overflow", g::SIDE, g::SIDE));
    let on_image = common::add_model(
        app,
        common::overflow_graph("overflow_image", g::SIDE, g::SIDE),
    );
    let holds = common::scale_graph("holds", g::SIDE, g::SIDE, &[4.0, 4.0, 0.25, 0.25]);
    let holds = common::add_model(app, holds);
    let image = app
        .world()
        .resource::<AssetServer>()
        .load("images/astronaut.png");
    let overflow = app.world_mut().spawn(Dnn::new(overflow, camera)).id();
    let on_image = app
        .world_mut()
        .spawn(Dnn::new(on_image, camera).with_calibration(Calibration::Image(image)))
        .id();
    let holds = app.world_mut().spawn(Dnn::new(holds, camera)).id();
    // A calibration image that does not exist: the guard fails, the DNN keeps running in f32.
    let missing = common::add_model(
        app,
        common::overflow_graph("overflow_missing", g::SIDE, g::SIDE),
    );
    let no_image = app
        .world()
        .resource::<AssetServer>()
        .load("images/no_such_image.png");
    let missing = app
        .world_mut()
        .spawn(Dnn::new(missing, camera).with_calibration(Calibration::Image(no_image)))
        .id();
    Dnns {
        overflow,
        on_image,
        holds,
        missing,
    }
}

/// Checks what the guarded DNN `e` (`name`) went through: f32 while pending, then decided
/// (not reused, passed), and a GPU result of its reduced-precision model within the bound.
fn check_guarded(app: &mut App, name: &str, e: Entity, w: &g::Watched) {
    let status = g::guard_of(app, e);
    println!("{name}: states {:?}; {status:?}", w.states);
    // Off until compiled, pending (in f32, waiting for its input), checking (still f32),
    // then decided: never a result of an unchecked f16 model. (A check shorter than an
    // update may not be seen as "checking".)
    let states: Vec<&str> = w
        .states
        .iter()
        .copied()
        .skip_while(|s| *s == "off")
        .filter(|s| *s != "checking")
        .collect();
    assert_eq!(states, ["pending", "decided"], "{name}: {:?}", w.states);
    assert!(
        w.states.iter().position(|s| *s == "checking")
            <= w.states.iter().position(|s| *s == "decided"),
        "{name}: {:?}",
        w.states
    );
    // The render world may swap in the update whose main world still shows pending: the
    // last pending update may see the guarded model already.
    let pending = &w.pending_precisions;
    assert!(
        pending.len() >= 2
            && pending[..pending.len() - 1]
                .iter()
                .all(|p| *p == Some(Precision::F32)),
        "{name}: while pending the model must run in f32: {pending:?}"
    );
    let GuardStatus::Decided(outcome) = status else {
        panic!("{name}: not decided: {status:?}");
    };
    let d = &outcome.decision;
    println!("{name}: {}", d.log_line(name));
    assert!(!outcome.reused && d.passed, "{name}: {d:#?}");
    // The guarded model runs now, in reduced precision (where the guard kept it).
    let p = g::precision_of(app, e);
    assert!(
        matches!(p, Some(Precision::F16 | Precision::PackedF16)),
        "{name}: {p:?}"
    );
    let result = w
        .guarded_result
        .as_ref()
        .unwrap_or_else(|| panic!("{name}: no result of the guarded model"));
    assert_eq!(result.output.backend, Backend::Gpu);
    let err = g::error(&result.output.tensors[0]);
    println!(
        "{name}: guarded result on frame {}: error {err:.2e}",
        result.output.frame_index
    );
    assert!(err <= g::BOUND, "{name}: error {err:.3e}");
}

/// Checks the decision on an overflow graph `e`: it misses the bound as asked and the search
/// ran exactly its overflowing op (op 1) in f32.
fn check_search_switched_op_1(app: &App, e: Entity) {
    let d = g::guard_of(app, e).decision().cloned().expect("decided");
    // As asked, f16 storage overflows (the model misses the bound without the guard) ...
    assert!(d.errors_before[0] > g::BOUND, "{:?}", d.errors_before);
    // ... and the search switched exactly the overflowing op to f32.
    assert_eq!(
        d.f32_ranges,
        std::iter::once(1..2).collect::<Vec<_>>(),
        "{d:#?}"
    );
    assert_eq!(d.overrides, vec![(1..2, Precision::F32)]);
    assert!(!d.whole_f32 && d.trials > 0, "{d:#?}");
    assert!(d.errors_after[0] <= 0.5 * g::BOUND, "{:?}", d.errors_after);
}

/// The missing calibration image: failed, with the reason; the DNN runs on in f32, within
/// the bound, and keeps delivering.
fn check_missing_image_fails(app: &mut App, missing: Entity) {
    let before = common::results_of(app, missing);
    common::run_until(app, TIMEOUT, |app| {
        matches!(g::guard_of(app, missing), GuardStatus::Failed(_))
            && common::results_of(app, missing) > before
    });
    let status = g::guard_of(app, missing);
    println!("overflow_missing: {status:?}");
    let GuardStatus::Failed(why) = status else {
        panic!("the missing image did not fail the guard: {status:?}");
    };
    assert!(why.contains("no_such_image.png"), "{why}");
    assert_eq!(g::precision_of(app, missing), Some(Precision::F32));
    let out = app.world().get::<DnnOutput>(missing).expect("a result");
    let err = g::error(&out.tensors[0]);
    assert!(err <= g::BOUND, "the f32 model: error {err:.3e}");
}

/// `stats.json`'s per-DNN section has the decisions (`holds`: the decision `d` of the model f16
/// holds) and the failure.
fn check_stats_json(app: &App, d: &GuardDecision) {
    let json =
        app.world()
            .resource::<HeimdallStats>()
            .to_json(&HeimdallSettings::default(), "gpu", 0);
    let guard = &json["models"]["overflow"]["guard"];
    println!("stats.json overflow.guard: {guard}");
    assert_eq!(guard["state"], "decided");
    assert_eq!(guard["reused"], false);
    assert_eq!(guard["decision"]["f32_ranges"], serde_json::json!([[1, 2]]));
    let failed = &json["models"]["overflow_missing"]["guard"];
    assert_eq!(failed["state"], "failed");
    assert!(failed["error"].as_str().is_some_and(|e| !e.is_empty()));
    assert_eq!(
        json["models"]["holds"]["guard"]["decision"]["summary"],
        serde_json::json!(d.summary())
    );
}

/// A second app with the guard off: the overflow graph runs in f16 storage as asked, and misses.
fn guard_off_misses() {
    let mut app = g::app(None, None);
    let camera = g::camera(&mut app);
    let overflow = common::add_model(
        &mut app,
        common::overflow_graph("overflow", g::SIDE, g::SIDE),
    );
    let overflow = app.world_mut().spawn(Dnn::new(overflow, camera)).id();
    common::run_until(&mut app, TIMEOUT, |app| {
        app.world().get::<DnnOutput>(overflow).is_some()
    });
    assert_eq!(g::guard_of(&app, overflow), GuardStatus::Off);
    let p = g::precision_of(&mut app, overflow);
    assert!(
        matches!(p, Some(Precision::F16 | Precision::PackedF16)),
        "{p:?}"
    );
    let out = app.world().get::<DnnOutput>(overflow).expect("a result");
    let err = g::error(&out.tensors[0]);
    println!("without the guard: error {err:.2e}");
    // (`output_error` gives infinity, never NaN, for a NaN output.)
    assert!(
        err > g::BOUND,
        "f16 as asked now meets the bound: {err:.3e}"
    );
}
