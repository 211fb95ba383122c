//! This frame's decision: the coordinator (Heimdall's, or a baseline) is told what finished and
//! what the GPU measured, idle DNNs start their pending requests (their crop is set for the GPU
//! preprocessing), and the coordinator picks the chunks that fit after the scene and the CPU work
//! for idle workers. The result is the [`FramePlan`] that `encode` records.

use std::collections::HashMap;
use std::time::Instant;

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use bevy::render::render_asset::RenderAssets;
use bevy::render::render_resource::TextureId;
use bevy::render::renderer::RenderQueue;
use bevy::render::texture::GpuImage;
use heimdall_coordinator::{
    CacheSpec, Coordinator, CoordinatorConfig, CpuWork, Event, FrameBudget, GpuWindow, GpuWork,
    ModelId, ModelProfile, ModelStatus, Processor, Request, WorkId,
};
use heimdall_vision::image::Crop;

use super::backend::InferenceBackend;
use super::cpu_lane::CpuLane;
use super::extract::{ExtractedDisplay, ExtractedRecording, ExtractedTraceRequest};
use super::guard::{CalibrationFrame, GuardPhase};
use super::models::{
    Compiled, DnnQuery, Job, ModelState, ReadbackState, RenderDnnItem, RenderDnns,
};
use super::pacing::PacingMargin;
use super::recording::{RegisteredModel, RunEvent, RunEvents};
use super::state::{DnnReadQuery, dnn_mut};
use super::timer::{FrameMarks, FrameTimer};
use crate::bridge::channel::{Outbox, RenderMessage};
use crate::camera::{ExtractedFrame, ExtractedFrames};
use crate::clock::HeimdallClock;
use crate::dnn::{Backend, DnnPlacement, RateShortfall};
use crate::requests::ExtractedRequests;
use crate::settings::{CoordinationMode, HeimdallSettings};
use crate::stats::FrameRecord;
use crate::workers::Workers;

/// The coordinator and the bookkeeping of GPU work in flight (render world).
#[derive(Resource)]
pub(crate) struct Scheduler {
    pub coordinator: Coordinator,
    /// Render-world frame number.
    pub frame: u64,
    /// GPU work not timed by timestamps: reported with its estimate next frame.
    pub untimed: Vec<(WorkId, f64, f64)>,
    /// Chunks encoded per timed frame: frame -> (encode time ms, works with their estimates).
    pub timed: HashMap<u64, (f64, Vec<(WorkId, f64)>)>,
    /// The margin learned from the wall clock (`Heimdall` mode with `adaptive_margin`).
    pub pacing: PacingMargin,
    /// Where the run's events go (`render/recording/events.rs`: the recording and the scheduler
    /// latencies observe them).
    pub events: RunEvents,
    /// Each DNN's placement as last sent to the main world, and the plan it came from.
    placements: Placements,
    /// Where the coordinator goes between frames, to hand out CPU work as workers finish.
    pub lane: CpuLane,
    /// CPU work the lane handed out that needs this frame's encoder (a fallback step's inputs,
    /// the GPU's activations): dispatched with this frame's CPU work.
    pub held_cpu: Vec<CpuWork>,
}

impl Scheduler {
    /// The coordinator for `settings`, with CPU offload when the GPU path exists.
    pub fn new(settings: &HeimdallSettings, gpu: bool, clock: HeimdallClock) -> Self {
        let hz = settings.frame_rate_hz(None);
        let budget = FrameBudget::new(hz, 0.0, settings.margin_ms, settings.relaxation_ms);
        let mut cfg = CoordinatorConfig::new(budget);
        cfg.cpu_workers = settings.cpu_slots();
        cfg.placement.enabled = settings.offload && gpu;
        cfg.placement.rule = settings.placement_rule;
        cfg.placement.cpu_chunk_ms = cpu_chunk_ms(hz);
        // An offloaded inference the GPU had started goes on from the GPU's activations at the
        // boundaries each model lists as resumable (`set_resumable_steps` as it registers);
        // without the list (no GPU model) it starts again on the CPU, or finishes on the GPU if
        // that is sooner.
        cfg.offload_resumes_from_gpu = false;
        let policy = settings.coordinator_policy().build();
        let spare = Coordinator::new(cfg, Box::new(heimdall_coordinator::policy::MaxTotalUtility));
        let events = RunEvents::default();
        let lane = CpuLane::new(spare, events.clone(), clock);
        Scheduler {
            coordinator: Coordinator::new(cfg, policy),
            frame: 0,
            untimed: Vec::new(),
            timed: HashMap::new(),
            pacing: PacingMargin::default(),
            events,
            placements: Placements::default(),
            lane,
            held_cpu: Vec::new(),
        }
    }

    /// Sends the main world each DNN's placement that changed ([`DnnPlacement`]): when the
    /// coordinator made a new plan, and every [`PLACEMENT_REFRESH_MS`] (the requested rate is
    /// measured continuously).
    fn report_placements(&mut self, dnns: &DnnQuery, now: f64, outbox: &Outbox) {
        let plan_at = self.coordinator.plan().at_ms;
        let p = &mut self.placements;
        if p.plan_at_ms == Some(plan_at) && now - p.checked_ms < PLACEMENT_REFRESH_MS {
            return;
        }
        p.plan_at_ms = Some(plan_at);
        p.checked_ms = now;
        p.sent.retain(|e, _| dnns.iter().any(|(m, _)| m.id() == *e));
        for (m, d) in dnns.iter() {
            let e = m.id();
            let Some(id) = d.model.model_id else { continue };
            let placement = placement_of(&self.coordinator.status(id, now));
            if p.sent.get(&e) != Some(&placement) {
                outbox.send(RenderMessage::Placement(e, placement.clone()));
                p.sent.insert(e, placement);
            }
        }
    }

    /// Reports GPU work `id` done (see [`Coordinator::gpu_done`]), to the run's events too.
    pub fn gpu_done(&mut self, id: WorkId, start_ms: f64, end_ms: f64) {
        let c = self.coordinator.gpu_done(id, start_ms, end_ms);
        self.events.work_done(id, start_ms, end_ms, c);
    }

    /// Reports CPU work `id` of `worker` done (see [`Coordinator::cpu_done`]), to the events
    /// too.
    pub fn cpu_done(&mut self, id: WorkId, worker: usize, start_ms: f64, end_ms: f64) {
        let c = self.coordinator.cpu_done(id, worker, start_ms, end_ms);
        self.events.work_done(id, start_ms, end_ms, c);
    }

    /// `model`'s outputs were read at `at_ms` (see [`Coordinator::gpu_outputs_read`]).
    pub fn gpu_outputs_read(&mut self, model: ModelId, at_ms: f64) {
        let c = self.coordinator.gpu_outputs_read(model, at_ms);
        self.events.completed(c);
    }

    /// Feeds one frame's timestamps back: the scene's GPU time and each chunk's.
    fn on_frame_marks(&mut self, marks: &FrameMarks, heimdall_mode: bool, outbox: &Outbox) {
        let Some((encode_ms, works)) = self.timed.remove(&marks.frame) else {
            return;
        };
        let scene = marks.scene_ms();
        self.events.record(|| RunEvent::Scene(marks.frame, scene));
        if heimdall_mode {
            self.coordinator.observe_render(scene);
        }
        let mut chunks = Vec::new();
        let mut reported = Vec::new();
        let mut prev = 0.0;
        for (work, instance, start, end) in marks.chunks() {
            prev = end;
            if let Some((id, _)) = works.iter().find(|(id, _)| id.0 == work) {
                self.gpu_done(*id, encode_ms + start, encode_ms + end);
                reported.push(*id);
            }
            chunks.push((instance, end - start));
        }
        // Chunks past the query set's capacity: their estimates.
        for (id, est) in works.iter().filter(|(id, _)| !reported.contains(id)) {
            let s = encode_ms + prev;
            self.gpu_done(*id, s, s + est);
        }
        outbox.send(RenderMessage::Frame(FrameRecord {
            frame: marks.frame,
            timed: true,
            scene_ms: scene,
            gpu_total_ms: marks.busy_ms(),
            chunks,
            pacing_margin_ms: self.pacing.extra_ms,
        }));
    }

    /// Reports what the GPU finished: timestamped frames, frames whose timestamps never came
    /// back (with their estimates, so no inference waits forever) and untimed work.
    fn collect_timings(
        &mut self,
        timer: Option<&mut FrameTimer>,
        heimdall_mode: bool,
        outbox: &Outbox,
    ) {
        if let Some(t) = timer {
            for marks in t.collect() {
                self.on_frame_marks(&marks, heimdall_mode, outbox);
            }
        }
        let frame = self.frame;
        let stale: Vec<u64> = self
            .timed
            .keys()
            .copied()
            .filter(|&f| f + 16 < frame)
            .collect();
        for f in stale {
            if let Some((at, works)) = self.timed.remove(&f) {
                for (id, est) in works {
                    self.gpu_done(id, at, at + est);
                }
            }
        }
        for (id, s, e) in std::mem::take(&mut self.untimed) {
            self.gpu_done(id, s, e);
        }
    }
}

/// The longest piece of continuous CPU work, ms, at `hz`: 0.75 of the frame period, at least the
/// coordinator's 8 ms. The plugin decides once per frame, so a CPU slot freed mid-frame waits
/// for the next frame's decision: a piece about a frame long keeps the slot busy for the frame
/// (shorter pieces would leave it idle the rest of the frame, and a slot runs at most one piece
/// per frame), and an event still waits at most a frame for its slot, as it does for the
/// decision anyway.
fn cpu_chunk_ms(hz: f64) -> f64 {
    (0.75 * 1000.0 / hz.max(1.0)).max(heimdall_coordinator::PlacementConfig::default().cpu_chunk_ms)
}

/// How often the placements are checked for changes between two plans, ms.
const PLACEMENT_REFRESH_MS: f64 = 500.0;

/// The placements sent to the main world.
#[derive(Default)]
struct Placements {
    /// Per DNN, the last one sent.
    sent: HashMap<Entity, DnnPlacement>,
    /// When the plan they came from was made.
    plan_at_ms: Option<f64>,
    /// When they were last checked.
    checked_ms: f64,
}

/// A DNN's placement as the app reads it, from its coordinator status.
fn placement_of(s: &ModelStatus) -> DnnPlacement {
    DnnPlacement {
        backend: Some(match s.mode {
            Processor::Gpu => Backend::Gpu,
            Processor::Cpu => Backend::Cpu,
        }),
        cpu_threads: s.cpu_threads,
        requested_rate_hz: s.requested_rate_hz,
        granted_rate_hz: s.granted_rate_hz,
        expected_latency_ms: s.expected_latency_ms,
        shortfall: s.shortfall.map(|f| RateShortfall {
            requested_hz: f.requested_hz,
            granted_hz: f.granted_hz,
            reason: f.reason.to_string(),
        }),
    }
}

/// What this frame runs (render world).
#[derive(Resource, Default)]
pub(crate) struct FramePlan {
    /// When the decision was taken (the plugin's clock, ms).
    pub now_ms: f64,
    /// GPU chunks, in queue order.
    pub gpu: Vec<GpuWork>,
    /// CPU work for idle workers.
    pub cpu: Vec<CpuWork>,
}

/// What the frame's decision reads from the extract: requests, camera frames, the display's
/// rate, the app's asks for a trace or a recording, and the uploaded camera textures.
#[derive(SystemParam)]
pub(crate) struct FrameInputs<'w> {
    requests: Res<'w, ExtractedRequests>,
    frames: Res<'w, ExtractedFrames>,
    display: Res<'w, ExtractedDisplay>,
    trace: Res<'w, ExtractedTraceRequest>,
    recording: Res<'w, ExtractedRecording>,
    images: Res<'w, RenderAssets<GpuImage>>,
    queue: Option<Res<'w, RenderQueue>>,
}

/// Registers newly compiled models, takes in timings and requests, starts idle DNNs and asks the
/// coordinator for this frame's work.
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_frame(
    mut sched: ResMut<Scheduler>,
    mut dnns: DnnQuery,
    mut guards: Query<(Entity, &mut GuardPhase)>,
    mut book: ResMut<RenderDnns>,
    mut plan: ResMut<FramePlan>,
    mut backend: ResMut<InferenceBackend>,
    inputs: FrameInputs,
    settings: Res<HeimdallSettings>,
    workers: Res<Workers>,
    clock: Res<HeimdallClock>,
    outbox: Res<Outbox>,
) {
    let _span = info_span!("heimdall::plan_frame").entered();
    let sched = &mut *sched;
    let now = clock.now_ms();
    retire_models(sched, (&mut dnns, &mut guards), &mut book, &outbox);
    for e in std::mem::take(&mut book.newly_ready) {
        if let Some(mut d) = dnn_mut(&mut dnns, e) {
            register_model(sched, &mut d);
        }
    }
    let heimdall_mode = matches!(settings.mode, CoordinationMode::Heimdall);
    sched.collect_timings(backend.timer.as_mut(), heimdall_mode, &outbox);
    if inputs.recording.start {
        let cfg = *sched.coordinator.config();
        sched
            .events
            .start(cfg, settings.dnn_work_first, settings.free_at_readback);
    }
    // The setting is read every frame (`render/cpu_lane.rs`): the recording says how it was.
    let on_completion = settings.cpu_on_completion;
    sched
        .events
        .record(|| RunEvent::CpuOnCompletion(on_completion));
    take_requests(sched, &mut dnns, &inputs, now);
    // `FollowDisplay`: the budget follows the primary monitor's refresh rate once known.
    let hz = settings.frame_rate_hz(inputs.display.0);
    sched.coordinator.set_frame_rate(hz);
    // Idle DNNs take their pending request on their source's latest frame.
    for (r, mut guard) in &mut guards {
        if let Ok((dnn, mut d)) = dnns.get_mut(r) {
            start_inference(sched, (dnn.id(), &mut d, &mut guard), &inputs, now);
        }
    }
    let window = gpu_window(sched, &settings, heimdall_mode, hz, now);
    decide(
        sched, &dnns, &mut plan, &inputs, &workers, &outbox, window, now,
    );
}

/// Guarded models replace the f32 ones of idle DNNs (registered afterwards, as new models are).
/// The replaced models, and those of removed DNNs, leave the coordination: otherwise one
/// offloaded when it was replaced would hold its place on the CPU for good. A recording keeps a
/// removed DNN (its requests were made) but not a replaced model.
fn retire_models(
    sched: &mut Scheduler,
    (dnns, guards): (&mut DnnQuery, &mut Query<(Entity, &mut GuardPhase)>),
    book: &mut RenderDnns,
    outbox: &Outbox,
) {
    for old in super::guard::swap_when_idle(dnns, guards, book, outbox) {
        sched.coordinator.retire(old);
        sched.events.send(RunEvent::Retired(old));
    }
    for old in std::mem::take(&mut book.removed) {
        sched.coordinator.retire(old);
    }
}

/// Registers a newly compiled model with the coordinator and the run's recording: its costs,
/// CPU threads, on-demand requests, resumable steps and convolution cache.
fn register_model(sched: &mut Scheduler, d: &mut RenderDnnItem) {
    let Some(c) = d.model.compiled() else { return };
    let profile = ModelProfile::new(d.setup.name.clone(), c.costs.clone());
    let id = sched.coordinator.register_with_profile(
        d.setup.name.clone(),
        profile,
        d.setup.utility,
        d.setup.deadline_ms,
    );
    // Its CPU model's threads (the slots a CPU inference occupies) and their measured
    // speedup (`render/models.rs`); whether the app asks for it on demand.
    sched
        .coordinator
        .set_cpu_parallelism(id, c.cpu_threads, c.cpu_speedup);
    sched.coordinator.set_on_demand(id, d.setup.on_demand);
    // Where an offloaded inference can go on from the GPU's activations
    // (`render/cpu.rs` downloads them); elsewhere it starts again from its input.
    let resumable_steps = c.gpu.as_ref().map(|g| g.resume().steps());
    if let Some(steps) = &resumable_steps {
        sched.coordinator.set_resumable_steps(id, Some(steps));
    }
    let (cached, spec) = conv_cache_spec(c);
    let conv_cache = (!cached.is_empty()).then_some(spec);
    if let Some(spec) = &conv_cache
        && let Err(e) = sched.coordinator.set_conv_cache(id, Some(spec.clone()))
    {
        warn!("heimdall: {}: conv cache costs: {e}", d.setup.name);
    }
    // The recording knows every model from the start (the simulator's costs follow the cache
    // as the coordinator's do).
    sched
        .events
        .send(RunEvent::Registered(Box::new(RegisteredModel {
            id,
            name: d.setup.name.clone(),
            costs: c.costs.clone(),
            deadline_ms: d.setup.deadline_ms,
            utility: d.setup.utility,
            cpu_threads: c.cpu_threads,
            cpu_speedup: c.cpu_speedup,
            on_demand: d.setup.on_demand,
            resumable_steps,
            conv_cache,
        })));
    d.model.model_id = Some(id);
}

/// The ops a compiled model caches, and what the coordinator counts for them.
fn conv_cache_spec(c: &Compiled) -> (Vec<usize>, CacheSpec) {
    let cached = c
        .gpu
        .as_ref()
        .map(|g| g.report().cached_ops.clone())
        .unwrap_or_default();
    let mut spec = CacheSpec::new(cached.clone());
    // What a hit saves of a cached step: the calibration's saving of a whole run that
    // reuses everything, over the cached steps' share of the run's GPU time.
    if let Some(cal) = c.gpu.as_ref().and_then(|g| g.conv_cache()?.calibration()) {
        let total: f64 = c.costs.iter().map(|s| s.gpu_ms).sum();
        let share: f64 = cached
            .iter()
            .filter_map(|&i| c.costs.get(i))
            .map(|s| s.gpu_ms)
            .sum();
        if total > 0.0 && share > 0.0 {
            spec.saving = (cal.saving() * total / share).clamp(0.0, 1.0);
        }
    }
    (cached, spec)
}

/// The app's requests of this frame become each DNN's pending request (the coordinator counts
/// the request rate from here); on-demand DNNs are told to the coordinator again (an app may
/// switch a DNN between on-demand and continuous requests while it runs).
fn take_requests(sched: &mut Scheduler, dnns: &mut DnnQuery, inputs: &FrameInputs, now: f64) {
    for r in &inputs.requests.0 {
        if let Some(mut d) = dnn_mut(dnns, r.dnn) {
            d.run.pending = Some(r.crop);
            // The plugin holds a request until its DNN is idle: the coordinator counts the
            // app's request rate from here, not from the submissions.
            if let Some(id) = d.model.model_id {
                sched.coordinator.requested(id, now);
            }
            if let (Some(id), Some(f)) = (d.model.model_id, inputs.frames.0.get(&d.setup.source)) {
                let (capture, variation) = (f.capture_ms, f.content_variation);
                sched
                    .events
                    .record(|| RunEvent::Request(id, capture, variation));
            }
        }
    }
    for (_, d) in dnns.iter() {
        if let Some(id) = d.model.model_id {
            sched.coordinator.set_on_demand(id, d.setup.on_demand);
        }
    }
}

/// An idle DNN `dnn` with a pending request starts an inference on its source's latest frame:
/// its GPU preprocessing is set up for the frame's texture and crop, the guard takes its
/// calibration input, and the coordinator admits the request.
fn start_inference(
    sched: &mut Scheduler,
    (dnn, d, guard): (Entity, &mut RenderDnnItem, &mut GuardPhase),
    inputs: &FrameInputs,
    now: f64,
) {
    let (Some(id), Some(crop)) = (d.model.model_id, d.run.pending) else {
        return;
    };
    // A guarded model waiting to replace this one: no new inference until the swap.
    if d.run.job.is_some() || sched.coordinator.busy(id) || guard.swap_waiting() {
        return;
    }
    let Some(frame) = inputs.frames.0.get(&d.setup.source) else {
        return;
    };
    let Some(preprocess) = set_up_preprocessing(d, frame, inputs, crop) else {
        return;
    };
    d.run.pending = None;
    if d.run.calibrate_on_frame
        && let GuardPhase::AwaitingInput { key } = &*guard
        && super::guard::has_content(&frame.pixels)
    {
        // The guard's calibration input: this first inference's frame and crop (the first
        // one with content: not a camera's black start-up frames).
        *guard = GuardPhase::Input {
            frame: CalibrationFrame {
                rgba: frame.pixels.clone(),
                size: frame.size,
                crop,
            },
            key: key.clone(),
        };
    }
    // The frame's texture stays out of the source's ring until the DNN's result from it is
    // delivered (main world), so a synced background can show it.
    frame.pins.started(dnn, frame.index);
    d.run.job = Some(Job {
        frame_index: frame.index,
        pins: frame.pins.clone(),
        capture_ms: frame.capture_ms,
        started_ms: now,
        crop,
        pixels: frame.pixels.clone(),
        frame_size: frame.size,
        preprocess,
        on_cpu: false,
        need_readback: false,
        readback: ReadbackState::None,
        cpu_step: None,
        resume: None,
    });
    let request = Request {
        capture_ms: frame.capture_ms,
        content_variation: frame.content_variation,
    };
    sched.coordinator.submit(id, request, now);
    sched.events.record(|| RunEvent::Admitted(id));
}

/// Binds the frame's texture to a ready DNN's GPU preprocessing and sets its crop: the texture
/// to preprocess (`Some(None)` without GPU preprocessing), or `None` when the DNN cannot start
/// this frame (the texture is not uploaded yet; a failed binding or crop drops the request).
fn set_up_preprocessing(
    d: &mut RenderDnnItem,
    frame: &ExtractedFrame,
    inputs: &FrameInputs,
    crop: Crop,
) -> Option<Option<TextureId>> {
    let ModelState::Ready(c) = &mut d.model.state else {
        return None;
    };
    let (Some(gpu), Some(pre), Some(_)) = (&c.gpu, &c.pre, &inputs.queue) else {
        return Some(None);
    };
    // Not uploaded yet.
    let image = inputs.images.get(frame.image)?;
    let key = image.texture.id();
    if let std::collections::hash_map::Entry::Vacant(slot) = c.bindings.entry(key) {
        match pre.bind(&image.texture_view) {
            Ok(b) => {
                slot.insert(b);
            }
            Err(err) => {
                error!(
                    "heimdall: {}: binding the camera texture: {err}",
                    d.setup.name
                );
                d.run.pending = None;
                return None;
            }
        }
    }
    if d.run.last_crop != Some(crop) {
        // Another region of the frame: the cached activations are of the old one (a
        // tracked ROI moves every frame, so its cache never hits; a full frame's crop
        // never changes).
        gpu.invalidate_conv_cache();
        d.run.last_crop = None;
    }
    if let Err(err) = pre.set_crop(&gpu.context().queue, &crop) {
        warn!("heimdall: {}: crop {crop:?}: {err}", d.setup.name);
        d.run.pending = None;
        return None;
    }
    d.run.last_crop = Some(crop);
    Some(Some(key))
}

/// This frame's chunks follow its scene passes: the window opens after the measured render
/// time (EMA of the timestamps) and closes at the next frame, less the margin learned from
/// the wall clock.
fn gpu_window(
    sched: &mut Scheduler,
    settings: &HeimdallSettings,
    heimdall_mode: bool,
    hz: f64,
    now: f64,
) -> GpuWindow {
    let period = 1000.0 / hz;
    let render_ms = sched.coordinator.config().budget.render_ms;
    let extra = if heimdall_mode && settings.adaptive_margin {
        sched.pacing.on_frame(Instant::now(), period, render_ms)
    } else {
        0.0
    };
    GpuWindow {
        start_ms: now + render_ms,
        end_ms: now + period - extra,
    }
}

/// Asks the coordinator for this frame's work in `window` (CPU work for the idle workers the
/// lane's held work leaves), tells the run's events, sends the main world the trace when asked
/// and the placements, and fills the [`FramePlan`].
#[allow(clippy::too_many_arguments)]
fn decide(
    sched: &mut Scheduler,
    dnns: &DnnQuery,
    plan: &mut FramePlan,
    inputs: &FrameInputs,
    workers: &Workers,
    outbox: &Outbox,
    window: GpuWindow,
    now: f64,
) {
    // The slots of work the lane handed out for this frame's encoder are taken.
    let held: usize = sched.held_cpu.iter().map(|w| w.threads.max(1)).sum();
    let idle = workers.pool.idle().saturating_sub(held);
    let decision = sched
        .coordinator
        .schedule(now, Event::FrameRendered, window, idle);
    sched.pacing.planned(!decision.gpu.is_empty());
    let frame = sched.frame;
    sched
        .events
        .record(|| RunEvent::Planned(frame, now, decision.gpu.clone(), decision.cpu.clone()));
    sched.report_placements(dnns, now, outbox);
    let mut cpu = std::mem::take(&mut sched.held_cpu);
    cpu.extend(decision.cpu);
    *plan = FramePlan {
        now_ms: now,
        gpu: decision.gpu,
        cpu,
    };
    if inputs.trace.0 {
        outbox.send(RenderMessage::Trace(
            sched.coordinator.timeline().to_chrome_trace_string(),
        ));
    }
}

/// Lends the coordinator to the workers (`render/cpu_lane.rs`) once the render world is done
/// with it for the frame: after the frame's DNN encoding
/// ([`HeimdallSettings::cpu_lend_after_encode`]), else at the end of the render frame
/// (`RenderSystems::Cleanup`; there it does nothing if lent already); never while
/// [`HeimdallSettings::cpu_on_completion`] is off (both read every frame).
pub(crate) fn lend_cpu_lane(
    mut sched: ResMut<Scheduler>,
    dnns: DnnReadQuery,
    workers: Res<Workers>,
    outbox: Res<Outbox>,
    settings: Res<HeimdallSettings>,
) {
    if !settings.cpu_on_completion {
        return;
    }
    let lane = sched.lane.clone();
    let Scheduler {
        coordinator, frame, ..
    } = &mut *sched;
    let dnns = dnns.iter().map(|(m, d)| (m.id(), d));
    lane.lend((coordinator, *frame), dnns, &workers, &outbox);
}

/// Whether the coordinator is lent to the CPU lane from the end of the frame's DNN encoding (a
/// run condition).
pub(crate) fn lend_after_encode(settings: Res<HeimdallSettings>) -> bool {
    settings.cpu_on_completion && settings.cpu_lend_after_encode
}

/// Takes the coordinator back before the render world prepares the next frame; the CPU work the
/// lane handed out that needs this frame's encoder goes out with this frame's.
pub(crate) fn take_back_cpu_lane(mut sched: ResMut<Scheduler>, mut dnns: DnnQuery) {
    let lane = sched.lane.clone();
    let held = lane.take_back(&mut sched.coordinator, &mut dnns);
    sched.held_cpu.extend(held);
}

#[cfg(test)]
mod tests {
    use super::cpu_chunk_ms;

    /// Pieces of CPU work about a frame long (three quarters of it), never under 8 ms.
    #[test]
    fn cpu_pieces_fill_three_quarters_of_a_frame() {
        assert_eq!(cpu_chunk_ms(30.0), 25.0);
        assert_eq!(cpu_chunk_ms(60.0), 12.5);
        assert!((cpu_chunk_ms(90.0) - 25.0 / 3.0).abs() < 1e-9);
        assert_eq!(cpu_chunk_ms(120.0), 8.0);
        assert_eq!(cpu_chunk_ms(0.0), 750.0);
    }
}
