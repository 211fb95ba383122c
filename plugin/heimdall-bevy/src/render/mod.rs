//! The render world: each frame, in named system sets on Bevy's render schedules,
//!
//! 1. extract (the settings when they changed, [`live_settings`]; `models::extract_dnns`, the
//!    camera frames and requests, `extract`);
//! 2. [`HeimdallRenderSystems::Prepare`]: compile new models for Bevy's own `RenderDevice`
//!    (`models`) and collect what finished since the last frame (`readback`);
//! 3. [`HeimdallRenderSystems::Schedule`]: start idle DNNs and ask the coordinator for this
//!    frame's chunks (`schedule`);
//! 4. [`HeimdallRenderSystems::Encode`]: record the preprocessing, the chunks and the output
//!    copies (`encode`): by default into an encoder of their own, submitted right away ahead of
//!    the scene, their copies mapped at once; else into the frame's own encoder after the scene
//!    passes;
//! 5. [`HeimdallRenderSystems::Readback`]: after the frame's submission, map its timestamps (and
//!    the copies recorded into it) (`readback`).
//! 6. after Bevy presented the frame, stamp it for the stats' frame interval
//!    (`stamp_presented`), with the render thread's phases of that frame ([`phases`]).
//!
//! Nothing here waits on the GPU or on a worker.

pub(crate) mod backend;
pub(crate) mod background;
pub(crate) mod cache;
pub(crate) mod cpu;
pub(crate) mod cpu_lane;
pub(crate) mod cpu_run;
pub(crate) mod decode_pool;
pub(crate) mod encode;
pub(crate) mod extract;
pub(crate) mod finish;
pub(crate) mod guard;
pub(crate) mod guard_store;
pub mod live_settings;
pub(crate) mod models;
pub mod pacing;
pub mod phases;
pub(crate) mod readback;
pub(crate) mod recording;
pub(crate) mod schedule;
pub(crate) mod state;
pub mod timer;

use bevy::core_pipeline::schedule::camera_driver;
use bevy::prelude::*;
use bevy::render::renderer::{RenderGraph, RenderGraphSystems};
use bevy::render::sync_world::MainEntity;
use bevy::render::{ExtractSchedule, Render, RenderApp, RenderStartup, RenderSystems};

use crate::bridge::channel::{FailedDnns, Outbox, RenderMessage};
use crate::camera::{ExtractedFrames, extract_frames};
use crate::clock::HeimdallClock;
use crate::faults::{ExtractedRestarts, extract_restarts};
use crate::requests::{ExtractedRequests, extract_requests};
use crate::settings::HeimdallSettings;
use crate::workers::Workers;
pub use live_settings::{coordinator_config, coordinator_placement, coordinator_policy};
use phases::Stamp;

/// The plugin's render-world system sets, in order.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HeimdallRenderSystems {
    /// Compile models, collect finished outputs and CPU work (`Render`, in `Prepare`).
    Prepare,
    /// This frame's decision (`Render`, in `Prepare`, after [`Self::Prepare`]).
    Schedule,
    /// Record the DNN work: submitted ahead of the scene (`Render`, in `Prepare`, after
    /// [`Self::Schedule`]; [`HeimdallSettings::dnn_work_first`]), else after the scene passes
    /// (`RenderGraph`, after `camera_driver`).
    Encode,
    /// Map the copies after the submission (`RenderGraph`, in `Finish`).
    Readback,
}

/// Adds the render-world resources and systems (in `Plugin::build`).
pub(crate) fn build(
    app: &mut App,
    settings: &HeimdallSettings,
    clock: HeimdallClock,
    outbox: Outbox,
    failed: FailedDnns,
) {
    let indirect = backend::IndirectValidation::of(app);
    let Some(render_app) = app.get_sub_app_mut(RenderApp) else {
        return;
    };
    insert_resources(render_app, indirect, settings, clock, outbox, failed);
    add_frame_systems(render_app);
    add_phase_stamps(render_app);
    add_dnn_systems(render_app);
}

/// The render world's resources: the plugin's shared ones (settings, clock, the channel to the
/// main world, the CPU workers, the readback waiter) and the extracted and per-frame state.
fn insert_resources(
    render_app: &mut SubApp,
    indirect: backend::IndirectValidation,
    settings: &HeimdallSettings,
    clock: HeimdallClock,
    outbox: Outbox,
    failed: FailedDnns,
) {
    let faults = outbox.faults().clone();
    let decode_threads = if settings.parallel_decode {
        decode_pool::DECODE_THREADS
    } else {
        0
    };
    let workers = Workers::with_faults(settings.cpu_slots(), faults.clone());
    let waiter = readback::ReadbackWaiter::new(decode_threads, faults.clone());
    // The device-error handler (main world) drops the readbacks of a lost device through it.
    let readback_device = waiter.device();
    render_app
        .insert_resource(indirect)
        .insert_resource(settings.clone())
        .insert_resource(clock)
        .insert_resource(outbox)
        .insert_resource(failed)
        .insert_resource(faults)
        .insert_resource(workers)
        .insert_resource(waiter)
        .insert_resource(readback_device)
        .init_resource::<ExtractedRestarts>()
        .init_resource::<background::BackgroundWork>()
        .init_resource::<models::RenderDnns>()
        .init_resource::<ExtractedFrames>()
        .init_resource::<ExtractedRequests>()
        .init_resource::<extract::ExtractedDisplay>()
        .init_resource::<extract::ExtractedTraceRequest>()
        .init_resource::<extract::ExtractedRecording>()
        .init_resource::<schedule::FramePlan>()
        .init_resource::<phases::PhaseClock>()
        .init_resource::<PresentationTime>();
}

/// The plugin's sets in order in `Prepare`, the extract, the device's (re)start, and the end of
/// each render frame: the presented stamp, then the coordinator lent to the CPU lane (where it
/// was not lent at the end of the frame's DNN encoding already, `add_dnn_systems`).
fn add_frame_systems(render_app: &mut SubApp) {
    render_app
        .configure_sets(
            Render,
            (
                HeimdallRenderSystems::Prepare,
                HeimdallRenderSystems::Schedule,
                HeimdallRenderSystems::Encode,
            )
                .chain()
                .in_set(RenderSystems::Prepare),
        )
        .add_systems(
            ExtractSchedule,
            (
                live_settings::extract_settings,
                models::extract_dnns,
                extract_frames,
                extract_requests,
                extract::extract_display_and_trace,
                extract::extract_recording,
                extract_restarts,
                phases::stamp::<{ Stamp::Extract as usize }>,
            ),
        )
        .add_systems(RenderStartup, on_render_startup)
        .add_systems(Render, stamp_presented.in_set(RenderSystems::Cleanup))
        .add_systems(
            Render,
            schedule::lend_cpu_lane
                .in_set(RenderSystems::Cleanup)
                .after(stamp_presented)
                .run_if(resource_exists::<schedule::Scheduler>),
        );
}

/// The render thread's phase stamps ([`phases`]) between Bevy's and the plugin's sets.
fn add_phase_stamps(render_app: &mut SubApp) {
    render_app
        .add_systems(
            Render,
            (
                phases::stamp::<{ Stamp::RenderBegin as usize }>
                    .in_set(RenderSystems::ExtractCommands),
                phases::stamp::<{ Stamp::HeimdallPrepare as usize }>
                    .in_set(RenderSystems::Prepare)
                    .before(HeimdallRenderSystems::Prepare),
                phases::stamp::<{ Stamp::EncodeBegin as usize }>
                    .in_set(RenderSystems::Prepare)
                    .after(HeimdallRenderSystems::Schedule)
                    .before(HeimdallRenderSystems::Encode),
                phases::stamp::<{ Stamp::EncodeEnd as usize }>
                    .in_set(RenderSystems::Prepare)
                    .after(HeimdallRenderSystems::Encode),
            ),
        )
        .add_systems(
            RenderGraph,
            (
                phases::stamp::<{ Stamp::GraphBegin as usize }>.in_set(RenderGraphSystems::Begin),
                phases::stamp::<{ Stamp::SceneRecorded as usize }>
                    .after(camera_driver)
                    .before(HeimdallRenderSystems::Encode)
                    .in_set(RenderGraphSystems::Render),
                phases::stamp::<{ Stamp::LateEncodeEnd as usize }>
                    .after(HeimdallRenderSystems::Encode)
                    .in_set(RenderGraphSystems::Render),
                phases::stamp::<{ Stamp::Submitted as usize }>
                    .in_set(RenderGraphSystems::Finish)
                    .before(HeimdallRenderSystems::Readback),
            ),
        );
}

/// The DNN work, once the scheduler exists: [`HeimdallRenderSystems::Prepare`],
/// [`HeimdallRenderSystems::Schedule`] and [`HeimdallRenderSystems::Encode`] (work first) in
/// `Render`; the frame timer, the encoding after the scene and the readback in `RenderGraph`.
fn add_dnn_systems(render_app: &mut SubApp) {
    render_app
        .add_systems(
            Render,
            (
                (
                    schedule::take_back_cpu_lane,
                    live_settings::apply_settings,
                    readback::restart_dnns,
                    models::prepare_models,
                    readback::collect_outputs,
                )
                    .chain()
                    .in_set(HeimdallRenderSystems::Prepare),
                (schedule::plan_frame, recording::observe_run)
                    .chain()
                    .in_set(HeimdallRenderSystems::Schedule),
                encode::submit_dnn_work_first
                    .run_if(encode::work_first)
                    .in_set(HeimdallRenderSystems::Encode),
                // The coordinator goes to the CPU lane for the rest of the frame.
                schedule::lend_cpu_lane
                    .run_if(encode::work_first)
                    .run_if(schedule::lend_after_encode)
                    .in_set(RenderSystems::Prepare)
                    .after(HeimdallRenderSystems::Encode),
            )
                .run_if(resource_exists::<schedule::Scheduler>),
        )
        .add_systems(
            RenderGraph,
            (
                encode::begin_frame_timer
                    .before(camera_driver)
                    .in_set(RenderGraphSystems::Render),
                encode::end_frame_timer
                    .run_if(encode::work_first)
                    .after(camera_driver)
                    .in_set(RenderGraphSystems::Render),
                encode::encode_dnn_work
                    .run_if(encode::work_after_scene)
                    .after(camera_driver)
                    .in_set(RenderGraphSystems::Render)
                    .in_set(HeimdallRenderSystems::Encode),
                schedule::lend_cpu_lane
                    .run_if(encode::work_after_scene)
                    .run_if(schedule::lend_after_encode)
                    .after(encode::encode_dnn_work)
                    .in_set(RenderGraphSystems::Render),
                readback::map_after_submit
                    .in_set(RenderGraphSystems::Finish)
                    .in_set(HeimdallRenderSystems::Readback),
            )
                .run_if(resource_exists::<schedule::Scheduler>),
        );
}

/// When the frame being rendered reaches the screen, where something knows better than "now,
/// after `present`" (render world). A display layer that learns the real presentation time
/// (a presentation-timing extension, Android's Choreographer, or the headless harness's
/// emulated vertical blank) sets it during the frame, before `RenderSystems::Cleanup`; the
/// plugin takes it for the stats' frame interval and clears it. Times must not go backwards.
#[derive(Resource, Debug, Default, Clone, Copy)]
pub struct PresentationTime(pub Option<std::time::Instant>);

/// Tells the main world when a frame left for the screen: after Bevy's `render_system`
/// submitted it and presented the windows (`RenderSystems::Render`), or when
/// [`PresentationTime`] says it will be shown, so the stats' frame interval is the one the
/// display gets, not the main loop's; with the frame's phases (wall clock of the render thread).
fn stamp_presented(
    outbox: Res<Outbox>,
    mut clock: ResMut<phases::PhaseClock>,
    mut shown: ResMut<PresentationTime>,
    sched: Option<ResMut<schedule::Scheduler>>,
    settings: Res<HeimdallSettings>,
    heimdall_clock: Res<HeimdallClock>,
) {
    let now = std::time::Instant::now();
    let mut sched = sched;
    let phases = clock.presented(now, sched.as_ref().map(|s| s.frame));
    // The run's recording: when this frame's DNN work and scene reached the GPU queue, after
    // its decision (phase 4, ours, records and submits the DNN work ahead of the scene; the
    // scene's submission ends phase 8).
    if let (Some(p), Some(s)) = (&phases, sched.as_mut()) {
        let ms = |r: std::ops::Range<usize>| p.ms[r].iter().map(|&m| f64::from(m)).sum::<f64>();
        let scene = ms(4..9);
        let dnn = if settings.dnn_work_first {
            ms(4..5)
        } else {
            scene
        };
        let frame = s.frame.saturating_sub(1);
        s.events
            .record(|| recording::RunEvent::Submits(frame, dnn, scene));
    }
    let given = shown.0.take();
    // Where the display's blanks fall, for the recording's display model.
    if let (Some(at), Some(s)) = (given, sched.as_mut()) {
        let since = HeimdallClock::ms(at.saturating_duration_since(heimdall_clock.start()));
        let frame = s.frame.saturating_sub(1);
        s.events.record(|| recording::RunEvent::Shown(frame, since));
    }
    let at = given.unwrap_or(now);
    outbox.send(RenderMessage::Presented(at, phases));
}

/// Chooses the backend once the render device exists (`Plugin::finish`).
pub(crate) fn finish(app: &mut App) {
    let profile = app
        .world()
        .get_resource::<crate::device::HeimdallDeviceProfile>()
        .copied();
    let Some(render_app) = app.get_sub_app_mut(RenderApp) else {
        warn!("heimdall: no render app (rendering disabled); DNNs cannot run");
        return;
    };
    if let Some(p) = profile {
        render_app.world_mut().insert_resource(p);
    }
    install(render_app.world_mut());
}

/// (Re)builds the backend and the scheduler for the current render device.
fn install(world: &mut World) {
    let settings = world.resource::<HeimdallSettings>().clone();
    let (backend, info) = backend::choose(world, &settings);
    let gpu = backend.gpu().is_some();
    // Readbacks of the old device are dropped, not read: its buffers are gone.
    if let Some(waiter) = world.get_resource::<readback::ReadbackWaiter>() {
        waiter.set_device(backend.device.clone());
    }
    world
        .resource::<Outbox>()
        .send(RenderMessage::Backend(info));
    world.insert_resource(backend);
    let clock = *world.resource::<HeimdallClock>();
    let sched = schedule::Scheduler::new(&settings, gpu, clock);
    // The run's events and their observer, new with the coordinator.
    world.insert_resource(recording::RunLog::new(sched.coordinator.config()));
    world.insert_resource(sched.events.clone());
    world.insert_resource(sched);
    world.insert_resource(live_settings::AppliedSettings::of(&settings));
    // Every DNN compiles again for the new device (its render entity stays, as extracted).
    let compiled: Vec<Entity> = world
        .query_filtered::<Entity, With<models::RenderModel>>()
        .iter(world)
        .collect();
    for e in compiled {
        world
            .entity_mut(e)
            .remove::<(models::RenderDnnBundle, guard::GuardPhase)>();
    }
    world.insert_resource(models::RenderDnns::default());
}

/// Bevy runs `RenderStartup` once for the device `Plugin::finish` saw, then again every time it
/// makes a new one (recovery after a lost device): everything compiled for the old device is
/// dropped and rebuilt. (Devices cannot be told apart by comparison: a new device may reuse the
/// old one's id once that is dropped.)
fn on_render_startup(world: &mut World, mut started: Local<bool>) {
    if !*started {
        *started = true;
        return;
    }
    warn!("heimdall: the render device changed; recompiling every model");
    install(world);
}

/// The devices the DNNs' GPU models were compiled on, one entry per compiled GPU model (read
/// from the render world; for diagnostics and tests).
pub fn compiled_devices(render_world: &World) -> Vec<wgpu::Device> {
    let Some(mut dnns) = render_world.try_query::<&models::RenderModel>() else {
        return Vec::new();
    };
    dnns.iter(render_world)
        .filter_map(|d| d.compiled()?.gpu.as_ref())
        .map(|g| g.context().device.clone())
        .collect()
}

/// The storage precision of the GPU model `dnn` runs now, as compiled (`None`: not compiled
/// yet, or on the CPU); read from the render world, for diagnostics and tests. A DNN checked by
/// the accuracy guard runs `F32` until its guarded model replaces that one
/// ([`crate::guard::GuardStatus`]); its f32 op ranges are in the guard's decision.
pub fn compiled_precision(render_world: &World, dnn: Entity) -> Option<heimdall_gpu::Precision> {
    let mut dnns = render_world.try_query::<(&MainEntity, &models::RenderModel)>()?;
    let (_, d) = dnns.iter(render_world).find(|(m, _)| m.id() == dnn)?;
    let gpu = d.compiled()?.gpu.as_ref()?;
    Some(gpu.report().precision)
}
