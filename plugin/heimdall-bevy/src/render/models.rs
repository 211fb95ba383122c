//! The DNNs in the render world: each [`Dnn`] entity's model compiled for Bevy's own
//! `RenderDevice` (and always for the CPU, the fallback and offload target) on a background
//! task, warmed and profiled before its first inference, and the inference it has in flight.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bevy::prelude::*;
use bevy::render::Extract;
use bevy::render::render_resource::TextureId;
use bevy::tasks::{AsyncComputeTaskPool, Task, futures::check_ready};
use heimdall_coordinator::{ModelId, StepCost, UtilityParams};
use heimdall_cpu::{CpuModel, CpuOptions};
use heimdall_gpu::preprocess::{PreprocessBinding, Preprocessor};
use heimdall_gpu::{GpuContext, GpuModel, Placement, Precision};
use heimdall_vision::image::{Crop, Normalization};

use super::backend::InferenceBackend;
use super::cache::{GpuCompiled, GpuJob, compile_gpu};
use super::finish::Finish;
use super::guard::{CalibrationFrame, GuardPhase, GuardPlan, GuardStart};
use crate::asset::DnnModel;
use crate::decoder::DecoderHandle;
use crate::dnn::{Backend, ConvCache, Dnn, DnnError, DnnStatus, InputCrop, RequestMode};
use crate::guard::{Calibration, GuardOutcome, GuardStatus};
use crate::results::{Outbox, RenderMessage};
use crate::settings::HeimdallSettings;

/// A [`Dnn`] as the render world sees it.
#[derive(Clone)]
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
    pub decoder: Option<DecoderHandle>,
    pub deadline_ms: Option<f64>,
    pub utility: UtilityParams,
    /// The guard calibrates on the DNN's first inference ([`Calibration::FirstFrame`]).
    pub calibrate_on_frame: bool,
    /// The app's calibration image ([`Calibration::Image`]), extracted while the DNN's guard
    /// waits for it: `None` until it is loaded, an error if it cannot be used.
    pub calibration_image: Option<Result<CalibrationFrame, String>>,
}

/// Every [`Dnn`] of the main world (render world).
#[derive(Resource, Default)]
pub(crate) struct ExtractedDnns(pub HashMap<Entity, ExtractedDnn>);

pub(crate) fn extract_dnns(
    mut ex: ResMut<ExtractedDnns>,
    dnns: Extract<Query<(Entity, &Dnn)>>,
    models: Extract<Res<Assets<DnnModel>>>,
    images: Extract<Option<Res<Assets<Image>>>>,
    server: Extract<Res<AssetServer>>,
    render: Res<RenderDnns>,
) {
    ex.0.clear();
    for (e, d) in &dnns {
        let model = models.get(&d.model);
        let awaiting = render
            .map
            .get(&e)
            .is_some_and(|r| matches!(r.guard, GuardPhase::AwaitingInput { .. }));
        let calibration_image = match &d.calibration {
            Calibration::Image(handle) if awaiting => {
                calibration_frame(handle, d, model, images.as_deref(), &server)
            }
            _ => None,
        };
        ex.0.insert(
            e,
            ExtractedDnn {
                name: model.map(|m| m.name.clone()).unwrap_or_default(),
                model: d.model.id(),
                graph: model.map(|m| m.graph.clone()),
                source: d.source,
                normalization: d.normalization,
                conv_cache: d.conv_cache,
                roi: matches!(d.crop, InputCrop::Roi(_)),
                request_period_ms: match d.request {
                    RequestMode::Every(p) => Some(p.as_secs_f64() * 1e3),
                    RequestMode::Continuous | RequestMode::OnDemand => None,
                },
                decoder: d.decoder.clone(),
                deadline_ms: d.deadline.map(|d| d.as_secs_f64() * 1e3),
                utility: d.utility,
                calibrate_on_frame: d.calibration == Calibration::FirstFrame,
                calibration_image,
            },
        );
    }
}

/// The app's calibration image as RGBA8 pixels with the DNN's crop ([`Calibration::Image`]):
/// `None` while it loads.
fn calibration_frame(
    handle: &Handle<Image>,
    dnn: &Dnn,
    model: Option<&DnnModel>,
    images: Option<&Assets<Image>>,
    server: &AssetServer,
) -> Option<Result<CalibrationFrame, String>> {
    let shown = || {
        handle
            .path()
            .map_or_else(|| format!("{:?}", handle.id()), |p| p.to_string())
    };
    if let Some(bevy::asset::LoadState::Failed(err)) = server.get_load_state(handle) {
        return Some(Err(format!("the calibration image {}: {err}", shown())));
    }
    let image = images?.get(handle)?;
    let (w, h) = (image.width(), image.height());
    let rgba8 = matches!(
        image.texture_descriptor.format,
        wgpu::TextureFormat::Rgba8Unorm | wgpu::TextureFormat::Rgba8UnormSrgb
    );
    let data = match &image.data {
        Some(d) if rgba8 => Some(d.clone()),
        Some(_) => image
            .convert(wgpu::TextureFormat::Rgba8UnormSrgb)
            .and_then(|i| i.data),
        None => None,
    };
    let Some(rgba) = data.filter(|d| d.len() == 4 * w as usize * h as usize && w > 0 && h > 0)
    else {
        return Some(Err(format!(
            "the calibration image {} ({:?}, {w}x{h}) has no 8-bit RGBA pixels in the main world",
            shown(),
            image.texture_descriptor.format
        )));
    };
    let crop = match dnn.crop {
        InputCrop::Letterbox => {
            let shape = model?.input_shape(0)?;
            let (mh, mw) = (*shape.get(1)? as u32, *shape.get(2)? as u32);
            Crop::letterbox(w, h, mw, mh)
        }
        InputCrop::Full | InputCrop::Roi(_) => Crop::FULL,
    };
    Some(Ok(CalibrationFrame {
        rgba: Arc::new(rgba),
        size: UVec2::new(w, h),
        crop,
    }))
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
    /// Each step's measured time on the CPU, ms.
    pub cpu_ms: Arc<Vec<f64>>,
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
    pub capture_ms: f64,
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
}

/// One DNN entity in the render world.
pub(crate) struct RenderDnn {
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
    pub state: ModelState,
    /// Set once the coordinator knows the model.
    pub model_id: Option<ModelId>,
    pub job: Option<Job>,
    /// A request waiting for the DNN to be idle.
    pub pending: Option<Crop>,
    /// The crop of its last GPU preprocessing: a different one invalidates the convolution
    /// cache (its blocks would compare pixels of another region).
    pub last_crop: Option<Crop>,
    /// Its accuracy guard ([`crate::guard`]).
    pub guard: GuardPhase,
    /// The guard calibrates on its first inference ([`Calibration::FirstFrame`]).
    pub calibrate_on_frame: bool,
}

impl RenderDnn {
    /// How to finish its current inference away from the render world.
    pub fn finish(&self, dnn: Entity, outbox: &Outbox) -> Option<Finish> {
        let job = self.job.as_ref()?;
        Some(Finish {
            dnn,
            name: self.name.clone(),
            frame_index: job.frame_index,
            capture_ms: job.capture_ms,
            crop: job.crop,
            frame_size: job.frame_size,
            decoder: self.decoder.clone(),
            shapes: self
                .compiled()
                .map(|c| c.output_shapes.clone())
                .unwrap_or_default(),
            outbox: outbox.clone(),
        })
    }

    /// The compiled model, once ready.
    pub fn compiled(&self) -> Option<&Compiled> {
        match &self.state {
            ModelState::Ready(c) => Some(c),
            _ => None,
        }
    }
}

/// The render world's DNNs.
#[derive(Resource, Default)]
pub(crate) struct RenderDnns {
    pub map: HashMap<Entity, RenderDnn>,
    next_index: u32,
    /// Compiled this frame: to register with the coordinator.
    pub newly_ready: Vec<Entity>,
}

impl RenderDnns {
    /// The entity of the DNN the coordinator knows as `model`.
    pub fn entity_of(&self, model: ModelId) -> Option<Entity> {
        self.map
            .iter()
            .find(|(_, d)| d.model_id == Some(model))
            .map(|(e, _)| *e)
    }

    /// A DNN's name for logs.
    pub fn name_of(&self, e: Entity) -> String {
        self.map
            .get(&e)
            .map_or_else(|| format!("{e}"), |d| d.name.clone())
    }
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
    /// Each step's measured time on the CPU, ms.
    pub cpu_ms: Arc<Vec<f64>>,
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
            placement,
            costs,
            cache_decision,
        }
    }
}

/// Compiles `graph` for the CPU and measures its steps (one warm-up run, then one timed run).
fn compile_cpu(graph: &heimdall_ir::Graph) -> Result<CpuPart, DnnError> {
    let &input = graph
        .inputs
        .first()
        .ok_or_else(|| DnnError::Input("the model has no input".into()))?;
    let shape = graph.tensor(input).shape.clone();
    let input3 = match shape.as_slice() {
        [1, h, w, c] if (1..=4).contains(c) => [*h, *w, *c],
        other => {
            return Err(DnnError::Input(format!(
                "camera input needs a [1, H, W, C≤4] first input, the model has {other:?}"
            )));
        }
    };
    let compile_err = |e: &dyn std::fmt::Display| DnnError::Compile(e.to_string());
    let mut cpu =
        CpuModel::compile(graph, CpuOptions { threads: 1 }).map_err(|e| compile_err(&e))?;
    let n = cpu.num_ops();
    let output_shapes = Arc::new(cpu.output_shapes().to_vec());
    let zeros: Vec<Vec<f32>> = cpu
        .input_shapes()
        .iter()
        .map(|s| vec![0.0; s.iter().product()])
        .collect();
    for (i, z) in zeros.iter().enumerate() {
        cpu.set_input(i, z).map_err(|e| compile_err(&e))?;
    }
    cpu.run().map_err(|e| compile_err(&e))?;
    let mut cpu_times = vec![Duration::ZERO; n];
    cpu.run_range_timed(0..n, Some(&mut cpu_times))
        .map_err(|e| compile_err(&e))?;
    Ok(CpuPart {
        cpu: Arc::new(Mutex::new(cpu)),
        steps: n,
        input: input3,
        output_shapes,
        cpu_ms: Arc::new(cpu_times.iter().map(|d| d.as_secs_f64() * 1e3).collect()),
    })
}

/// Compiles `graph` for the CPU (always) and the GPU (when `ctx`), measuring step costs; on the
/// GPU with the convolution cache `conv_cache` asks for, the second member telling whether the
/// crop is a region of interest (see [`compile_gpu`]), for runs at least `min_interval_ms`
/// apart. In reduced precision with `guard`, the GPU model is the one of a stored decision, or
/// f32 until the guard decides ([`GuardStart`]).
fn compile(
    graph: Arc<heimdall_ir::Graph>,
    ctx: Option<GpuContext>,
    precision: Precision,
    norm: Normalization,
    (conv_cache, roi): (ConvCache, bool),
    min_interval_ms: f64,
    guard: Option<GuardPlan>,
) -> Result<(Compiled, GuardStart), DnnError> {
    let cpu = compile_cpu(&graph)?;
    let Some(ctx) = ctx else {
        return Ok((Compiled::assemble(cpu, None), GuardStart::Off));
    };
    let start = match guard.filter(|_| precision != Precision::F32) {
        Some(plan) => super::guard::start(&ctx, &graph, precision, &plan),
        None => GuardStart::Off,
    };
    let (precision, overrides, cache) = match &start {
        GuardStart::Off => (precision, Vec::new(), conv_cache),
        GuardStart::Reused(d) => (precision, d.overrides.clone(), conv_cache),
        // The f32 model only runs until the guarded one replaces it: no cache to calibrate.
        GuardStart::Pending { .. } => (Precision::F32, Vec::new(), ConvCache::Off),
    };
    let zeros = cpu.zeros();
    let refs: Vec<&[f32]> = zeros.iter().map(Vec::as_slice).collect();
    let gpu = compile_gpu(&GpuJob {
        ctx: &ctx,
        graph: &graph,
        precision,
        overrides,
        norm,
        channels: cpu.input[2],
        cache,
        roi,
        min_interval_ms,
        inputs: &refs,
    })?;
    Ok((Compiled::assemble(cpu, Some(gpu)), start))
}

/// Starts compiling new DNN entities, picks up finished compilations, drops removed ones.
pub(crate) fn prepare_models(
    mut dnns: ResMut<RenderDnns>,
    ex: Res<ExtractedDnns>,
    backend: Res<InferenceBackend>,
    settings: Res<HeimdallSettings>,
    outbox: Res<Outbox>,
) {
    let dnns = &mut *dnns;
    dnns.map.retain(|e, d| {
        ex.0.get(e).is_some_and(|x| {
            x.model == d.model && x.source == d.source && (x.conv_cache, x.roi) == d.conv_cache
        })
    });
    for (e, d) in &ex.0 {
        if let Some(existing) = dnns.map.get_mut(e) {
            // Settings that may change while it runs.
            existing.decoder = d.decoder.clone();
            existing.deadline_ms = d.deadline_ms;
            existing.utility = d.utility;
            continue;
        }
        let Some(graph) = d.graph.clone() else {
            continue; // the asset is still loading (or failed: the main world reports it)
        };
        let ctx = backend.gpu().cloned();
        let (precision, norm, cache) = (settings.precision, d.normalization, d.conv_cache);
        let roi = d.roi;
        let min_interval_ms = min_interval_ms(&settings, d.request_period_ms);
        let guard = settings.guard.clone().map(|config| GuardPlan {
            config,
            store: settings.guard_store.clone(),
        });
        let task = AsyncComputeTaskPool::get().spawn(async move {
            compile(
                graph,
                ctx,
                precision,
                norm,
                (cache, roi),
                min_interval_ms,
                guard,
            )
        });
        let index = dnns.next_index;
        dnns.next_index += 1;
        outbox.send(RenderMessage::Status(*e, DnnStatus::Compiling));
        outbox.send(RenderMessage::Instance(index, d.name.clone()));
        dnns.map.insert(
            *e,
            RenderDnn {
                index,
                name: d.name.clone(),
                model: d.model,
                source: d.source,
                decoder: d.decoder.clone(),
                normalization: d.normalization,
                conv_cache: (d.conv_cache, d.roi),
                deadline_ms: d.deadline_ms,
                utility: d.utility,
                state: ModelState::Compiling(task),
                model_id: None,
                job: None,
                pending: None,
                last_crop: None,
                guard: GuardPhase::Idle,
                calibrate_on_frame: d.calibrate_on_frame,
            },
        );
    }
    for (e, d) in &mut dnns.map {
        let ModelState::Compiling(task) = &mut d.state else {
            continue;
        };
        let Some(result) = check_ready(task) else {
            continue;
        };
        match result {
            Ok((compiled, start)) => {
                let on = if compiled.gpu.is_some() {
                    Backend::Gpu
                } else {
                    Backend::Cpu
                };
                if let Some(g) = &compiled.gpu {
                    info!(
                        "heimdall: {} compiled for {} in {:.0} ms ({} steps)",
                        d.name,
                        g.context().info.name,
                        g.report().compile_time.as_secs_f64() * 1e3,
                        compiled.steps
                    );
                    if let Some(decision) = &compiled.cache_decision {
                        let ops = g.report().cached_ops.len();
                        info!("heimdall: {}: convolution cache {decision}", d.name);
                        outbox.send(RenderMessage::ConvCacheDecision {
                            dnn: *e,
                            decision: decision.clone(),
                            cached_ops: ops,
                        });
                    }
                }
                d.state = ModelState::Ready(Box::new(compiled));
                dnns.newly_ready.push(*e);
                outbox.send(RenderMessage::Status(*e, DnnStatus::Ready(on)));
                let status = match start {
                    GuardStart::Off => GuardStatus::Off,
                    GuardStart::Pending { key } => {
                        info!(
                            "heimdall: {}: f16 guard: runs in f32 until checked on its {}",
                            d.name,
                            if d.calibrate_on_frame {
                                "first input"
                            } else {
                                "calibration image"
                            }
                        );
                        d.guard = GuardPhase::AwaitingInput { key };
                        GuardStatus::Pending
                    }
                    GuardStart::Reused(decision) => {
                        info!("{} (stored: no check)", decision.log_line(&d.name));
                        GuardStatus::Decided(GuardOutcome {
                            decision: Arc::new(*decision),
                            reused: true,
                        })
                    }
                };
                outbox.send(RenderMessage::Guard(*e, status));
            }
            Err(error) => {
                error!("heimdall: {} cannot run: {error}", d.name);
                d.state = ModelState::Failed;
                outbox.send(RenderMessage::Status(*e, DnnStatus::Failed(error)));
            }
        }
    }
    super::guard::advance(dnns, &ex, backend.gpu(), &settings, &outbox);
}

/// The least time between two runs' starts of a DNN, ms: a frame, or its request period.
pub(crate) fn min_interval_ms(settings: &HeimdallSettings, request_period_ms: Option<f64>) -> f64 {
    let frame_ms = 1e3 / settings.frame_rate_hz(None).max(1.0);
    request_period_ms.unwrap_or(0.0).max(frame_ms)
}
