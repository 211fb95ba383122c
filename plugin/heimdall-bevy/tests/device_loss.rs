//! A lost device: mid-run the render device reports an error (an injected validation error, the
//! same path as a driver reset: Bevy's render error handler), the app's policy recovers with a
//! new device, and the plugin rebuilds its GPU state on it: the DNN compiles again and keeps
//! delivering results, with no panic and the app still updating.
//!
//! (`wgpu::Device::destroy` is not used: it frees every resource at once, and wgpu 29 then panics
//! inside its own id lookup on the next use of any of them, before Bevy has seen the loss — a
//! driver reset does not free the application's objects that way.)

mod common;

use std::time::Duration;

use bevy::prelude::*;
use bevy::render::RenderApp;
use bevy::render::error_handler::{RenderErrorHandler, RenderErrorPolicy};
use bevy::render::renderer::RenderDevice;
use heimdall_bevy::prelude::*;

#[test]
fn the_plugin_rebuilds_on_a_new_device_and_keeps_delivering() {
    if common::skip_gpu() {
        return;
    }
    let settings = HeimdallSettings {
        frame_rate: FrameRateTarget::Fixed(30.0),
        offload: false,
        precision: heimdall_gpu::Precision::F32,
        ..default()
    };
    let mut app = common::headless_app(settings);
    // The app's policy for render errors: recover with a new device (Bevy's default quits).
    app.insert_resource(RenderErrorHandler(|_, _, _| {
        RenderErrorPolicy::Recover(common::render_creation())
    }));
    let (h, w) = (24usize, 32usize);
    let model = common::add_model(&mut app, common::identity_graph(h, w));
    let camera = app
        .world_mut()
        .spawn(common::synthetic_camera(w as u32, h as u32))
        .id();
    let dnn = app.world_mut().spawn(Dnn::new(model, camera)).id();
    app.init_resource::<Statuses>()
        .add_systems(Last, record_statuses);
    let results = |app: &App| app.world().resource::<common::Results>().0.len();
    common::run_until(&mut app, Duration::from_secs(120), |app| results(app) >= 3);
    assert!(results(&app) >= 3, "no results before the error");
    let old = app.world().resource::<RenderDevice>().wgpu_device().clone();
    app.world_mut().resource_mut::<Statuses>().0.clear();

    // The injected error: a buffer mapped at creation must have a size that is a multiple of 4.
    let _ = old.create_buffer(&wgpu::BufferDescriptor {
        label: Some("injected error"),
        size: 3,
        usage: wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: true,
    });
    // Through the error and the recovery: updates go on, the DNN recompiles (a new `Compiling`,
    // then `Ready`) and delivers again.
    let rebuilt = |app: &App| {
        let s = &app.world().resource::<Statuses>().0;
        s.iter()
            .position(|x| *x == DnnStatus::Compiling)
            .and_then(|c| {
                s[c..]
                    .iter()
                    .position(|x| *x == DnnStatus::Ready(Backend::Gpu))
                    .map(|r| c + r)
            })
    };
    let mut after_rebuild = None;
    common::run_until(&mut app, Duration::from_secs(120), |app| {
        if after_rebuild.is_none() && rebuilt(app).is_some() {
            after_rebuild = Some(results(app));
        }
        after_rebuild.is_some_and(|n| results(app) >= n + 3)
    });
    let n = after_rebuild.expect("the DNN was not compiled again on the new device");
    assert!(
        results(&app) >= n + 3,
        "the DNN stopped delivering after the rebuild ({} results at the rebuild, {} now)",
        n,
        results(&app)
    );
    let render_world = app.sub_app(RenderApp).world();
    let device = render_world
        .resource::<RenderDevice>()
        .wgpu_device()
        .clone();
    let compiled = heimdall_bevy::render::compiled_devices(render_world);
    assert!(
        !compiled.is_empty() && compiled.iter().all(|d| *d == device),
        "not rebuilt on the current device"
    );
    assert_eq!(
        app.world().get::<DnnStatus>(dnn),
        Some(&DnnStatus::Ready(Backend::Gpu))
    );
    // Both devices live until the process ends, so no wgpu instance is torn down on a task-pool
    // thread while the harness runs `exit` (see `common::render_creation`: the crash this
    // guarded against came from EGL, which the tests no longer load).
    std::mem::forget((old, device));
}

/// Every status change of the DNNs, in order.
#[derive(Resource, Default)]
struct Statuses(Vec<DnnStatus>);

fn record_statuses(q: Query<&DnnStatus, Changed<DnnStatus>>, mut all: ResMut<Statuses>) {
    all.0.extend(q.iter().cloned());
}
