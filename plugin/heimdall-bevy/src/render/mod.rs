//! The render world: models compiled for Bevy's own `RenderDevice` (asynchronously, warmed
//! before their first inference), the coordinator asked once per frame for the chunks that fit
//! after the scene, those chunks encoded into the frame's command encoder on Bevy's queue, GPU
//! timestamps fed back to the analyzer, outputs read back with `map_async`, and CPU work handed
//! to the worker pool. Nothing here waits on the GPU or on a worker.

mod instance;
pub mod timer;

use std::collections::HashMap;
use std::sync::Arc;

use bevy::core_pipeline::schedule::camera_driver;
use bevy::prelude::*;
use bevy::render::render_asset::RenderAssets;
use bevy::render::renderer::{
    RenderAdapterInfo, RenderContext, RenderDevice, RenderGraph, RenderGraphSystems, RenderQueue,
};
use bevy::render::texture::GpuImage;
use bevy::render::{Extract, ExtractSchedule, RenderApp, RenderStartup};
use heimdall_coordinator::{
    Coordinator, CoordinatorConfig, Event, FrameBudget, GpuWindow, ModelId, Request, WorkId,
    policy_by_name,
};
use heimdall_gpu::GpuContext;

use crate::camera::CameraFrame;
use crate::crop::Crop;
use crate::dnn::{Decoder, Dnn, Normalization};
use crate::shared::{FrameRecord, HeimdallShared};
use crate::workers::{Mailbox, WorkerPool};
use crate::{HeimdallSettings, asset::DnnModel};
use instance::{CpuDone, Instance, InstanceState};
use timer::{FrameTimer, Mark};

pub(crate) use instance::gpu_capable;

/// A request of the main world for this frame.
#[derive(Clone, Debug)]
pub(crate) struct RequestMsg {
    pub entity: Entity,
    pub crop: Crop,
}

/// Main-world resource: the requests of this update (cleared in `First`).
#[derive(Resource, Default)]
pub(crate) struct RequestQueue(pub Vec<RequestMsg>);

#[derive(Clone)]
pub(crate) struct ExtractedDnn {
    pub name: String,
    pub model: AssetId<DnnModel>,
    pub graph: Option<Arc<heimdall_ir::Graph>>,
    pub source: Entity,
    pub normalization: Normalization,
    pub decoder: Decoder,
    pub deadline_ms: Option<f64>,
    pub utility: heimdall_coordinator::UtilityParams,
}

#[derive(Clone)]
pub(crate) struct ExtractedFrame {
    pub image: AssetId<Image>,
    pub index: u64,
    pub capture_ms: f64,
    pub size: UVec2,
    pub pixels: Arc<Vec<u8>>,
    pub content_variation: f64,
}

/// What the render world sees of the main world each frame.
#[derive(Resource, Default)]
pub(crate) struct Extracted {
    pub dnns: HashMap<Entity, ExtractedDnn>,
    pub frames: HashMap<Entity, ExtractedFrame>,
    pub requests: Vec<RequestMsg>,
    pub display_hz: Option<f64>,
}

/// Where inference runs in this app.
pub(crate) enum BackendMode {
    /// On Bevy's device.
    Gpu(Box<GpuContext>),
    /// On CPU workers only (no compute, or forced).
    Cpu,
}

/// Render-world state.
#[derive(Resource)]
pub(crate) struct HeimdallRender {
    pub mode: BackendMode,
    pub settings: HeimdallSettings,
    pub coordinator: Coordinator,
    pub instances: HashMap<Entity, Instance>,
    pub pool: WorkerPool,
    pub cpu_done: Mailbox<CpuDone>,
    pub frame: u64,
    /// Readbacks encoded this frame, to map after the submission.
    pub readbacks_to_request: Vec<Entity>,
    /// CPU steps whose inputs were downloaded this frame, to map after the submission.
    pub cpu_steps_to_request: Vec<(Entity, usize)>,
    /// GPU work not timed by timestamps: reported with its estimate next frame.
    pub untimed: Vec<(WorkId, f64, f64)>,
    /// Chunks encoded per timed frame: frame -> (encode time ms, works with their estimates).
    pub timed: HashMap<u64, (f64, Vec<(WorkId, f64)>)>,
    pub next_index: u32,
    /// The clock's origin (shared with the main world).
    pub clock_start: std::time::Instant,
    /// The render device this state was made for (even in CPU mode).
    pub device: Option<wgpu::Device>,
}

/// Render-world resource: the frame timestamps (absent without timestamp support).
#[derive(Resource, Default)]
pub(crate) struct FrameTimerRes(pub Option<FrameTimer>);

/// Adds the render-world systems.
pub(crate) fn build(app: &mut App) {
    let Some(render_app) = app.get_sub_app_mut(RenderApp) else {
        return;
    };
    render_app
        .init_resource::<Extracted>()
        .init_resource::<FrameTimerRes>()
        .add_systems(ExtractSchedule, extract)
        .add_systems(RenderStartup, on_new_device)
        .add_systems(
            RenderGraph,
            (
                begin_frame
                    .before(camera_driver)
                    .in_set(RenderGraphSystems::Render),
                encode_frame
                    .after(camera_driver)
                    .in_set(RenderGraphSystems::Render),
                after_submit.in_set(RenderGraphSystems::Finish),
            ),
        );
}

/// Checks the adapter once the render device exists (`Plugin::finish`): GPU mode when it can
/// run the kernels, else CPU mode with one warning.
pub(crate) fn finish(app: &mut App, settings: &HeimdallSettings, shared: &HeimdallShared) {
    let Some(render_app) = app.get_sub_app_mut(RenderApp) else {
        warn!("heimdall: no render app (rendering disabled); every model runs on the CPU backend");
        shared.set_backend("cpu (no renderer)", None);
        return;
    };
    render_app.insert_resource(shared.clone());
    let world = render_app.world_mut();
    let state = make_state(world, settings, shared);
    world.insert_resource(state);
}

fn make_state(
    world: &mut World,
    settings: &HeimdallSettings,
    shared: &HeimdallShared,
) -> HeimdallRender {
    let device = world.get_resource::<RenderDevice>().cloned();
    let wgpu_device = device.as_ref().map(|d| d.wgpu_device().clone());
    let queue = world.get_resource::<RenderQueue>().cloned();
    let info = world
        .get_resource::<RenderAdapterInfo>()
        .map(|i| i.0.clone());
    let mode = match (device, queue, info) {
        (Some(device), Some(queue), Some(info)) => {
            let ctx = GpuContext::from_device(
                device.wgpu_device().clone(),
                (**queue.0).clone(),
                (*info).clone(),
            );
            match (settings.force_cpu, gpu_capable(&ctx)) {
                (true, _) => {
                    warn!(
                        "heimdall: the CPU backend was forced (HeimdallSettings::force_cpu); \
                         every model runs on CPU workers"
                    );
                    shared.set_backend("cpu (forced)", Some(ctx.describe()));
                    BackendMode::Cpu
                }
                (false, Err(why)) => {
                    warn!(
                        "heimdall: {} cannot run the GPU kernels ({why}); every model runs on the \
                         CPU backend instead",
                        ctx.info.name
                    );
                    shared.set_backend("cpu (no compute)", Some(ctx.describe()));
                    BackendMode::Cpu
                }
                (false, Ok(())) => {
                    shared.set_backend("gpu", Some(ctx.describe()));
                    let timer = FrameTimer::new(&ctx.device, &ctx.queue);
                    world.insert_resource(FrameTimerRes(timer));
                    BackendMode::Gpu(Box::new(ctx))
                }
            }
        }
        _ => {
            warn!("heimdall: no render device; every model runs on the CPU backend");
            shared.set_backend("cpu (no device)", None);
            BackendMode::Cpu
        }
    };
    let hz = settings.frame_rate_hz(None);
    let budget = FrameBudget::new(hz, 0.0, settings.margin_ms, settings.relaxation_ms);
    let mut cfg = CoordinatorConfig::new(budget);
    cfg.cpu_workers = settings.cpu_workers.max(1);
    cfg.offload.enabled = settings.offload && matches!(mode, BackendMode::Gpu(_));
    let policy = policy_by_name(&settings.policy_name()).unwrap_or_else(|_| {
        warn!(
            "heimdall: unknown policy {:?}; using max_total_utility",
            settings.policy
        );
        Box::new(heimdall_coordinator::policy::MaxTotalUtility)
    });
    HeimdallRender {
        mode,
        settings: settings.clone(),
        coordinator: Coordinator::new(cfg, policy),
        instances: HashMap::new(),
        pool: WorkerPool::new(settings.cpu_workers),
        cpu_done: Mailbox::default(),
        frame: 0,
        readbacks_to_request: Vec::new(),
        cpu_steps_to_request: Vec::new(),
        untimed: Vec::new(),
        timed: HashMap::new(),
        next_index: 0,
        clock_start: shared.start(),
        device: wgpu_device,
    }
}

/// A new render device (first start or recovery after a lost device): everything compiled for
/// the old one is dropped and rebuilt.
fn on_new_device(world: &mut World) {
    let Some(old) = world.remove_resource::<HeimdallRender>() else {
        return;
    };
    let Some(shared) = world.get_resource::<HeimdallShared>().cloned() else {
        return;
    };
    let same = match (&old.device, world.get_resource::<RenderDevice>()) {
        (Some(old), Some(d)) => *old == *d.wgpu_device(),
        (None, None) => true,
        _ => false,
    };
    if same {
        world.insert_resource(old);
        return;
    }
    if old.frame > 0 {
        warn!("heimdall: the render device changed; recompiling every model");
    }
    let settings = old.settings.clone();
    drop(old);
    let state = make_state(world, &settings, &shared);
    world.insert_resource(state);
}

fn extract(
    mut ex: ResMut<Extracted>,
    dnns: Extract<Query<(Entity, &Dnn)>>,
    models: Extract<Res<Assets<DnnModel>>>,
    frames: Extract<Query<(Entity, &CameraFrame)>>,
    requests: Extract<Res<RequestQueue>>,
    monitors: Extract<Query<&bevy::window::Monitor, With<bevy::window::PrimaryMonitor>>>,
    shared: Res<HeimdallShared>,
) {
    ex.display_hz = monitors
        .iter()
        .find_map(|m| m.refresh_rate_millihertz)
        .map(|mhz| f64::from(mhz) / 1000.0);
    ex.dnns.clear();
    for (e, d) in &dnns {
        let model = models.get(&d.model);
        ex.dnns.insert(
            e,
            ExtractedDnn {
                name: model.map(|m| m.name.clone()).unwrap_or_default(),
                model: d.model.id(),
                graph: model.map(|m| m.graph.clone()),
                source: d.source,
                normalization: d.normalization,
                decoder: d.decoder,
                deadline_ms: d.deadline.map(|d| d.as_secs_f64() * 1e3),
                utility: d.utility,
            },
        );
    }
    ex.frames.clear();
    for (e, f) in &frames {
        ex.frames.insert(
            e,
            ExtractedFrame {
                image: f.image.id(),
                index: f.index,
                capture_ms: shared.ms_of(f.capture_time),
                size: f.size,
                pixels: f.pixels.clone(),
                content_variation: f.content_variation,
            },
        );
    }
    ex.requests.clear();
    ex.requests.extend(requests.0.iter().cloned());
}

fn begin_frame(
    mut ctx: RenderContext,
    mut timer: ResMut<FrameTimerRes>,
    state: Option<Res<HeimdallRender>>,
) {
    let (Some(t), Some(state)) = (timer.0.as_mut(), state) else {
        return;
    };
    t.begin(ctx.command_encoder(), state.frame);
}

#[allow(clippy::too_many_arguments)]
fn encode_frame(
    mut ctx: RenderContext,
    state: Option<ResMut<HeimdallRender>>,
    mut timer: ResMut<FrameTimerRes>,
    ex: Res<Extracted>,
    images: Res<RenderAssets<GpuImage>>,
    shared: Res<HeimdallShared>,
) {
    let Some(mut state) = state else { return };
    let state = &mut *state;
    let now = shared.now_ms();
    let frame = state.frame;
    let encoder = ctx.command_encoder();
    if let Some(t) = timer.0.as_mut() {
        t.mark(encoder, Mark::SceneEnd);
    }

    // 1. Models: start compiling new ones, pick up finished compilations, drop removed ones.
    state.sync_instances(&ex, &shared, now);

    // 2. Measurements that arrived: frame timestamps, readbacks, CPU work.
    if let Some(t) = timer.0.as_mut() {
        for marks in t.collect() {
            state.on_frame_marks(&marks, &shared);
        }
    }
    // Frames whose timestamps never came back (a failed map): their chunks are reported with
    // their estimates, so no inference waits forever.
    let stale: Vec<u64> = state
        .timed
        .keys()
        .copied()
        .filter(|&f| f + 16 < frame)
        .collect();
    for f in stale {
        if let Some((at, works)) = state.timed.remove(&f) {
            for (id, est) in works {
                state.coordinator.gpu_done(id, at, at + est);
            }
        }
    }
    let untimed = std::mem::take(&mut state.untimed);
    for (id, s, e) in untimed {
        state.coordinator.gpu_done(id, s, e);
    }
    state.collect_readbacks(&shared);
    state.collect_cpu_done(&shared, now);
    state.run_ready_cpu_steps();

    // 3. Start pending requests on idle instances (preprocessing into this encoder).
    for r in &ex.requests {
        if let Some(inst) = state.instances.get_mut(&r.entity) {
            inst.pending = Some(r.crop);
        }
    }
    let hz = state.settings.frame_rate_hz(ex.display_hz);
    // `FollowDisplay`: the budget follows the primary monitor's refresh rate once known.
    state.coordinator.set_frame_rate(hz);
    let mut preprocessed = false;
    let entities: Vec<Entity> = state.instances.keys().copied().collect();
    for e in entities {
        preprocessed |= state.start_if_idle(e, &ex, &images, encoder, now);
    }
    if preprocessed && let Some(t) = timer.0.as_mut() {
        t.mark(encoder, Mark::Preprocess);
    }

    // 4. This frame's decision, encoded after the scene.
    // On the GPU, this frame's chunks follow its scene passes: the window opens after the
    // measured render time (EMA of the timestamps) and closes at the next frame.
    let period = 1000.0 / hz;
    let render_ms = state.coordinator.config().budget.render_ms;
    let window = GpuWindow {
        start_ms: now + render_ms,
        end_ms: now + period,
    };
    let idle = state.pool.idle();
    let decision = state
        .coordinator
        .schedule(now, Event::FrameRendered, window, idle);
    let timed = timer.0.as_ref().is_some_and(FrameTimer::active);
    let mut works = Vec::new();
    for g in &decision.gpu {
        let Some(e) = state.entity_of(g.model) else {
            continue;
        };
        match state.encode_chunk(e, g.ops.clone(), encoder) {
            Ok(()) => {
                if timed && let Some(t) = timer.0.as_mut() {
                    let index = state.instances.get(&e).map_or(0, |i| i.index);
                    t.mark(
                        encoder,
                        Mark::Chunk {
                            work: g.id.0,
                            instance: index,
                        },
                    );
                    works.push((g.id, g.est_ms));
                } else {
                    state.untimed.push((g.id, now, now + g.est_ms));
                }
            }
            Err(err) => {
                error!(
                    "heimdall: encoding {} ops {:?}: {err}",
                    state.name_of(e),
                    g.ops
                );
                state.fail(e, err.to_string());
                state.coordinator.gpu_done(g.id, now, now);
            }
        }
    }
    if timed {
        state.timed.insert(frame, (now, works));
    }
    for c in decision.cpu {
        state.dispatch_cpu(c, now, encoder);
    }
    state.encode_pending_readbacks(encoder);
    if let Some(t) = timer.0.as_mut() {
        t.finish(encoder);
    }
    if !timed {
        shared
            .0
            .frames
            .sender()
            .send(FrameRecord::untimed(frame))
            .ok();
    }
    if shared
        .0
        .trace_requested
        .swap(false, std::sync::atomic::Ordering::AcqRel)
    {
        shared.set_trace(state.coordinator.timeline().to_chrome_trace_string());
    }
    state.frame += 1;
}

fn after_submit(state: Option<ResMut<HeimdallRender>>, mut timer: ResMut<FrameTimerRes>) {
    let Some(mut state) = state else { return };
    if let Some(t) = timer.0.as_mut() {
        t.after_submit();
    }
    state.request_after_submit();
    if let BackendMode::Gpu(ctx) = &state.mode {
        // Runs map callbacks that are due; never waits.
        let _ = ctx.device.poll(wgpu::PollType::Poll);
    }
}

impl HeimdallRender {
    fn entity_of(&self, model: ModelId) -> Option<Entity> {
        self.instances
            .iter()
            .find(|(_, i)| i.model_id == Some(model))
            .map(|(e, _)| *e)
    }

    fn name_of(&self, e: Entity) -> String {
        self.instances
            .get(&e)
            .map_or_else(|| format!("{e}"), |i| i.name.clone())
    }

    fn on_frame_marks(&mut self, marks: &timer::FrameMarks, shared: &HeimdallShared) {
        let Some((encode_ms, works)) = self.timed.remove(&marks.frame) else {
            return;
        };
        let scene = marks.time_of(Mark::SceneEnd).unwrap_or(0.0);
        if matches!(self.settings.mode, crate::CoordinationMode::Heimdall) {
            self.coordinator.observe_render(scene);
        }
        let mut prev = marks.time_of(Mark::Preprocess).unwrap_or(scene);
        let mut chunks = Vec::new();
        let mut reported = Vec::new();
        for (m, t) in &marks.marks {
            if let Mark::Chunk { work, instance } = m {
                let (s, e) = (encode_ms + prev, encode_ms + t);
                if let Some((id, _)) = works.iter().find(|(id, _)| id.0 == *work) {
                    self.coordinator.gpu_done(*id, s, e);
                    reported.push(*id);
                }
                chunks.push((*instance, t - prev));
                prev = *t;
            }
        }
        // Chunks past the query set's capacity: their estimates.
        for (id, est) in works.iter().filter(|(id, _)| !reported.contains(id)) {
            let s = encode_ms + prev;
            self.coordinator.gpu_done(*id, s, s + est);
        }
        shared
            .0
            .frames
            .sender()
            .send(FrameRecord {
                frame: marks.frame,
                timed: true,
                scene_ms: scene,
                gpu_total_ms: marks.total_ms(),
                chunks,
            })
            .ok();
    }

    fn request_after_submit(&mut self) {
        for e in std::mem::take(&mut self.readbacks_to_request) {
            if let Some(inst) = self.instances.get_mut(&e) {
                inst.request_readback();
            }
        }
        for (e, step) in std::mem::take(&mut self.cpu_steps_to_request) {
            if let Some(inst) = self.instances.get_mut(&e) {
                inst.request_cpu_step(step);
            }
        }
    }

    fn fail(&mut self, e: Entity, why: String) {
        if let Some(inst) = self.instances.get_mut(&e) {
            inst.state = InstanceState::Failed;
            let _ = why;
            inst.job = None;
        }
    }
}

/// The capture stamp the coordinator gets for a request.
pub(crate) fn request_of(frame: &ExtractedFrame) -> Request {
    Request {
        capture_ms: frame.capture_ms,
        content_variation: frame.content_variation,
    }
}
