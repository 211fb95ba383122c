//! A lost device, really lost: mid-run, `wgpu::Device::destroy()` on Bevy's render device, the
//! one the plugin compiled its models on (as a driver reset, every resource of the device is
//! gone and wgpu reports the loss). With the app's policy of recovering
//! (`heimdall_bevy::device::recover_lost_devices`), Bevy makes a new device, the plugin compiles
//! the DNN again on it (a new `Compiling`, then `Ready(Gpu)`) and GPU results resume, with no
//! panic; `stats.json` counts one lost device. With Bevy's default policy the app ends with an
//! error, without a panic.

mod common;

use std::time::{Duration, Instant};

use bevy::prelude::*;
use bevy::render::RenderApp;
use bevy::render::renderer::RenderDevice;
use bevy::render::settings::{Backends, WgpuSettings};
use heimdall_bevy::prelude::*;

fn settings() -> HeimdallSettings {
    HeimdallSettings {
        frame_rate: FrameRateTarget::Fixed(30.0),
        offload: false,
        precision: heimdall_gpu::Precision::F32,
        ..default()
    }
}

/// An app with one identity DNN on a synthetic camera, that has delivered 3 GPU results.
fn running_app(recover: bool) -> (App, Entity) {
    let mut app = common::headless_app(settings());
    if recover {
        let wgpu = WgpuSettings {
            backends: Some(Backends::from_env().unwrap_or(Backends::PRIMARY)),
            ..default()
        };
        heimdall_bevy::device::recover_lost_devices(&mut app, wgpu);
    }
    let (h, w) = (24usize, 32usize);
    let model = common::add_model(&mut app, common::identity_graph(h, w));
    let camera = app
        .world_mut()
        .spawn(common::synthetic_camera(w as u32, h as u32))
        .id();
    let dnn = app.world_mut().spawn(Dnn::new(model, camera)).id();
    app.init_resource::<Statuses>()
        .add_systems(Last, record_statuses);
    common::run_until(&mut app, Duration::from_secs(120), |app| {
        gpu_results(app) >= 3
    });
    assert!(gpu_results(&app) >= 3, "no GPU results before the loss");
    (app, dnn)
}

fn gpu_results(app: &App) -> usize {
    let results = &app.world().resource::<common::Results>().0;
    results
        .iter()
        .filter(|r| r.output.backend == Backend::Gpu)
        .count()
}

#[test]
fn a_destroyed_device_is_replaced_and_gpu_results_resume() {
    if common::skip_gpu() {
        common::skipping("HEIMDALL_SKIP_GPU=1");
        return;
    }
    let (mut app, dnn) = running_app(true);
    let old = app.world().resource::<RenderDevice>().wgpu_device().clone();
    app.world_mut().resource_mut::<Statuses>().0.clear();
    let before = gpu_results(&app);
    old.destroy();

    // Through the loss and the recovery: updates go on, the DNN recompiles (a new `Compiling`,
    // then `Ready(Gpu)`) and delivers GPU results again.
    let rebuilt = |app: &App| {
        let s = &app.world().resource::<Statuses>().0;
        let c = s.iter().position(|x| *x == DnnStatus::Compiling)?;
        s[c..]
            .iter()
            .position(|x| *x == DnnStatus::Ready(Backend::Gpu))
            .map(|r| c + r)
    };
    let mut after_rebuild = None;
    common::run_until(&mut app, Duration::from_secs(180), |app| {
        if after_rebuild.is_none() && rebuilt(app).is_some() {
            after_rebuild = Some(gpu_results(app));
        }
        after_rebuild.is_some_and(|n| gpu_results(app) >= n + 3)
    });
    let n = after_rebuild.expect("the DNN was not compiled again on a new device");
    assert!(
        gpu_results(&app) >= n + 3,
        "no GPU results after the rebuild ({before} before the loss, {n} at the rebuild, {} now)",
        gpu_results(&app)
    );
    let render_world = app.sub_app(RenderApp).world();
    let device = render_world
        .resource::<RenderDevice>()
        .wgpu_device()
        .clone();
    let compiled = heimdall_bevy::render::compiled_devices(render_world);
    assert!(
        !compiled.is_empty() && compiled.iter().all(|d| *d == device),
        "not rebuilt on the new device"
    );
    assert_eq!(
        app.world().get::<DnnStatus>(dnn),
        Some(&DnnStatus::Ready(Backend::Gpu))
    );
    let faults = app.world().resource::<HeimdallFaults>();
    assert_eq!(faults.devices_lost(), 1, "{:#}", faults.to_json());
    assert_eq!(faults.panics(), 0, "{:#}", faults.to_json());
    let stats = app.world().resource::<HeimdallStats>();
    let json = stats.to_json(&settings(), "gpu", 0);
    assert_eq!(json["faults"]["devices_lost"], 1);
    // Both devices live until the process ends, so no wgpu instance is torn down on a task-pool
    // thread while the harness runs `exit` (see `common::render_creation`).
    std::mem::forget((old, device));
}

#[test]
fn without_a_recovery_policy_a_lost_device_ends_the_app_with_an_error() {
    if common::skip_gpu() {
        common::skipping("HEIMDALL_SKIP_GPU=1");
        return;
    }
    let (mut app, _) = running_app(false);
    let old = app.world().resource::<RenderDevice>().wgpu_device().clone();
    old.destroy();
    let start = Instant::now();
    let mut exit = None;
    while exit.is_none() && start.elapsed() < Duration::from_secs(60) {
        app.update();
        exit = app.should_exit();
    }
    assert!(
        matches!(exit, Some(AppExit::Error(_))),
        "the app did not end with an error after the loss: {exit:?}"
    );
    assert_eq!(app.world().resource::<HeimdallFaults>().devices_lost(), 1);
    std::mem::forget(old);
}

/// Every status change of the DNNs, in order.
#[derive(Resource, Default)]
struct Statuses(Vec<DnnStatus>);

fn record_statuses(q: Query<&DnnStatus, Changed<DnnStatus>>, mut all: ResMut<Statuses>) {
    all.0.extend(q.iter().cloned());
}
