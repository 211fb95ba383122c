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
use heimdall_gpu::{GpuContext, GpuModel, GpuOptions, Placement, Precision};
use heimdall_vision::image::{Crop, Normalization};

use super::backend::InferenceBackend;
use super::finish::Finish;
use crate::asset::DnnModel;
use crate::decoder::DecoderHandle;
use crate::dnn::{Backend, ConvCache, Dnn, DnnError, DnnStatus};
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
    pub conv_cache: ConvCache,
    pub decoder: Option<DecoderHandle>,
    pub deadline_ms: Option<f64>,
    pub utility: UtilityParams,
}

/// Every [`Dnn`] of the main world (render world).
#[derive(Resource, Default)]
pub(crate) struct ExtractedDnns(pub HashMap<Entity, ExtractedDnn>);

pub(crate) fn extract_dnns(
    mut ex: ResMut<ExtractedDnns>,
    dnns: Extract<Query<(Entity, &Dnn)>>,
    models: Extract<Res<Assets<DnnModel>>>,
) {
    ex.0.clear();
    for (e, d) in &dnns {
        let model = models.get(&d.model);
        ex.0.insert(
            e,
            ExtractedDnn {
                name: model.map(|m| m.name.clone()).unwrap_or_default(),
                model: d.model.id(),
                graph: model.map(|m| m.graph.clone()),
                source: d.source,
                normalization: d.normalization,
                conv_cache: d.conv_cache,
                decoder: d.decoder.clone(),
                deadline_ms: d.deadline.map(|d| d.as_secs_f64() * 1e3),
                utility: d.utility,
            },
        );
    }
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
}

pub(crate) enum ModelState {
    Compiling(Task<Result<Compiled, DnnError>>),
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
    /// The convolution cache it was compiled with (a change recompiles).
    pub conv_cache: ConvCache,
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

/// Runs with the convolution cache switched off between two probes of its automatic switch.
const CACHE_PROBE_EVERY: u32 = 30;

/// Compiles `graph` for the CPU (always) and the GPU (when `ctx`), measuring step costs.
fn compile(
    graph: Arc<heimdall_ir::Graph>,
    ctx: Option<GpuContext>,
    precision: Precision,
    norm: Normalization,
    conv_cache: ConvCache,
) -> Result<Compiled, DnnError> {
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
        CpuModel::compile(&graph, CpuOptions { threads: 1 }).map_err(|e| compile_err(&e))?;
    let n = cpu.num_ops();
    let output_shapes = Arc::new(cpu.output_shapes().to_vec());
    // CPU step costs: one warm-up run, then one timed run.
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
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (gpu, pre, placement, costs) = match ctx {
        Some(ctx) => {
            let mut options = GpuOptions::new(precision);
            if let ConvCache::On(c) = conv_cache {
                // The histograms span the normalised pixel values.
                options = options.with_conv_cache(crate::dnn::cache_config(&c, &norm, input3[2]));
            }
            let model = GpuModel::compile(&ctx, &graph, options).map_err(|e| compile_err(&e))?;
            let pre = Preprocessor::new(&model, 0, norm).map_err(|e| compile_err(&e))?;
            let refs: Vec<&[f32]> = zeros.iter().map(Vec::as_slice).collect();
            // Warms every pipeline and measures the steps (median of 5 after 2 warm-ups).
            let profile = model.profile(&refs, 2, 5).map_err(|e| compile_err(&e))?;
            // The profile's zero inputs must not seed the cache.
            model.invalidate_conv_cache();
            // The automatic switch: off while the scene moves too much for the cache to pay
            // (its break-even hit rate measured here: plain, full and all-hit runs).
            if conv_cache.is_on()
                && let Some(c) = model
                    .calibrate_conv_cache(&refs, 3, 9)
                    .map_err(|e| compile_err(&e))?
            {
                model.set_conv_cache_auto(Some(c.policy(CACHE_PROBE_EVERY)));
            }
            let placement = model.placement().to_vec();
            let costs = (0..n)
                .map(|i| match placement.get(i) {
                    Some(Placement::Gpu) => {
                        StepCost::gpu_and_cpu(ms(profile.steps[i]), ms(cpu_times[i]))
                    }
                    _ => StepCost::cpu_only(ms(cpu_times[i])),
                })
                .collect();
            (Some(Arc::new(model)), Some(pre), placement, costs)
        }
        None => (
            None,
            None,
            vec![Placement::Cpu; n],
            cpu_times
                .iter()
                .map(|t| StepCost::cpu_only(ms(*t)))
                .collect(),
        ),
    };
    Ok(Compiled {
        gpu,
        pre,
        bindings: HashMap::new(),
        cpu: Arc::new(Mutex::new(cpu)),
        steps: n,
        input: input3,
        output_shapes,
        placement,
        costs,
    })
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
            x.model == d.model && x.source == d.source && x.conv_cache == d.conv_cache
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
        let task = AsyncComputeTaskPool::get()
            .spawn(async move { compile(graph, ctx, precision, norm, cache) });
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
                conv_cache: d.conv_cache,
                deadline_ms: d.deadline_ms,
                utility: d.utility,
                state: ModelState::Compiling(task),
                model_id: None,
                job: None,
                pending: None,
                last_crop: None,
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
            Ok(compiled) => {
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
                    if d.conv_cache.is_on() {
                        info!(
                            "heimdall: {}: convolution cache on {} ops",
                            d.name,
                            g.report().cached_ops.len()
                        );
                    }
                }
                d.state = ModelState::Ready(Box::new(compiled));
                dnns.newly_ready.push(*e);
                outbox.send(RenderMessage::Status(*e, DnnStatus::Ready(on)));
            }
            Err(error) => {
                error!("heimdall: {} cannot run: {error}", d.name);
                d.state = ModelState::Failed;
                outbox.send(RenderMessage::Status(*e, DnnStatus::Failed(error)));
            }
        }
    }
}
