//! What comes back to the main world, the way Bevy's own `gpu_readback` does it: the render
//! world and the CPU workers send `RenderMessage`s through a channel; once per update the main
//! world drains it, keeps each DNN's typed [`DnnStatus`] up to date, delivers decoded results to
//! their entities (the decoder's components, then [`DnnOutput`]) and triggers [`DnnResult`] (or
//! [`DnnFailed`]) on the DNN's entity.

use std::sync::Arc;
use std::time::Duration;

use bevy::asset::LoadState;
use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use crossbeam_channel::{Receiver, Sender, TrySendError};
use heimdall_ir::conv_cache::CacheCounts;
use heimdall_vision::image::Crop;

use crate::asset::DnnModel;
use crate::camera::CameraFrame;
use crate::clock::HeimdallClock;
use crate::decoder::{Decoded, DecoderHandle};
use crate::dnn::{
    Backend, Dnn, DnnError, DnnFailed, DnnOutput, DnnPlacement, DnnResult, DnnStatus,
};
use crate::faults::{HeimdallFaults, RESULTS_QUEUE};
use crate::guard::GuardStatus;
use crate::stages::StageTimes;
use crate::stats::{FrameRecord, HeimdallStats};

/// Where inference runs in this app, and why.
#[derive(Clone, Debug, Default, PartialEq, Eq, Reflect)]
#[reflect(Debug, PartialEq, Default, Clone)]
pub enum BackendKind {
    /// Not known yet (before the render device exists).
    #[default]
    Unknown,
    /// On Bevy's render device.
    Gpu,
    /// On CPU workers only; the reason.
    Cpu(String),
}

/// The backend the plugin chose and the adapter (a main-world resource).
#[derive(Resource, Clone, Debug, Default, Reflect)]
#[reflect(Resource, Debug, Default, Clone)]
pub struct HeimdallBackend {
    /// Where inference runs.
    pub kind: BackendKind,
    /// The adapter's description, when there is a render device.
    pub adapter: Option<String>,
}

impl HeimdallBackend {
    /// `gpu`, `cpu (<reason>)` or `unknown`.
    pub fn name(&self) -> String {
        match &self.kind {
            BackendKind::Unknown => "unknown".into(),
            BackendKind::Gpu => "gpu".into(),
            BackendKind::Cpu(why) => format!("cpu ({why})"),
        }
    }
}

/// A finished inference on its way to the main world.
pub(crate) struct FinishedInference {
    pub dnn: Entity,
    pub frame_index: u64,
    pub capture_ms: f64,
    pub tensors: Arc<Vec<Vec<f32>>>,
    pub backend: Backend,
    pub crop: Crop,
    /// The decoder and what it made of the outputs.
    pub decoded: Option<(DecoderHandle, Decoded)>,
    /// What the convolution cache did in this run (GPU runs with the cache on).
    pub cache: Option<ConvCacheRun>,
    /// When it passed each stage on its way here.
    pub stages: StageTimes,
    /// Where the CPU took over the GPU's activations (an offloaded inference), if it did.
    pub resumed_from_step: Option<usize>,
}

/// The convolution cache's work in one GPU run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConvCacheRun {
    /// The run's counts.
    pub counts: CacheCounts,
    /// How many ops the model caches.
    pub cached_ops: usize,
    /// GPU time the run saved by the calibration's model (negative: it cost), ms.
    pub saved_ms: Option<f64>,
}

/// What the render world and the workers tell the main world.
pub(crate) enum RenderMessage {
    /// A DNN's status changed.
    Status(Entity, DnnStatus),
    /// Where the coordinator runs a DNN, and at what rate, changed.
    Placement(Entity, DnnPlacement),
    /// An inference finished (and was decoded).
    Result(Box<FinishedInference>),
    /// What the GPU did in a frame.
    Frame(FrameRecord),
    /// The render world submitted and presented a frame at this instant; the render thread's
    /// phases since the previous one (none for the first frame).
    Presented(
        std::time::Instant,
        Option<crate::render::phases::FramePhases>,
    ),
    /// The coordinator's Chrome trace, as asked by [`HeimdallTrace::request`].
    Trace(String),
    /// The backend (at start, and after a new render device).
    Backend(HeimdallBackend),
    /// A DNN instance's index (as in [`FrameRecord::chunks`]) and model name.
    Instance(u32, String),
    /// What became of a DNN's convolution cache when its model compiled for the GPU (kept,
    /// dropped and why; `ConvCache::Off` sends none).
    ConvCacheDecision {
        /// The DNN.
        dnn: Entity,
        /// One line: kept, dropped or off, and why.
        decision: String,
        /// How many ops the compiled model caches (0 when dropped).
        cached_ops: usize,
    },
    /// Where a DNN's accuracy guard stands (see [`crate::guard`]).
    Guard(Entity, GuardStatus),
    /// The coordinator completed an inference of `dnn` `latency_ms` after admitting it (to its
    /// last op: the latency the simulator measures).
    Scheduled {
        /// The DNN.
        dnn: Entity,
        /// Admission → last op, ms.
        latency_ms: f64,
    },
    /// While recording: a GPU inference of `dnn` had its outputs read `ms` after its
    /// submission's GPU work ended (`render/record.rs`).
    Readback {
        /// The DNN.
        dnn: Entity,
        /// Submission's GPU end → outputs read, ms.
        ms: f64,
    },
    /// The run's recording, as asked by [`HeimdallRecording::request`].
    Recording(Box<RecordedRun>),
    /// A DNN runs on the CPU backend because the GPU cannot run its kernels: why.
    CpuFallback(Entity, String),
    /// A DNN started an inference on a frame of its source.
    Started {
        /// The DNN.
        dnn: Entity,
        /// Its camera source.
        source: Entity,
        /// The frame's index.
        frame_index: u64,
    },
}

/// The render world's and the workers' end of the channel (bounded: [`RESULTS_QUEUE`]
/// messages not drained yet; beyond, new ones are dropped and counted), and of the render
/// world's list of failed DNNs.
#[derive(Resource, Clone)]
pub(crate) struct Outbox {
    tx: Sender<RenderMessage>,
    failed: Sender<(Entity, DnnError)>,
    faults: HeimdallFaults,
}

/// DNNs that failed away from the render world (a panic on a decode or worker thread, or in the
/// main world's delivery): the render world stops them (render world).
#[derive(Resource)]
pub(crate) struct FailedDnns(pub Receiver<(Entity, DnnError)>);

impl Outbox {
    /// The channel to the main world (`tx`, bounded), the render world's list of failed DNNs,
    /// and the counters of the faults.
    pub fn new(tx: Sender<RenderMessage>, faults: HeimdallFaults) -> (Self, FailedDnns) {
        let (failed, failed_rx) = crossbeam_channel::bounded(RESULTS_QUEUE);
        (Outbox { tx, failed, faults }, FailedDnns(failed_rx))
    }

    pub fn send(&self, m: RenderMessage) {
        match self.tx.try_send(m) {
            Ok(()) => self.faults.queues().results.depth(self.tx.len()),
            Err(TrySendError::Full(_)) => self.faults.queues().results.drop_one(),
            // The main world only goes away when the app exits.
            Err(TrySendError::Disconnected(_)) => {}
        }
    }

    /// `dnn` cannot go on (until [`crate::faults::RestartDnn`]): its status becomes
    /// `Failed(error)` (a `DnnFailed` event in the main world) and the render world stops it.
    pub fn fail(&self, dnn: Entity, error: DnnError) {
        error!("heimdall: DNN {dnn}: {error}");
        if let DnnError::Panicked(_) = error {
            self.faults.panicked();
        }
        let _ = self.failed.try_send((dnn, error.clone()));
        self.send(RenderMessage::Status(dnn, DnnStatus::Failed(error)));
    }

    /// A DNN's CPU work ended with `err`: a job that panicked ([`crate::faults::PANICKED`])
    /// fails the DNN ([`Outbox::fail`]), any other error is logged (the DNN is idle again).
    pub fn cpu_work_error(&self, name: &str, dnn: Entity, err: &str) {
        match err.strip_prefix(crate::faults::PANICKED) {
            Some(message) => self.fail(dnn, crate::faults::panicked("its CPU work", message)),
            None => error!("heimdall: {name}: CPU work: {err}"),
        }
    }

    /// The run's fault counters.
    pub fn faults(&self) -> &HeimdallFaults {
        &self.faults
    }
}

/// The main world's end of the channel.
#[derive(Resource)]
pub(crate) struct Inbox(pub Receiver<RenderMessage>);

/// The coordinator's Chrome trace (`chrome://tracing`, Perfetto): ask with
/// [`HeimdallTrace::request`], read `HeimdallTrace::latest` a few frames later.
#[derive(Resource, Default, Debug, Reflect)]
#[reflect(Resource, Debug, Default)]
pub struct HeimdallTrace {
    pub(crate) requested: bool,
    latest: Option<String>,
}

impl HeimdallTrace {
    /// Asks the render world for the trace.
    pub fn request(&mut self) {
        self.requested = true;
    }

    /// The latest trace that arrived (taken).
    pub fn take(&mut self) -> Option<String> {
        self.latest.take()
    }
}

/// The run as `heimdall simulate` replays it (issue #15: the simulator checked against the app):
/// start it with [`HeimdallRecording::start`] where the measured window begins, ask for it with
/// [`HeimdallRecording::request`] and read [`HeimdallRecording::take`] a few frames later. The
/// render world then records every request, frame start and scene time, and each inference's
/// chunks with their measured times (memory bounded by the coordinator crate's `RunRecorder`).
#[derive(Resource, Default, Debug, Reflect)]
#[reflect(Resource, Debug, Default)]
pub struct HeimdallRecording {
    pub(crate) start_requested: bool,
    pub(crate) export_requested: bool,
    latest: Option<RecordedRun>,
}

/// A recorded run: a scenario file and a replay file (formats in `assets/scenarios/README.md`).
#[derive(Clone, Debug, Reflect)]
#[reflect(Debug, Clone)]
pub struct RecordedRun {
    /// The scenario (`heimdall simulate SCENARIO`), decisions per frame.
    pub scenario_json: String,
    /// The measured render and step times (`--replay`).
    pub replay_json: String,
}

impl HeimdallRecording {
    /// Starts recording (again: what was recorded before is forgotten).
    pub fn start(&mut self) {
        self.start_requested = true;
    }

    /// Asks the render world for the recording so far.
    pub fn request(&mut self) {
        self.export_requested = true;
    }

    /// The latest recording that arrived (taken).
    pub fn take(&mut self) -> Option<RecordedRun> {
        self.latest.take()
    }
}

/// What the main world updates from the render world's messages: the DNNs' components, the
/// camera frames' pins, the statistics and the plugin's resources.
#[derive(SystemParam)]
pub(crate) struct Receivers<'w, 's> {
    commands: Commands<'w, 's>,
    clock: Res<'w, HeimdallClock>,
    stats: ResMut<'w, HeimdallStats>,
    trace: ResMut<'w, HeimdallTrace>,
    recording: ResMut<'w, HeimdallRecording>,
    backend: ResMut<'w, HeimdallBackend>,
    statuses: Query<'w, 's, &'static mut DnnStatus>,
    guards: Query<'w, 's, &'static mut GuardStatus>,
    placements: Query<'w, 's, &'static mut DnnPlacement>,
    dnns: Query<'w, 's, &'static Dnn>,
    models: Res<'w, Assets<DnnModel>>,
    frames: Query<'w, 's, &'static mut CameraFrame>,
}

/// Drains the channel: statuses, results, GPU frame records, traces.
pub(crate) fn receive(inbox: Res<Inbox>, mut to: Receivers) {
    to.trace.requested = false;
    to.recording.start_requested = false;
    to.recording.export_requested = false;
    for m in inbox.0.try_iter() {
        to.take(m);
    }
}

impl Receivers<'_, '_> {
    /// Applies one message from the render world or a worker.
    fn take(&mut self, m: RenderMessage) {
        match m {
            RenderMessage::Status(e, status) => {
                set_status(&mut self.commands, &mut self.statuses, e, status);
            }
            RenderMessage::Placement(dnn, placement) => {
                let name = self.model_name(dnn);
                self.stats.record_placement(&name, dnn, &placement);
                if let Ok(mut current) = self.placements.get_mut(dnn) {
                    current.set_if_neq(placement);
                }
            }
            RenderMessage::Frame(r) => self.stats.record_gpu_frame(r),
            RenderMessage::Presented(t, phases) => self.stats.record_presented(t, phases),
            RenderMessage::Trace(t) => self.trace.latest = Some(t),
            RenderMessage::Recording(r) => self.recording.latest = Some(*r),
            RenderMessage::Scheduled { dnn, latency_ms } => {
                let name = self.model_name(dnn);
                self.stats.record_scheduled(&name, dnn, latency_ms);
            }
            RenderMessage::Readback { dnn, ms } => {
                let name = self.model_name(dnn);
                self.stats.record_readback(&name, dnn, ms);
            }
            RenderMessage::Backend(b) => *self.backend = b,
            RenderMessage::CpuFallback(dnn, why) => {
                let name = self.model_name(dnn);
                self.stats.record_cpu_fallback(&name, dnn, &why);
                if let Ok(mut e) = self.commands.get_entity(dnn) {
                    e.insert(crate::dnn::CpuFallback(why));
                }
            }
            RenderMessage::Instance(index, name) => {
                self.stats.instances.insert(index, name);
            }
            RenderMessage::ConvCacheDecision {
                dnn,
                decision,
                cached_ops,
            } => {
                let name = self.model_name(dnn);
                self.stats
                    .record_conv_cache_decision(&name, dnn, decision, cached_ops);
            }
            RenderMessage::Guard(dnn, status) => self.set_guard(dnn, status),
            RenderMessage::Started {
                dnn,
                source,
                frame_index,
            } => {
                if let Ok(mut f) = self.frames.get_mut(source) {
                    f.pin_started(dnn, frame_index);
                }
            }
            RenderMessage::Result(r) => self.deliver(r),
        }
    }

    /// The model name of DNN `dnn` for the statistics (the entity while its model is not
    /// loaded).
    fn model_name(&self, dnn: Entity) -> String {
        model_name(&self.dnns, &self.models, dnn)
    }

    /// Where DNN `dnn`'s accuracy guard stands: to the statistics and its [`GuardStatus`].
    fn set_guard(&mut self, dnn: Entity, status: GuardStatus) {
        let name = self.model_name(dnn);
        self.stats.record_guard(&name, dnn, &status);
        if let Ok(mut current) = self.guards.get_mut(dnn)
            && *current != status
        {
            *current = status;
        }
    }

    /// A finished inference: its statistics, its frame pinned as the DNN's latest result, and
    /// its delivery to the DNN's entity (queued: [`deliver_to_entity`]).
    fn deliver(&mut self, r: Box<FinishedInference>) {
        let now = self.clock.now_ms();
        let capture_time = Duration::from_secs_f64(r.capture_ms.max(0.0) / 1e3);
        let latency = Duration::from_secs_f64((now - r.capture_ms).max(0.0) / 1e3);
        let dnn = self.dnns.get(r.dnn).ok();
        let name = dnn
            .and_then(|d| self.models.get(&d.model))
            .map_or_else(|| format!("{}", r.dnn), |m| m.name.clone());
        let deadline = dnn.and_then(|d| d.deadline);
        if let Some(mut f) = dnn.and_then(|d| self.frames.get_mut(d.source).ok()) {
            f.pin_result(r.dnn, r.frame_index);
        }
        let stats = &mut self.stats;
        stats.record_result(&name, r.dnn, latency, deadline, r.frame_index, r.backend);
        if r.resumed_from_step.is_some() {
            stats.record_resumed(&name, r.dnn);
        }
        stats.record_stages(&name, r.dnn, r.capture_ms, &r.stages, self.clock.now_ms());
        if let Some(c) = r.cache {
            stats.record_conv_cache(&name, r.dnn, &c.counts, c.cached_ops, c.saved_ms);
        }
        let output = DnnOutput {
            frame_index: r.frame_index,
            capture_time,
            latency,
            tensors: r.tensors,
            backend: r.backend,
            crop: r.crop,
            resumed_from_step: r.resumed_from_step,
        };
        let (dnn, decoded) = (r.dnn, r.decoded);
        self.commands
            .queue(move |world: &mut World| deliver_to_entity(world, dnn, decoded, output));
    }
}

/// Delivers a finished inference to DNN `dnn`'s entity: the decoder's components, then
/// [`DnnOutput`], then a [`DnnResult`] event. A decoder that panics delivering fails its DNN,
/// not the app.
fn deliver_to_entity(
    world: &mut World,
    dnn: Entity,
    decoded: Option<(DecoderHandle, Decoded)>,
    output: DnnOutput,
) {
    let Ok(mut entity) = world.get_entity_mut(dnn) else {
        return; // despawned while the inference ran
    };
    if let Some((decoder, value)) = decoded {
        // An app's decoder that panics delivering fails its DNN, not the app.
        if let Err(message) = crate::faults::catch(|| decoder.deliver(value, &mut entity)) {
            let error = crate::faults::panicked("the decoder's delivery", &message);
            if let Some(outbox) = world.get_resource::<Outbox>() {
                outbox.fail(dnn, error);
            }
            return;
        }
    }
    entity.insert(output.clone());
    world.trigger(DnnResult {
        entity: dnn,
        output,
    });
}

fn set_status(
    commands: &mut Commands,
    statuses: &mut Query<&mut DnnStatus>,
    e: Entity,
    status: DnnStatus,
) {
    let Ok(mut current) = statuses.get_mut(e) else {
        return;
    };
    if *current == status {
        return;
    }
    if let DnnStatus::Failed(error) = &status {
        commands.trigger(DnnFailed {
            entity: e,
            error: error.clone(),
        });
    }
    *current = status;
}

/// A model asset that failed to load fails its DNN (a missing or corrupt file must not leave the
/// app waiting for it).
pub(crate) fn watch_model_loads(
    mut commands: Commands,
    assets: Res<AssetServer>,
    mut dnns: Query<(Entity, &Dnn, &mut DnnStatus)>,
) {
    for (e, dnn, mut status) in &mut dnns {
        if *status != DnnStatus::Loading {
            continue;
        }
        if let Some(LoadState::Failed(err)) = assets.get_load_state(&dnn.model) {
            let path = dnn
                .model
                .path()
                .map_or_else(|| "the model".to_string(), |p| p.to_string());
            let error = DnnError::Load(format!("{path}: {err}"));
            error!("heimdall: {error}");
            commands.trigger(DnnFailed {
                entity: e,
                error: error.clone(),
            });
            *status = DnnStatus::Failed(error);
        }
    }
}

/// The model name of DNN `dnn` for the statistics (the entity while its model is not loaded).
fn model_name(dnns: &Query<&Dnn>, models: &Assets<DnnModel>, dnn: Entity) -> String {
    dnns.get(dnn)
        .ok()
        .and_then(|d| models.get(&d.model))
        .map_or_else(|| format!("{dnn}"), |m| m.name.clone())
}
