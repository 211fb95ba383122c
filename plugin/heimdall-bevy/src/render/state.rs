//! The render world's state of its DNNs, shared by the systems that compile them
//! ([`super::models`]), guard them ([`super::guard`]), schedule, encode and read them back.
//! Each [`Dnn`] of the main world is an entity of the render world (spawned and despawned by
//! `extract_dnns` with its main world's entity, a [`MainEntity`]) carrying its components: the
//! DNN as extracted ([`ExtractedDnn`], every frame) and, once its model starts compiling, what
//! it was compiled with ([`DnnSetup`]), its model ([`RenderModel`]), its inference in flight
//! ([`Inference`]; the three queried together as [`RenderDnn`]) and its guard ([`GuardPhase`]). The systems query them;
//! [`RenderDnns`] keeps what is not one DNN's.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bevy::ecs::query::QueryData;
use bevy::prelude::*;
use bevy::render::render_resource::TextureId;
use bevy::render::sync_world::MainEntity;
use bevy::tasks::Task;
use heimdall_coordinator::{ModelId, ProfileKey, StepCost, UtilityParams};
use heimdall_cpu::CpuModel;
use heimdall_gpu::guard::{GuardConfig, GuardDecision};
use heimdall_gpu::preprocess::{PreprocessBinding, Preprocessor};
use heimdall_gpu::{GpuContext, GpuModel, Placement, Precision};
use heimdall_ir::Graph;
use heimdall_vision::image::{Crop, Normalization};

use super::cache::GpuCompiled;
use super::finish::Finish;
use crate::asset::DnnModel;
use crate::bridge::channel::Outbox;
use crate::camera::FramePins;
use crate::clock::HeimdallClock;
use crate::decoder::DecoderHandle;
use crate::dnn::{ConvCache, DnnError};
use crate::settings::HeimdallSettings;
use crate::stats::stages::StageTimes;

/// A [`Dnn`] as the render world sees it: a component of its render entity, extracted every
/// frame.
#[derive(Component, Clone)]
pub(crate) struct ExtractedDnn {
    pub name: String,
    pub model: AssetId<DnnModel>,
    pub graph: Option<Arc<heimdall_ir::Graph>>,
    pub source: Entity,
    pub normalization: Normalization,
    /// The cache the DNN asks for.
    pub conv_cache: ConvCache,
    /// Whether its crop is a region of interest ([`crate::dnn::InputCrop::Roi`]).
    pub roi: bool,
    /// The DNN's request period, ms (`RequestMode::Every`).
    pub request_period_ms: Option<f64>,
    /// It is requested on demand (`RequestMode::OnDemand`).
    pub on_demand: bool,
    pub decoder: Option<DecoderHandle>,
    pub deadline_ms: Option<f64>,
    pub utility: UtilityParams,
    /// The guard calibrates on the DNN's first inference ([`Calibration::FirstFrame`]).
    pub calibrate_on_frame: bool,
    /// The app's calibration image ([`Calibration::Image`]), extracted while the DNN's guard
    /// waits for it: `None` until it is loaded, an error if it cannot be used.
    pub calibration_image: Option<Result<CalibrationFrame, String>>,
}

/// A model compiled for the backends.
pub(crate) struct Compiled {
    pub gpu: Option<Arc<GpuModel>>,
    pub pre: Option<Preprocessor>,
    /// Bind groups of the preprocessing, per source texture.
    pub bindings: HashMap<TextureId, PreprocessBinding>,
    pub cpu: Arc<Mutex<CpuModel>>,
    pub steps: usize,
    /// Input `[H, W, C]`.
    pub input: [usize; 3],
    pub output_shapes: Arc<Vec<Vec<usize>>>,
    pub placement: Vec<Placement>,
    /// The profile: each step's measured cost.
    pub costs: Vec<StepCost>,
    /// What became of the convolution cache on the GPU, in one line (`None`: off as asked, or
    /// no GPU).
    pub cache_decision: Option<String>,
    /// Each step's measured time on the CPU, ms (one thread).
    pub cpu_ms: Arc<Vec<f64>>,
    /// Why a model of an app with a GPU runs on the CPU backend (the device's limits).
    pub cpu_fallback: Option<String>,
    /// Threads its CPU model runs on (the CPU slots an inference there occupies).
    pub cpu_threads: usize,
    /// How much faster its CPU model is on `cpu_threads` than on one thread (measured).
    pub cpu_speedup: f64,
}

pub(crate) enum ModelState {
    Compiling(Task<Result<(Compiled, GuardStart), DnnError>>),
    Ready(Box<Compiled>),
    Failed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadbackState {
    None,
    /// Copies encoded in this frame's encoder.
    Encoded,
    /// Mapping requested.
    Requested,
}

/// The inference a DNN has in flight.
pub(crate) struct Job {
    pub frame_index: u64,
    /// Its source's pinned frames (this inference pinned `frame_index` as it started).
    pub pins: FramePins,
    pub capture_ms: f64,
    /// When the render world started it (ms on the plugin's clock).
    pub started_ms: f64,
    pub crop: Crop,
    pub pixels: Arc<Vec<u8>>,
    pub frame_size: UVec2,
    /// Preprocessed on the GPU in this frame's encoder (before its first chunk).
    pub preprocess: Option<TextureId>,
    /// The rest of the inference runs on the CPU model.
    pub on_cpu: bool,
    pub need_readback: bool,
    pub readback: ReadbackState,
    /// CPU fallback step whose inputs are being downloaded: (work, step, requested).
    pub cpu_step: Option<(heimdall_coordinator::WorkId, usize, bool)>,
    /// The offloaded rest of the inference, waiting for the GPU's activations.
    pub resume: Option<ResumeJob>,
}

/// An offloaded inference that continues on the CPU from the GPU's activations at `ops.start`
/// (downloaded after this frame's chunks) instead of starting again from its input.
pub(crate) struct ResumeJob {
    /// The coordinator's CPU work.
    pub work: heimdall_coordinator::WorkId,
    /// The ops the CPU runs.
    pub ops: std::ops::Range<usize>,
    /// The state's download.
    pub download: heimdall_gpu::ResumeDownload,
    /// Its mapping was requested (after the frame's submission).
    pub requested: bool,
    /// Sends the outputs on, when the CPU ends the inference.
    pub finish: Option<Finish>,
    /// The CPU slots it occupies (its CPU model's threads).
    pub slots: usize,
}

/// What a DNN's model was compiled with: a component of its render entity from the moment its
/// model starts compiling, with [`RenderModel`] and [`Inference`] (the three are inserted and
/// removed together: when the DNN restarts, its model changes or the device does, and it
/// compiles again). A change of any of it recompiles, so it never changes in place.
#[derive(Component)]
pub(crate) struct DnnSetup {
    pub index: u32,
    pub name: String,
    pub model: AssetId<DnnModel>,
    pub source: Entity,
    pub decoder: Option<DecoderHandle>,
    pub normalization: Normalization,
    /// The convolution cache it was compiled with, and whether for a region of interest (a
    /// change recompiles).
    pub conv_cache: (ConvCache, bool),
    pub deadline_ms: Option<f64>,
    pub utility: UtilityParams,
    /// Requested on demand (`RequestMode::OnDemand`): the coordinator answers each request on
    /// the processor that is soonest.
    pub on_demand: bool,
}

/// A DNN's model: compiling, ready or failed, and its id in the coordinator.
#[derive(Component)]
pub(crate) struct RenderModel {
    pub state: ModelState,
    /// Set once the coordinator knows the model.
    pub model_id: Option<ModelId>,
}

impl RenderModel {
    /// A model starting to compile (not yet known to the coordinator).
    pub fn compiling(task: Task<Result<(Compiled, GuardStart), DnnError>>) -> RenderModel {
        RenderModel {
            state: ModelState::Compiling(task),
            model_id: None,
        }
    }

    /// The compiled model, once ready.
    pub fn compiled(&self) -> Option<&Compiled> {
        match &self.state {
            ModelState::Ready(c) => Some(c),
            _ => None,
        }
    }
}

/// A DNN's inference in flight (its job, with its readback) and the request waiting for it.
#[derive(Component, Default)]
pub(crate) struct Inference {
    pub job: Option<Job>,
    /// A request waiting for the DNN to be idle.
    pub pending: Option<Crop>,
    /// The crop of its last GPU preprocessing: a different one invalidates the convolution
    /// cache (its blocks would compare pixels of another region).
    pub last_crop: Option<Crop>,
    /// The guard calibrates on its first inference ([`Calibration::FirstFrame`]).
    pub calibrate_on_frame: bool,
}

/// A compiled (or compiling) DNN as the render world's systems query it: what it was compiled
/// with, its model and its inference ([`DnnSetup`], [`RenderModel`], [`Inference`]). Systems
/// that need only some of them query those alone.
#[derive(QueryData)]
#[query_data(mutable)]
pub(crate) struct RenderDnn {
    pub setup: &'static DnnSetup,
    pub model: &'static mut RenderModel,
    pub run: &'static mut Inference,
}

/// The components a compiled DNN's render entity carries besides its [`GuardPhase`] (to insert
/// them together and remove them together).
pub(crate) type RenderDnnBundle = (DnnSetup, RenderModel, Inference);

/// How to finish the current inference `run` of DNN `dnn` (its main-world entity) away from
/// the render world.
pub(crate) fn finish_of(
    dnn: Entity,
    setup: &DnnSetup,
    model: &RenderModel,
    run: &Inference,
    outbox: &Outbox,
    clock: HeimdallClock,
) -> Option<Finish> {
    let job = run.job.as_ref()?;
    Some(Finish {
        dnn,
        clock,
        stages: StageTimes {
            started_ms: job.started_ms,
            ..StageTimes::default()
        },
        name: setup.name.clone(),
        frame_index: job.frame_index,
        pins: job.pins.clone(),
        capture_ms: job.capture_ms,
        crop: job.crop,
        frame_size: job.frame_size,
        decoder: setup.decoder.clone(),
        shapes: model
            .compiled()
            .map(|c| c.output_shapes.clone())
            .unwrap_or_default(),
        outbox: outbox.clone(),
        resumed_from_step: None,
    })
}

/// The render world's bookkeeping of its DNNs that is no one DNN's.
#[derive(Resource, Default)]
pub(crate) struct RenderDnns {
    /// The coordinator index the next DNN gets.
    pub next_index: u32,
    /// The DNNs (main-world entities) compiled this frame: to register with the coordinator.
    pub newly_ready: Vec<Entity>,
    /// Coordinator models of DNNs removed (or recompiled) since the last planning: to retire.
    pub removed: Vec<ModelId>,
}

/// The render world's DNNs with a model (compiling, ready or failed): each one's main-world
/// entity (the one messages to the main world name) and its [`RenderDnn`].
pub(crate) type DnnQuery<'w, 's> = Query<'w, 's, (&'static MainEntity, RenderDnn)>;

/// [`DnnQuery`], read only.
pub(crate) type DnnReadQuery<'w, 's> = Query<'w, 's, (&'static MainEntity, RenderDnnReadOnly)>;

/// The render-world state of the DNN whose main-world entity is `main`.
pub(crate) fn dnn_mut<'a, 's>(
    dnns: &'a mut DnnQuery<'_, 's>,
    main: Entity,
) -> Option<RenderDnnItem<'a, 's>> {
    dnns.iter_mut()
        .find(|(m, _)| m.id() == main)
        .map(|(_, d)| d)
}

/// The DNN the coordinator knows as `model`: its main-world entity and render-world state.
pub(crate) fn dnn_of_model<'a, 's>(
    dnns: &'a mut DnnQuery<'_, 's>,
    model: ModelId,
) -> Option<(Entity, RenderDnnItem<'a, 's>)> {
    dnns.iter_mut()
        .find(|(_, d)| d.model.model_id == Some(model))
        .map(|(m, d)| (m.id(), d))
}

/// The name of DNN `main` (its main-world entity) for logs.
pub(crate) fn name_of(dnns: &DnnQuery, main: Entity) -> String {
    dnns.iter()
        .find(|(m, _)| m.id() == main)
        .map_or_else(|| format!("{main}"), |(_, d)| d.setup.name.clone())
}

/// The CPU model of a DNN and what was measured on it: the fallback and offload target of every
/// model compiled for the GPU from the same graph (the f32 model the guard replaces hands it
/// to the guarded one).
#[derive(Clone)]
pub(crate) struct CpuPart {
    pub cpu: Arc<Mutex<CpuModel>>,
    pub steps: usize,
    /// Input `[H, W, C]`.
    pub input: [usize; 3],
    pub output_shapes: Arc<Vec<Vec<usize>>>,
    /// Each step's measured time on the CPU, ms (one thread).
    pub cpu_ms: Arc<Vec<f64>>,
    /// Threads `cpu` runs on (`render/models.rs`, `cpu_threads_for`).
    pub threads: usize,
    /// Its measured speedup on `threads` over one thread.
    pub speedup: f64,
}

impl CpuPart {
    /// Zeros for every input of the model (the profile's inputs).
    pub fn zeros(&self) -> Vec<Vec<f32>> {
        self.cpu
            .lock()
            .map(|m| {
                m.input_shapes()
                    .iter()
                    .map(|s| vec![0.0; s.iter().product()])
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Compiled {
    /// Its CPU model and measurements.
    pub fn cpu_part(&self) -> CpuPart {
        CpuPart {
            cpu: self.cpu.clone(),
            steps: self.steps,
            input: self.input,
            output_shapes: self.output_shapes.clone(),
            cpu_ms: self.cpu_ms.clone(),
            threads: self.cpu_threads,
            speedup: self.cpu_speedup,
        }
    }

    /// `cpu` with `gpu` (none: CPU only): the placement and each step's cost.
    pub fn assemble(cpu: CpuPart, gpu: Option<GpuCompiled>) -> Compiled {
        let (gpu, pre, placement, costs, cache_decision) = match gpu {
            Some(compiled) => {
                let (model, profile) = (compiled.model, compiled.profile);
                let placement = model.placement().to_vec();
                let ms = |d: Duration| d.as_secs_f64() * 1e3;
                let costs = (0..cpu.steps)
                    .map(|i| match placement.get(i) {
                        Some(Placement::Gpu) => {
                            StepCost::gpu_and_cpu(ms(profile.steps[i]), cpu.cpu_ms[i])
                        }
                        _ => StepCost::cpu_only(cpu.cpu_ms[i]),
                    })
                    .collect();
                (
                    Some(Arc::new(model)),
                    Some(compiled.pre),
                    placement,
                    costs,
                    compiled.decision,
                )
            }
            None => (
                None,
                None,
                vec![Placement::Cpu; cpu.steps],
                cpu.cpu_ms.iter().map(|&t| StepCost::cpu_only(t)).collect(),
                None,
            ),
        };
        Compiled {
            gpu,
            pre,
            bindings: HashMap::new(),
            cpu: cpu.cpu,
            steps: cpu.steps,
            input: cpu.input,
            output_shapes: cpu.output_shapes,
            cpu_ms: cpu.cpu_ms,
            cpu_threads: cpu.threads,
            cpu_speedup: cpu.speedup,
            placement,
            costs,
            cache_decision,
            cpu_fallback: None,
        }
    }
}

/// The least time between two runs' starts of a DNN, ms: a frame, or its request period.
pub(crate) fn min_interval_ms(settings: &HeimdallSettings, request_period_ms: Option<f64>) -> f64 {
    let frame_ms = 1e3 / settings.frame_rate_hz(None).max(1.0);
    request_period_ms.unwrap_or(0.0).max(frame_ms)
}

/// What the guard needs from the settings.
#[derive(Clone, Debug)]
pub(crate) struct GuardPlan {
    pub config: GuardConfig,
    /// [`crate::HeimdallSettings::guard_store`].
    pub store: Option<PathBuf>,
}

/// How a model compiled for the GPU starts, as to the guard.
pub(crate) enum GuardStart {
    /// No guard: compiled as asked.
    Off,
    /// Compiled in f32 until the guard decides; `key` is the store's key (with a store).
    Pending { key: Option<ProfileKey> },
    /// Compiled with a stored decision.
    Reused(Box<GuardDecision>),
}

/// The pixels and the crop the guard calibrates on.
#[derive(Clone)]
pub(crate) struct CalibrationFrame {
    /// RGBA8, tightly packed rows.
    pub rgba: Arc<Vec<u8>>,
    pub size: UVec2,
    pub crop: Crop,
}

/// Where a render-world DNN's accuracy guard ([`crate::guard`]) stands: a component of its
/// render entity, inserted and removed with its [`RenderDnn`].
#[derive(Component)]
pub(crate) enum GuardPhase {
    /// No guard, or no more (off, f32, CPU, decided, failed).
    Idle,
    /// The f32 model runs; waiting for the calibration input.
    AwaitingInput { key: Option<ProfileKey> },
    /// The calibration input arrived; the check starts at the next `prepare_models`.
    Input {
        frame: CalibrationFrame,
        key: Option<ProfileKey>,
    },
    /// The check runs on the compile task.
    Running(Task<Result<Box<Guarded>, String>>),
    /// The guarded model waits for the DNN to be idle.
    Ready(Box<Guarded>),
}

impl GuardPhase {
    /// Whether the guarded model is ready to replace the running one (no new inference starts).
    pub fn swap_waiting(&self) -> bool {
        matches!(self, GuardPhase::Ready(_))
    }
}

/// The guarded model, ready to run, and the decision.
pub(crate) struct Guarded {
    pub compiled: Compiled,
    pub decision: GuardDecision,
}

/// Everything the check needs, moved to the compile task.
pub(crate) struct GuardJob {
    pub name: String,
    pub graph: Arc<Graph>,
    pub ctx: GpuContext,
    pub precision: Precision,
    pub norm: Normalization,
    pub cache: (ConvCache, bool),
    pub min_interval_ms: f64,
    pub plan: GuardPlan,
    pub key: Option<ProfileKey>,
    pub frame: CalibrationFrame,
    /// The running model's CPU part (shared with the guarded one).
    pub cpu: CpuPart,
}
