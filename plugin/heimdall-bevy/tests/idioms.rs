//! Bevy's idioms (issue 37, item 3), each shown on a headless app: settings edited at run time
//! reach the render world and the coordinator; an app's own policy runs in the coordinator; the
//! public components and resources are reflected; pacing is a plugin of its own, off unless
//! added; each DNN's latency and rate reach Bevy's `DiagnosticsStore`.
//!
//! The apps run one at a time (a lock): one render device at a time on lavapipe.

mod common;

use std::any::TypeId;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bevy::diagnostic::DiagnosticsStore;
use bevy::ecs::reflect::{ReflectComponent, ReflectResource};
use bevy::prelude::*;
use bevy::reflect::{ReflectRef, TypeRegistry};
use bevy::render::RenderApp;
use heimdall_bevy::prelude::*;
use heimdall_bevy::render::{coordinator_config, coordinator_placement, coordinator_policy};

static ONE_APP: Mutex<()> = Mutex::new(());

fn one_app() -> MutexGuard<'static, ()> {
    ONE_APP.lock().unwrap_or_else(|p| p.into_inner())
}

fn quick_settings() -> HeimdallSettings {
    HeimdallSettings {
        frame_rate: FrameRateTarget::Fixed(30.0),
        precision: heimdall_gpu::Precision::F32,
        guard: None,
        ..default()
    }
}

fn render_world(app: &mut App) -> &World {
    app.sub_app_mut(RenderApp).world()
}

/// Settings edited in the main world at run time: the render world's copy and the running
/// coordinator take the new frame budget margins, policy, mode and placement; a start-up-only
/// setting keeps its value.
#[test]
fn settings_edited_at_run_time_apply() {
    let _one = one_app();
    if common::no_render_device() {
        return;
    }
    let mut app = common::headless_app(quick_settings());
    for _ in 0..3 {
        app.update();
    }
    let cfg = coordinator_config(render_world(&mut app)).expect("a coordinator");
    assert_eq!(cfg.budget.margin_ms, 1.0);
    assert_eq!(
        coordinator_policy(render_world(&mut app)).as_deref(),
        Some("max_total_utility")
    );
    let offload_before = coordinator_placement(render_world(&mut app)).unwrap().0;

    {
        let mut s = app.world_mut().resource_mut::<HeimdallSettings>();
        s.margin_ms = 3.5;
        s.relaxation_ms = 0.25;
        s.policy = SchedulingPolicy::least_slack_time();
        s.offload = false;
        s.cpu_workers = Some(7);
    }
    for _ in 0..2 {
        app.update();
    }
    let rw = render_world(&mut app);
    let copy = rw.resource::<HeimdallSettings>();
    assert_eq!(copy.margin_ms, 3.5, "the render world's copy follows");
    assert_eq!(copy.cpu_workers, None, "start-up only: kept");
    let cfg = coordinator_config(rw).unwrap();
    assert_eq!(cfg.budget.margin_ms, 3.5);
    assert_eq!(cfg.budget.relaxation_ms, 0.25);
    assert_eq!(coordinator_policy(rw).as_deref(), Some("least_slack_time"));
    assert!(!coordinator_placement(rw).unwrap().0, "offload turned off");
    assert_ne!(cfg.cpu_workers, 7);

    app.world_mut().resource_mut::<HeimdallSettings>().mode = CoordinationMode::Fifo;
    app.update();
    assert_eq!(
        coordinator_policy(render_world(&mut app)).as_deref(),
        Some("fifo")
    );
    {
        let mut s = app.world_mut().resource_mut::<HeimdallSettings>();
        s.mode = CoordinationMode::Heimdall;
        s.offload = true;
    }
    app.update();
    let rw = render_world(&mut app);
    assert_eq!(coordinator_policy(rw).as_deref(), Some("least_slack_time"));
    assert_eq!(coordinator_placement(rw).unwrap().0, offload_before);
}

/// An app's own policy: counts the coordinator's calls and ranks the oldest job first.
#[derive(Clone)]
struct Counting(Arc<AtomicUsize>);

impl Policy for Counting {
    fn name(&self) -> String {
        "oldest_first_counting".into()
    }

    fn score(&self, _ctx: &PolicyContext, job: &JobView<'_>) -> f64 {
        self.0.fetch_add(1, Ordering::Relaxed);
        -(job.seq as f64)
    }

    fn on_dispatch(&mut self, _job: &JobView<'_>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// The camera [`spawn_identity`] spawned.
#[derive(Resource)]
struct Camera(Entity);

/// Spawns a camera and an identity DNN on it; returns the DNN.
fn spawn_identity(app: &mut App) -> Entity {
    let camera = app.world_mut().spawn(common::synthetic_camera(64, 48)).id();
    app.insert_resource(Camera(camera));
    let model = common::add_model(app, common::identity_graph(16, 16));
    app.world_mut()
        .spawn(Dnn::new(model, camera).with_conv_cache(ConvCache::Off))
        .id()
}

/// The app's policy is the one the coordinator asks: its name in the render world, and its
/// calls counted while the DNN answers.
#[test]
fn an_apps_own_policy_runs_in_the_coordinator() {
    let _one = one_app();
    if common::no_render_device() {
        return;
    }
    let calls = Arc::new(AtomicUsize::new(0));
    let settings = HeimdallSettings {
        policy: SchedulingPolicy::new(Counting(calls.clone())),
        ..quick_settings()
    };
    let mut app = common::headless_app(settings);
    let dnn = spawn_identity(&mut app);
    common::run_until(&mut app, Duration::from_secs(120), |app| {
        common::results_of(app, dnn) >= 3
    });
    assert!(common::results_of(&app, dnn) >= 3, "the DNN never answered");
    assert_eq!(
        coordinator_policy(render_world(&mut app)).as_deref(),
        Some("oldest_first_counting")
    );
    assert!(
        calls.load(Ordering::Relaxed) > 0,
        "the coordinator never asked the app's policy"
    );
    assert_eq!(
        app.world().resource::<HeimdallStats>().to_json(
            app.world().resource::<HeimdallSettings>(),
            "gpu",
            0
        )["policy"],
        "oldest_first_counting"
    );
}

fn registered<T: 'static>(registry: &TypeRegistry) -> bool {
    registry.get(TypeId::of::<T>()).is_some()
}

/// The plugin's components and resources are in the `AppTypeRegistry`; a DNN's status and
/// placement are read, and the settings read and edited, through reflection.
#[test]
fn components_and_resources_are_reflected() {
    let _one = one_app();
    if common::no_render_device() {
        return;
    }
    let mut app = common::headless_app(quick_settings());
    let dnn = spawn_identity(&mut app);
    let registry = app.world().resource::<AppTypeRegistry>().clone();
    let registry = registry.read();
    assert!(registered::<HeimdallSettings>(&registry));
    assert!(registered::<HeimdallStats>(&registry));
    assert!(registered::<HeimdallBackend>(&registry));
    assert!(registered::<Dnn>(&registry));
    assert!(registered::<DnnOutput>(&registry));
    assert!(registered::<GuardStatus>(&registry));
    assert!(registered::<FaceDetections>(&registry));
    assert!(registered::<TrackedHand>(&registry));
    assert!(registered::<CameraFrame>(&registry));
    assert!(registered::<LateFrameStart>(&registry));
    for t in [
        TypeId::of::<HeimdallSettings>(),
        TypeId::of::<HeimdallStats>(),
        TypeId::of::<HeimdallBackend>(),
    ] {
        assert!(registry.get_type_data::<ReflectResource>(t).is_some());
    }

    let status = registry
        .get_type_data::<ReflectComponent>(TypeId::of::<DnnStatus>())
        .expect("DnnStatus reflects as a component");
    let value = status
        .reflect(app.world().entity(dnn))
        .expect("the DNN has a status");
    let ReflectRef::Enum(e) = value.reflect_ref() else {
        panic!("DnnStatus is an enum");
    };
    assert_eq!(e.variant_name(), "Loading");

    let placement = registry
        .get_type_data::<ReflectComponent>(TypeId::of::<DnnPlacement>())
        .expect("DnnPlacement reflects as a component");
    let value = placement.reflect(app.world().entity(dnn)).unwrap();
    let ReflectRef::Struct(s) = value.reflect_ref() else {
        panic!("DnnPlacement is a struct");
    };
    assert_eq!(
        s.field("cpu_threads")
            .and_then(|f| f.try_downcast_ref::<usize>()),
        Some(&0)
    );

    let source = registry
        .get_type_data::<ReflectComponent>(TypeId::of::<CameraSource>())
        .expect("CameraSource reflects as a component");
    let camera = app.world().resource::<Camera>().0;
    let value = source.reflect(app.world().entity(camera)).unwrap();
    let ReflectRef::Struct(s) = value.reflect_ref() else {
        panic!("CameraSource is a struct");
    };
    assert_eq!(
        s.field("pacing")
            .and_then(|f| f.try_downcast_ref::<FramePacing>()),
        Some(&FramePacing::EveryUpdate)
    );
    assert!(
        s.field("source").is_none(),
        "the app's FrameSource is not reflected"
    );

    let mut settings = app.world_mut().resource_mut::<HeimdallSettings>();
    let bevy::reflect::ReflectMut::Struct(s) = settings.reflect_mut() else {
        panic!("HeimdallSettings is a struct");
    };
    *s.field_mut("margin_ms")
        .and_then(|f| f.try_downcast_mut::<f64>())
        .expect("margin_ms is reflected") = 2.5;
    assert_eq!(app.world().resource::<HeimdallSettings>().margin_ms, 2.5);
    drop(registry);
    app.update();
    assert_eq!(
        coordinator_config(render_world(&mut app)).map(|c| c.budget.margin_ms),
        Some(2.5),
        "a reflective edit applies like any other"
    );
}

/// The plugin alone does not pace the main loop: no late-frame-start state, no system of it in
/// `First`; adding the pacing plugin adds both (that it then sleeps: `frame_start.rs`'s
/// `the_pacing_plugin_sleeps_and_nothing_else_does`).
#[test]
fn pacing_is_a_plugin_of_its_own() {
    let _one = one_app();
    if common::no_render_device() {
        return;
    }
    let first_systems = |app: &App| app.get_schedule(First).expect("First").systems_len();
    let app = common::headless_app(quick_settings());
    assert!(app.world().get_resource::<LateFrameStart>().is_none());
    let without = first_systems(&app);
    drop(app);
    let app = common::headless_app_with(quick_settings(), common::render_creation(), |app| {
        app.add_plugins(HeimdallPacingPlugin);
    });
    assert!(app.world().get_resource::<LateFrameStart>().is_some());
    assert_eq!(first_systems(&app), without + 1, "its one system in First");
}

/// After a headless run with a DNN, its latency and rate are in Bevy's `DiagnosticsStore`, with
/// measurements that agree with the plugin's own statistics.
#[test]
fn dnn_latency_and_rate_reach_the_diagnostics_store() {
    let _one = one_app();
    if common::no_render_device() {
        return;
    }
    let mut app = common::headless_app(quick_settings());
    let dnn = spawn_identity(&mut app);
    common::run_until(&mut app, Duration::from_secs(120), |app| {
        common::results_of(app, dnn) >= 5
    });
    assert!(common::results_of(&app, dnn) >= 5, "the DNN never answered");
    app.update();
    let store = app.world().resource::<DiagnosticsStore>();
    let latency = store
        .get(&heimdall_bevy::diagnostics::latency_path("identity"))
        .expect("heimdall/identity/latency_ms");
    let rate = store
        .get(&heimdall_bevy::diagnostics::rate_path("identity"))
        .expect("heimdall/identity/rate_hz");
    let stats = app.world().resource::<HeimdallStats>();
    let m = &stats.models["identity"];
    assert_eq!(
        latency.history_len(),
        m.results.min(latency.get_max_history_length())
    );
    let last = *m.latencies_ms.last().unwrap();
    assert_eq!(latency.value(), Some(last));
    assert!(rate.history_len() >= 1);
    assert!(rate.values().all(|v| v.is_finite() && *v > 0.0));
}
