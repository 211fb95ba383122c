//! The compiled GPU model: buffers planned once, weights uploaded once, every pipeline and bind
//! group created at compile time; [`GpuModel::encode`] records any contiguous range of steps into
//! a caller's command encoder.

use std::collections::HashMap;
use std::ops::Range;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use heimdall_ir::{Graph, OpKind, ReduceKind};
use wgpu::util::DeviceExt;

use crate::context::{GpuContext, Tuning};
use crate::cpu_step::CpuStep;
use crate::error::GpuError;
use crate::kernels::{self, ConstBuffer, Dispatch, OpContext, Operand};
use crate::layout::Phwc4;
use crate::memory::{self, Alias, MemoryPlan};
use crate::plan::{Placement, placement};
use crate::precision::Precision;
use crate::readback::{IoTensor, Readback};

/// How to compile a model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuOptions {
    /// Storage precision of activations and weights. `F16` falls back to `PackedF16` on devices
    /// without `SHADER_F16`. Average pools and means always store f32, and so do graph outputs
    /// and the inputs of the ops producing them.
    pub precision: Precision,
    /// Per-op overrides: ops whose index lies in a range store their outputs and weights in the
    /// given precision (e.g. keep a sensitive decoder in f32). Later entries win.
    pub overrides: Vec<(Range<usize>, Precision)>,
    /// A file persisting wgpu's pipeline cache between runs. When the device has
    /// `Features::PIPELINE_CACHE` (Vulkan), pipelines are created through a
    /// `wgpu::PipelineCache` seeded from this file (if it exists and matches the adapter,
    /// driver and wgpu version; otherwise the cache starts empty) and the cache's data is
    /// written back after compiling, so the driver's shader compilation is skipped next time.
    /// Without the feature the option is ignored. `None`: no pipeline cache.
    pub pipeline_cache: Option<PathBuf>,
    /// How kernels are blocked: `None` for the device's own choice ([`GpuContext::tuning`]);
    /// a modified copy of it for experiments and for tests that force a kernel variant.
    pub tuning: Option<Tuning>,
}

impl GpuOptions {
    /// Options with one precision for the whole model.
    pub fn new(precision: Precision) -> Self {
        GpuOptions {
            precision,
            overrides: Vec::new(),
            pipeline_cache: None,
            tuning: None,
        }
    }

    /// These options with the pipeline cache persisted in `path` (see
    /// [`GpuOptions::pipeline_cache`]).
    pub fn with_pipeline_cache(mut self, path: impl Into<PathBuf>) -> Self {
        self.pipeline_cache = Some(path.into());
        self
    }

    /// These options with kernels blocked by `tuning` instead of the device's own choice.
    pub fn with_tuning(mut self, tuning: Tuning) -> Self {
        self.tuning = Some(tuning);
        self
    }
}

/// What the pipeline cache did during a compile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PipelineCacheState {
    /// No cache: none was asked for, or the device lacks `Features::PIPELINE_CACHE`.
    Unused,
    /// The cache started empty (no file yet, or its data did not match the device): a cold
    /// compile.
    Cold,
    /// The cache was seeded with this many bytes from its file: a warm compile.
    Warm(usize),
    /// Reading or writing the cache file failed (the compile itself succeeded).
    Failed(String),
}

impl Default for GpuOptions {
    fn default() -> Self {
        GpuOptions::new(Precision::F32)
    }
}

/// What compilation produced and cost.
#[derive(Clone, Debug, PartialEq)]
pub struct CompileReport {
    /// Wall time of [`GpuModel::compile`] (weights, buffers, pipelines, bind groups).
    pub compile_time: Duration,
    /// The precision used (after any fallback).
    pub precision: Precision,
    /// Distinct pipelines (deduplicated by composed source).
    pub pipelines: usize,
    /// Compute dispatches of a whole run.
    pub dispatches: usize,
    /// Concatenations with no dispatch: their inputs' producers write straight into their part
    /// of the output (its channel slices, or rows of a one-slice tensor).
    pub free_concats: usize,
    /// Bytes of the activation slots (peak activation memory).
    pub peak_bytes: u64,
    /// Sum of the bytes of every activation tensor (what no reuse would need).
    pub total_bytes: u64,
    /// Bytes of weights and other constants on the GPU.
    pub weight_bytes: u64,
    /// What the pipeline cache did (see [`GpuOptions::pipeline_cache`]).
    pub pipeline_cache: PipelineCacheState,
}

struct EncodedDispatch {
    pipeline: usize,
    bind_group: wgpu::BindGroup,
    groups: [u32; 2],
}

/// A graph compiled for a [`GpuContext`].
pub struct GpuModel {
    pub(crate) ctx: GpuContext,
    steps: Vec<Vec<EncodedDispatch>>,
    names: Vec<&'static str>,
    pub(crate) placement: Vec<Placement>,
    pipelines: Vec<wgpu::ComputePipeline>,
    slots: Vec<wgpu::Buffer>,
    _consts: Vec<wgpu::Buffer>,
    _uniforms: wgpu::Buffer,
    inputs: Vec<IoTensor>,
    outputs: Vec<IoTensor>,
    readback: Readback,
    cpu_steps: Vec<Option<CpuStep>>,
    report: CompileReport,
    cache: Option<wgpu::PipelineCache>,
}

impl std::fmt::Debug for GpuModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuModel")
            .field("steps", &self.steps.len())
            .field("report", &self.report)
            .finish()
    }
}

/// Storage precision of every op (its outputs and weights): the model's, or an override.
fn op_precisions(graph: &Graph, options: &GpuOptions, f16: bool) -> Vec<Precision> {
    let resolve = |p: Precision| match p {
        Precision::F16 if !f16 => Precision::PackedF16,
        p => p,
    };
    (0..graph.ops.len())
        .map(|k| {
            let p = options
                .overrides
                .iter()
                .rev()
                .find(|(r, _)| r.contains(&k))
                .map_or(options.precision, |(_, p)| *p);
            resolve(p)
        })
        .collect()
}

/// Storage precision of every tensor: its producer's (graph inputs: f32 if an f32 op reads
/// them, else the model's), except f32 for
/// - the outputs of average pools and means (overflow-prone sums in f16),
/// - the 4×4 matrices of the MediaPipe custom ops (outputs of `Landmarks2TransformMatrix`, matrix
///   inputs of `TransformTensorBilinear` and `TransformLandmarks`): their translation column is
///   in source pixels (about 100 in face_landmark_with_attention), where an f16 rounding moves
///   every sample and landmark by up to 1/32 pixel; 64 bytes each,
/// - graph outputs, and the tensors read by the ops that produce them: output heads turn small
///   activations into large logits (pose_landmark_full's segmentation reaches -1710), so an f16
///   rounding of their inputs is amplified straight into the result.
fn tensor_precisions(graph: &Graph, model: Precision, ops: &[Precision]) -> Vec<Precision> {
    let mut out = vec![model; graph.tensors.len()];
    // Graph inputs: f32 if any op reading them is f32, else the model's precision.
    for (op, &p) in graph.ops.iter().zip(ops) {
        for t in op.reads() {
            if p == Precision::F32 && graph.inputs.contains(&t) {
                out[t.index()] = Precision::F32;
            }
        }
    }
    for (op, &p) in graph.ops.iter().zip(ops) {
        for o in &op.outputs {
            out[o.index()] = p;
        }
    }
    for op in &graph.ops {
        if matches!(
            op.kind,
            OpKind::AvgPool2d(_)
                | OpKind::Reduce {
                    kind: ReduceKind::Mean,
                    ..
                }
        ) {
            for o in &op.outputs {
                out[o.index()] = Precision::F32;
            }
        }
    }
    for op in &graph.ops {
        let matrices = match op.kind {
            OpKind::Landmarks2TransformMatrix(_) => op.outputs.as_slice(),
            OpKind::TransformTensorBilinear(_) | OpKind::TransformLandmarks(_) => {
                op.inputs.get(1..2).unwrap_or_default()
            }
            _ => &[],
        };
        for m in matrices {
            if graph.tensor(*m).constant.is_none() {
                out[m.index()] = Precision::F32;
            }
        }
    }
    for op in &graph.ops {
        if op.outputs.iter().any(|o| graph.outputs.contains(o)) {
            for t in op.reads() {
                if graph.tensor(t).constant.is_none() {
                    out[t.index()] = Precision::F32;
                }
            }
        }
    }
    for o in &graph.outputs {
        out[o.index()] = Precision::F32;
    }
    out
}

/// Tensors stored inside another tensor's slot, and the ops that need no dispatch for it.
#[derive(Debug, PartialEq, Eq)]
struct SlotAliases {
    /// Where each tensor lives when it is inside another tensor's slot.
    alias: Vec<Option<Alias>>,
    /// Ops with no dispatch: aliased reshapes and free concatenations.
    free: Vec<bool>,
}

/// Copies that need no dispatch.
/// - Reshapes: a GPU RESHAPE whose input is an activation of the same storage precision,
///   channel count and pixel count as its output has the same PHWC4 bytes (pixels stay in
///   row-major order within each slice), so its output aliases the input's slot at offset 0 (the
///   root being the first tensor of a chain of such reshapes).
/// - Concatenations on the channel axis (the last): channel slices `[s0, s0 + k)` of a PHWC4
///   tensor are the contiguous bytes from vec4 `s0 * H * W`, so each input can be written by its
///   producer straight into its slices of the output's slot (as TFLite's GPU delegate does); the
///   same holds for rows (or pixels of one row) of a one-slice tensor. See
///   [`free_concat_offsets`] for when.
///
/// `align` is the device's `min_storage_buffer_offset_alignment` (binding offsets must be
/// multiples of it).
fn slot_aliases(
    graph: &Graph,
    placement: &[Placement],
    precisions: &[Precision],
    align: u64,
) -> SlotAliases {
    let mut alias: Vec<Option<Alias>> = vec![None; graph.tensors.len()];
    let mut free = vec![false; graph.ops.len()];
    for (k, (op, p)) in graph.ops.iter().zip(placement).enumerate() {
        let (OpKind::Reshape, Placement::Gpu, [x, ..], [y]) =
            (&op.kind, p, op.inputs.as_slice(), op.outputs.as_slice())
        else {
            continue;
        };
        if graph.tensor(*x).constant.is_some()
            || graph.inputs.contains(y)
            || precisions[x.index()] != precisions[y.index()]
            || !op.epilogue.is_identity()
        {
            continue;
        }
        let (Ok(gx), Ok(gy)) = (
            Phwc4::of(&graph.tensor(*x).shape),
            Phwc4::of(&graph.tensor(*y).shape),
        ) else {
            continue;
        };
        if gx.c == gy.c && gx.h * gx.w == gy.h * gy.w {
            let root = alias[x.index()].map_or(x.index(), |a| a.root);
            alias[y.index()] = Some(Alias { root, offset: 0 });
            free[k] = true;
        }
    }
    let mut readers = vec![0usize; graph.tensors.len()];
    let mut producer: Vec<Option<usize>> = vec![None; graph.tensors.len()];
    for (k, op) in graph.ops.iter().enumerate() {
        for t in op.reads() {
            readers[t.index()] += 1;
        }
        for o in &op.outputs {
            producer[o.index()] = Some(k);
        }
    }
    let mut is_root = vec![false; graph.tensors.len()];
    for a in alias.iter().flatten() {
        is_root[a.root] = true;
    }
    for (k, op) in graph.ops.iter().enumerate() {
        let ctx = ConcatContext {
            graph,
            placement,
            precisions,
            align,
            readers: &readers,
            producer: &producer,
            alias: &alias,
            is_root: &is_root,
        };
        if let Some(offsets) = free_concat_offsets(&ctx, k) {
            let y = op.outputs[0].index();
            for (x, offset) in op.inputs.iter().zip(offsets) {
                alias[x.index()] = Some(Alias { root: y, offset });
            }
            is_root[y] = true;
            free[k] = true;
        }
    }
    SlotAliases { alias, free }
}

/// What [`free_concat_offsets`] looks at.
struct ConcatContext<'a> {
    graph: &'a Graph,
    placement: &'a [Placement],
    precisions: &'a [Precision],
    align: u64,
    /// How many times each tensor is read by any op (epilogues included).
    readers: &'a [usize],
    /// The op defining each tensor.
    producer: &'a [Option<usize>],
    alias: &'a [Option<Alias>],
    /// Whether some tensor aliases each tensor.
    is_root: &'a [bool],
}

/// The byte offset of each input of op `k` in its output's slot, if op `k` is a GPU
/// concatenation that can be free: with no epilogue, its output not a graph input, its inputs
/// contiguous byte ranges of the output (the channel axis; or, when the output has one slice
/// (C ≤ 4), the height axis, or the width axis of a one-row tensor: the detectors' anchor
/// concatenations), and every input
/// - an activation written by a GPU op with one output (not a graph input, a constant or the
///   output of a CPU step), and not a graph output,
/// - read by nothing but this concatenation, and only once,
/// - of the output's storage precision, neither an alias nor aliased,
/// - on the channel axis, a whole number of slices (`C % 4 == 0`) unless it is the last (its
///   padding lanes are the output's),
/// - at an offset that is a multiple of `align`.
fn free_concat_offsets(ctx: &ConcatContext, k: usize) -> Option<Vec<u64>> {
    let graph = ctx.graph;
    let op = &graph.ops[k];
    let (OpKind::Concatenation { axis }, Placement::Gpu, [y]) =
        (&op.kind, ctx.placement[k], op.outputs.as_slice())
    else {
        return None;
    };
    let y_info = graph.tensor(*y);
    if *axis >= y_info.shape.len()
        || !op.epilogue.is_identity()
        || graph.inputs.contains(y)
        || y_info.constant.is_some()
        || ctx.alias[y.index()].is_some()
    {
        return None;
    }
    let gy = Phwc4::of(&y_info.shape).ok()?;
    // The axis in NHWC (shapes are right-aligned). Each input is then a block of whole vec4s
    // starting where the previous one ends: slices on C; rows of the one slice on H; pixels of
    // the one row and slice on W.
    let channels = axis + 1 == y_info.shape.len();
    let contiguous = match axis + 4 - y_info.shape.len() {
        3 => true,
        1 => gy.slices() == 1,
        2 => gy.slices() == 1 && gy.h == 1,
        _ => false,
    };
    if !contiguous {
        return None;
    }
    let precision = ctx.precisions[y.index()];
    let vec4_bytes = 4 * precision.bytes_per_value() as u64;
    let mut start = 0usize;
    let mut offsets = Vec::with_capacity(op.inputs.len());
    for (j, x) in op.inputs.iter().enumerate() {
        let i = x.index();
        let info = graph.tensor(*x);
        let produced_by_gpu = ctx.producer[i]
            .is_some_and(|p| ctx.placement[p] == Placement::Gpu && graph.ops[p].outputs.len() == 1);
        let gx = Phwc4::of(&info.shape).ok()?;
        let offset = start as u64 * vec4_bytes;
        let ok = produced_by_gpu
            && info.constant.is_none()
            && !graph.inputs.contains(x)
            && !graph.outputs.contains(x)
            && op.inputs.iter().filter(|&t| t == x).count() == 1
            && ctx.readers[i] == 1
            && ctx.precisions[i] == precision
            && ctx.alias[i].is_none()
            && !ctx.is_root[i]
            && info.numel() > 0
            && (!channels || j + 1 == op.inputs.len() || gx.c.is_multiple_of(4))
            && offset.is_multiple_of(ctx.align.max(1));
        if !ok {
            return None;
        }
        offsets.push(offset);
        start += gx.vec4s();
    }
    (start == gy.vec4s()).then_some(offsets)
}

/// Splits `groups` work groups into a 2-D grid with no dimension above `max`.
fn fold_groups(groups: u32, max: u32) -> [u32; 2] {
    if groups <= max {
        [groups, 1]
    } else {
        [max, groups.div_ceil(max)]
    }
}

impl GpuModel {
    /// Compiles a validated graph for `ctx`: plans the activation slots, pre-transforms and
    /// uploads every weight, composes and creates every pipeline (deduplicated) and bind group.
    pub fn compile(
        ctx: &GpuContext,
        graph: &Graph,
        options: GpuOptions,
    ) -> Result<GpuModel, GpuError> {
        let start = Instant::now();
        graph.validate()?;
        let tuning = match options.tuning {
            Some(t) => {
                t.validate(&ctx.limits).map_err(GpuError::Options)?;
                t
            }
            None => ctx.tuning(),
        };
        let precision = match options.precision {
            Precision::F16 if !ctx.has_f16() => Precision::PackedF16,
            p => p,
        };
        let placement = placement(graph);
        let op_precisions = op_precisions(graph, &options, ctx.has_f16());
        let precisions = tensor_precisions(graph, precision, &op_precisions);
        let mut bytes = vec![0u64; graph.tensors.len()];
        for (i, t) in graph.tensors.iter().enumerate() {
            if t.constant.is_none() {
                let g = Phwc4::of(&t.shape)?;
                bytes[i] = (g.stored_values() * precisions[i].bytes_per_value()) as u64;
            }
        }
        let aliases = slot_aliases(
            graph,
            &placement,
            &precisions,
            u64::from(ctx.limits.min_storage_buffer_offset_alignment),
        );
        let mem = memory::plan_with_aliases(graph, &bytes, &aliases.alias);
        let mut consts: Vec<ConstBuffer> = Vec::new();
        let mut dispatches: Vec<Vec<Dispatch>> = Vec::with_capacity(graph.ops.len());
        for (index, op) in graph.ops.iter().enumerate() {
            if placement[index] == Placement::Cpu || aliases.free[index] {
                // A CPU step, a reshape whose output shares its input's slot, or a concatenation
                // whose inputs were written into its output's slot: no dispatch.
                dispatches.push(Vec::new());
                continue;
            }
            let mut octx = OpContext {
                graph,
                op,
                precisions: &precisions,
                // An op producing a graph output reads f32 (see `tensor_precisions`), so its
                // weights and constant inputs are f32 too.
                weights: if op.outputs.iter().any(|o| graph.outputs.contains(o)) {
                    Precision::F32
                } else {
                    op_precisions[index]
                },
                tuning,
                consts: &mut consts,
            };
            let d = kernels::build(&mut octx).map_err(|message| GpuError::Op {
                index,
                name: op.kind.name().into(),
                message,
            })?;
            for k in &d {
                let n = k.source.storage_bindings() as u32;
                if n > ctx.limits.max_storage_buffers_per_shader_stage {
                    return Err(GpuError::Op {
                        index,
                        name: op.kind.name().into(),
                        message: format!(
                            "needs {n} storage buffers, the device allows {}",
                            ctx.limits.max_storage_buffers_per_shader_stage
                        ),
                    });
                }
            }
            dispatches.push(d);
        }
        let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let (cache, mut cache_state) = open_pipeline_cache(ctx, options.pipeline_cache.as_deref());
        let built = Self::create_resources(ctx, graph, &mem, cache.as_ref(), &consts, &dispatches);
        let error = pollster::block_on(scope.pop());
        if let Some(e) = error {
            return Err(GpuError::Wgpu(e.to_string()));
        }
        let (slots, const_buffers, uniforms, pipelines, steps) = built?;
        let io = |t: heimdall_ir::TensorId| -> Result<IoTensor, GpuError> {
            let slot = mem.slot_of[t.index()].ok_or_else(|| {
                GpuError::Unsupported(format!("tensor {} is a constant, not an activation", t.0))
            })?;
            Ok(IoTensor {
                slot,
                geom: Phwc4::of(&graph.tensor(t).shape)?,
                precision: precisions[t.index()],
                shape: graph.tensor(t).shape.clone(),
            })
        };
        let inputs = graph
            .inputs
            .iter()
            .map(|&t| io(t))
            .collect::<Result<Vec<_>, _>>()?;
        let outputs = graph
            .outputs
            .iter()
            .map(|&t| io(t))
            .collect::<Result<Vec<_>, _>>()?;
        let cpu_steps = placement
            .iter()
            .enumerate()
            .map(|(i, p)| match p {
                Placement::Cpu => CpuStep::new(&ctx.device, graph, i, io).map(Some),
                Placement::Gpu => Ok(None),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let readback = Readback::new(&ctx.device, &outputs);
        if let (Some(cache), Some(path)) = (&cache, &options.pipeline_cache)
            && let Some(data) = cache.get_data()
            && let Err(e) = write_atomically(path, &data)
        {
            cache_state = PipelineCacheState::Failed(format!("{}: {e}", path.display()));
        }
        let report = CompileReport {
            compile_time: start.elapsed(),
            precision,
            pipelines: pipelines.len(),
            dispatches: steps.iter().map(Vec::len).sum(),
            free_concats: graph
                .ops
                .iter()
                .zip(&aliases.free)
                .filter(|(op, free)| **free && matches!(op.kind, OpKind::Concatenation { .. }))
                .count(),
            peak_bytes: mem.peak_bytes(),
            total_bytes: mem.total_bytes,
            weight_bytes: consts.iter().map(|c| c.bytes.len() as u64).sum(),
            pipeline_cache: cache_state,
        };
        Ok(GpuModel {
            ctx: ctx.clone(),
            steps,
            names: graph.ops.iter().map(|o| o.kind.name()).collect(),
            placement,
            pipelines,
            slots,
            _consts: const_buffers,
            _uniforms: uniforms,
            inputs,
            outputs,
            readback,
            cpu_steps,
            report,
            cache,
        })
    }

    #[allow(clippy::type_complexity)]
    fn create_resources(
        ctx: &GpuContext,
        graph: &Graph,
        mem: &MemoryPlan,
        pipeline_cache: Option<&wgpu::PipelineCache>,
        consts: &[ConstBuffer],
        dispatches: &[Vec<Dispatch>],
    ) -> Result<
        (
            Vec<wgpu::Buffer>,
            Vec<wgpu::Buffer>,
            wgpu::Buffer,
            Vec<wgpu::ComputePipeline>,
            Vec<Vec<EncodedDispatch>>,
        ),
        GpuError,
    > {
        let device = &ctx.device;
        let max_binding = ctx
            .limits
            .max_storage_buffer_binding_size
            .min(ctx.limits.max_buffer_size);
        let slots: Vec<wgpu::Buffer> = mem
            .slot_bytes
            .iter()
            .enumerate()
            .map(|(i, &size)| {
                if size > max_binding {
                    return Err(GpuError::Unsupported(format!(
                        "activation slot {i} needs {size} bytes, the device binds at most {max_binding}"
                    )));
                }
                Ok(device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(&format!("heimdall slot {i}")),
                    size,
                    usage: wgpu::BufferUsages::STORAGE
                        | wgpu::BufferUsages::COPY_DST
                        | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                }))
            })
            .collect::<Result<_, _>>()?;
        let const_buffers: Vec<wgpu::Buffer> = consts
            .iter()
            .map(|c| {
                if c.bytes.len() as u64 > max_binding {
                    return Err(GpuError::Unsupported(format!(
                        "{} of {} bytes exceeds the binding limit",
                        c.label,
                        c.bytes.len()
                    )));
                }
                Ok(
                    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some(&c.label),
                        contents: &c.bytes,
                        usage: wgpu::BufferUsages::STORAGE,
                    }),
                )
            })
            .collect::<Result<_, _>>()?;
        // All uniform parameters in one buffer, each at an aligned offset.
        let align = u64::from(ctx.limits.min_uniform_buffer_offset_alignment).max(16);
        let mut uniform_bytes = Vec::new();
        let mut offsets = Vec::new();
        for d in dispatches.iter().flatten() {
            let at = (uniform_bytes.len() as u64).next_multiple_of(align);
            uniform_bytes.resize(at as usize, 0);
            offsets.push(at);
            uniform_bytes.extend_from_slice(&d.params);
        }
        uniform_bytes.resize(uniform_bytes.len().max(16).next_multiple_of(16), 0);
        let uniforms = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("heimdall params"),
            contents: &uniform_bytes,
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let mut cache: HashMap<String, usize> = HashMap::new();
        let mut pipelines: Vec<wgpu::ComputePipeline> = Vec::new();
        let mut steps = Vec::with_capacity(dispatches.len());
        let mut k = 0;
        let max_groups = ctx.limits.max_compute_workgroups_per_dimension;
        for (index, ds) in dispatches.iter().enumerate() {
            let mut encoded = Vec::with_capacity(ds.len());
            for d in ds {
                let source = d.source.compose()?;
                let pipeline = match cache.get(&source) {
                    Some(&p) => p,
                    None => {
                        crate::wgsl::validate(d.source.name, &source, d.source.uses_f16())?;
                        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                            label: Some(d.source.name),
                            source: wgpu::ShaderSource::Wgsl(source.as_str().into()),
                        });
                        pipelines.push(device.create_compute_pipeline(
                            &wgpu::ComputePipelineDescriptor {
                                label: Some(d.source.name),
                                layout: None,
                                module: &module,
                                entry_point: Some("main"),
                                compilation_options: Default::default(),
                                cache: pipeline_cache,
                            },
                        ));
                        cache.insert(source, pipelines.len() - 1);
                        pipelines.len() - 1
                    }
                };
                let layout = pipelines[pipeline].get_bind_group_layout(0);
                let mut entries = vec![wgpu::BindGroupEntry {
                    binding: 0,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: &uniforms,
                        offset: offsets[k],
                        size: wgpu::BufferSize::new(d.params.len() as u64),
                    }),
                }];
                for (b, operand) in d.operands.iter().enumerate() {
                    let resource = match *operand {
                        Operand::Tensor(t) => {
                            let slot = mem.slot_of[t.index()].ok_or_else(|| GpuError::Op {
                                index,
                                name: graph.ops[index].kind.name().into(),
                                message: format!("tensor {} has no slot", t.0),
                            })?;
                            // An alias is bound as its byte range of the slot (a free
                            // concatenation's input: its part of the output).
                            match mem.view_of[t.index()] {
                                Some((offset, size)) => {
                                    wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                                        buffer: &slots[slot],
                                        offset,
                                        size: wgpu::BufferSize::new(size),
                                    })
                                }
                                None => slots[slot].as_entire_binding(),
                            }
                        }
                        Operand::Const(c) => const_buffers[c].as_entire_binding(),
                    };
                    entries.push(wgpu::BindGroupEntry {
                        binding: b as u32 + 1,
                        resource,
                    });
                }
                let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some(graph.ops[index].kind.name()),
                    layout: &layout,
                    entries: &entries,
                });
                encoded.push(EncodedDispatch {
                    pipeline,
                    bind_group,
                    groups: fold_groups(d.workgroups, max_groups),
                });
                k += 1;
            }
            steps.push(encoded);
        }
        Ok((slots, const_buffers, uniforms, pipelines, steps))
    }

    /// Number of steps (one per op of the graph, in graph order).
    pub fn num_steps(&self) -> usize {
        self.steps.len()
    }

    /// Where each step runs.
    pub fn placement(&self) -> &[Placement] {
        &self.placement
    }

    /// The op name of step `i` (empty if out of range).
    pub fn step_name(&self, i: usize) -> &'static str {
        self.names.get(i).copied().unwrap_or("")
    }

    /// What compilation produced and cost.
    pub fn report(&self) -> &CompileReport {
        &self.report
    }

    /// The pipeline cache the model's pipelines were created through, if any (for pipelines
    /// created later for the same model, e.g. preprocessing).
    pub(crate) fn pipeline_cache(&self) -> Option<&wgpu::PipelineCache> {
        self.cache.as_ref()
    }

    /// The slot, geometry and precision of input `index` (what preprocessing writes).
    pub(crate) fn input_target(
        &self,
        index: usize,
    ) -> Result<crate::preprocess::InputTarget, GpuError> {
        let input = self.inputs.get(index).ok_or(GpuError::Input {
            index,
            expected: 0,
            got: 0,
        })?;
        Ok(crate::preprocess::InputTarget {
            buffer: self.slots[input.slot].clone(),
            bytes: input.bytes(),
            geom: input.geom,
            precision: input.precision,
        })
    }

    /// The context the model was compiled for.
    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    /// Shapes of the model's inputs.
    pub fn input_shapes(&self) -> Vec<Vec<usize>> {
        self.inputs.iter().map(|t| t.shape.clone()).collect()
    }

    /// Shapes of the model's outputs.
    pub fn output_shapes(&self) -> Vec<Vec<usize>> {
        self.outputs.iter().map(|t| t.shape.clone()).collect()
    }

    /// Uploads input `index` (NHWC f32) with `queue.write_buffer`, packed to PHWC4 in the input's
    /// precision; the data is visible to the next command buffer submitted on the queue.
    pub fn set_input(&self, index: usize, data: &[f32]) -> Result<(), GpuError> {
        let input = self.inputs.get(index).ok_or(GpuError::Input {
            index,
            expected: 0,
            got: data.len(),
        })?;
        let n: usize = input.shape.iter().product();
        if data.len() != n {
            return Err(GpuError::Input {
                index,
                expected: n,
                got: data.len(),
            });
        }
        let bytes = input.precision.encode(&input.geom.pack(data));
        self.ctx
            .queue
            .write_buffer(&self.slots[input.slot], 0, &bytes);
        Ok(())
    }

    /// Records steps `steps` (a contiguous range of GPU steps) into `encoder` as one compute
    /// pass, with no other side effect (a range holding a CPU step is refused: run it with
    /// [`GpuModel::run_cpu_step`] between two ranges). Running a model as any sequence of ranges gives
    /// bit-identical results to one whole run.
    pub fn encode(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        steps: Range<usize>,
    ) -> Result<(), GpuError> {
        if steps.start > steps.end || steps.end > self.steps.len() {
            return Err(GpuError::Range {
                start: steps.start,
                end: steps.end,
                message: format!("the model has {} steps", self.steps.len()),
            });
        }
        if let Some(i) = steps.clone().find(|&i| self.placement[i] != Placement::Gpu) {
            return Err(GpuError::Range {
                start: steps.start,
                end: steps.end,
                message: format!("step {i} runs on the CPU"),
            });
        }
        if steps.is_empty() {
            return Ok(());
        }
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("heimdall steps"),
            timestamp_writes: None,
        });
        for i in steps {
            self.record_step(&mut pass, i);
        }
        Ok(())
    }

    /// Records the dispatches of GPU step `i` into a compute pass.
    pub(crate) fn record_step(&self, pass: &mut wgpu::ComputePass<'_>, i: usize) {
        for d in &self.steps[i] {
            if d.groups[0] == 0 {
                continue;
            }
            pass.set_pipeline(&self.pipelines[d.pipeline]);
            pass.set_bind_group(0, &d.bind_group, &[]);
            pass.dispatch_workgroups(d.groups[0], d.groups[1], 1);
        }
    }

    /// Records copies of every output into its staging buffer. Submit the encoder, then call
    /// [`GpuModel::request_readback`].
    pub fn encode_readback(&self, encoder: &mut wgpu::CommandEncoder) -> Result<(), GpuError> {
        self.readback.encode(encoder, &self.slots, &self.outputs)
    }

    /// Starts mapping the staging buffers (after the readback copies were submitted).
    pub fn request_readback(&self) -> Result<(), GpuError> {
        self.readback.request()
    }

    /// Whether the requested outputs can be taken without waiting.
    pub fn readback_ready(&self) -> bool {
        self.readback.is_ready()
    }

    /// The outputs (NHWC f32, in the model's output order) if the readback is complete, else
    /// `None`. Never blocks.
    pub fn take_outputs(&self) -> Result<Option<Vec<Vec<f32>>>, GpuError> {
        self.readback.take(&self.outputs)
    }

    /// Runs the whole model on `inputs` and waits for the outputs (tests and the CLI only: it
    /// blocks on `device.poll`).
    pub fn run(&self, inputs: &[&[f32]]) -> Result<Vec<Vec<f32>>, GpuError> {
        let whole = 0..self.num_steps();
        self.run_ranges(inputs, std::slice::from_ref(&whole))
    }

    fn cpu_step(&self, step: usize) -> Result<&CpuStep, GpuError> {
        self.cpu_steps
            .get(step)
            .and_then(Option::as_ref)
            .ok_or_else(|| GpuError::Range {
                start: step,
                end: step + 1,
                message: "not a CPU step".into(),
            })
    }

    /// Records the download of CPU step `step`'s inputs (GPU slots to staging buffers). Submit
    /// the encoder after the GPU steps before it, then call
    /// [`GpuModel::request_cpu_step_inputs`].
    pub fn encode_cpu_step_inputs(
        &self,
        step: usize,
        encoder: &mut wgpu::CommandEncoder,
    ) -> Result<(), GpuError> {
        self.cpu_step(step)?.encode_download(encoder, &self.slots)
    }

    /// Starts mapping CPU step `step`'s downloaded inputs (after the copies were submitted).
    pub fn request_cpu_step_inputs(&self, step: usize) -> Result<(), GpuError> {
        self.cpu_step(step)?.request_download()
    }

    /// Whether CPU step `step` can run without waiting.
    pub fn cpu_step_ready(&self, step: usize) -> bool {
        self.cpu_step(step).is_ok_and(CpuStep::is_ready)
    }

    /// Runs CPU step `step` on this thread and uploads its output (visible to the next
    /// submission); `Ok(false)` if its inputs have not arrived yet. Never blocks on the GPU.
    pub fn run_cpu_step(&self, step: usize) -> Result<bool, GpuError> {
        self.cpu_step(step)?.run(&self.ctx.queue, &self.slots)
    }

    pub(crate) fn wait(&self) -> Result<(), GpuError> {
        self.ctx
            .device
            .poll(wgpu::PollType::Wait {
                submission_index: None,
                timeout: None,
            })
            .map(|_| ())
            .map_err(|e| GpuError::Wgpu(e.to_string()))
    }

    /// Polls until `ready()` holds. One `poll(Wait)` is not enough when several threads poll
    /// the same device: another thread's poll may be the one running our `map_async` callback,
    /// and ours can return before that callback has finished.
    pub(crate) fn wait_for(&self, ready: impl Fn() -> bool) -> Result<(), GpuError> {
        let start = std::time::Instant::now();
        loop {
            self.wait()?;
            if ready() {
                return Ok(());
            }
            if start.elapsed() > Duration::from_secs(60) {
                return Err(GpuError::Readback("no result after 60 s of waiting".into()));
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    pub(crate) fn submit_gpu(&self, steps: Range<usize>) -> Result<(), GpuError> {
        if steps.is_empty() {
            return Ok(());
        }
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("heimdall run"),
            });
        self.encode(&mut encoder, steps)?;
        self.ctx.queue.submit([encoder.finish()]);
        Ok(())
    }

    /// Runs CPU step `i` now: downloads its inputs, waits, computes, uploads.
    pub(crate) fn run_cpu_step_blocking(&self, i: usize) -> Result<(), GpuError> {
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("heimdall CPU step inputs"),
            });
        self.encode_cpu_step_inputs(i, &mut encoder)?;
        self.ctx.queue.submit([encoder.finish()]);
        self.request_cpu_step_inputs(i)?;
        self.wait_for(|| self.cpu_step_ready(i))?;
        if self.run_cpu_step(i)? {
            Ok(())
        } else {
            Err(GpuError::Readback(format!(
                "inputs of CPU step {i} not ready after waiting"
            )))
        }
    }

    /// Like [`GpuModel::run`], encoding and submitting each range separately; CPU steps inside
    /// a range run in place (download, wait, CPU, upload).
    pub fn run_ranges(
        &self,
        inputs: &[&[f32]],
        ranges: &[Range<usize>],
    ) -> Result<Vec<Vec<f32>>, GpuError> {
        if inputs.len() != self.inputs.len() {
            return Err(GpuError::Input {
                index: inputs.len(),
                expected: self.inputs.len(),
                got: inputs.len(),
            });
        }
        for (i, x) in inputs.iter().enumerate() {
            self.set_input(i, x)?;
        }
        for r in ranges {
            if r.start > r.end || r.end > self.steps.len() {
                return Err(GpuError::Range {
                    start: r.start,
                    end: r.end,
                    message: format!("the model has {} steps", self.steps.len()),
                });
            }
            let mut gpu_start = r.start;
            for i in r.clone() {
                if self.placement[i] == Placement::Cpu {
                    self.submit_gpu(gpu_start..i)?;
                    gpu_start = i + 1;
                    self.run_cpu_step_blocking(i)?;
                }
            }
            self.submit_gpu(gpu_start..r.end)?;
        }
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("heimdall readback"),
            });
        self.encode_readback(&mut encoder)?;
        self.ctx.queue.submit([encoder.finish()]);
        self.request_readback()?;
        self.wait_for(|| self.readback_ready())?;
        self.take_outputs()?
            .ok_or_else(|| GpuError::Readback("outputs not ready after waiting".into()))
    }
}

/// A pipeline cache when the device has `PIPELINE_CACHE` and a file is named: seeded from the
/// file when it exists (wgpu checks its header against the adapter, the driver and its own
/// version, and starts empty on a mismatch).
fn open_pipeline_cache(
    ctx: &GpuContext,
    path: Option<&std::path::Path>,
) -> (Option<wgpu::PipelineCache>, PipelineCacheState) {
    let Some(path) = path else {
        return (None, PipelineCacheState::Unused);
    };
    if !ctx.features.contains(wgpu::Features::PIPELINE_CACHE) {
        return (None, PipelineCacheState::Unused);
    }
    let (data, state) = match std::fs::read(path) {
        Ok(d) => {
            let n = d.len();
            (Some(d), PipelineCacheState::Warm(n))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (None, PipelineCacheState::Cold),
        Err(e) => (
            None,
            PipelineCacheState::Failed(format!("{}: {e}", path.display())),
        ),
    };
    // SAFETY: the data is what `PipelineCache::get_data` wrote (by `write_atomically`, below,
    // into a file only this backend writes); wgpu validates its header (magic, version,
    // adapter key, size) and with `fallback` starts an empty cache when it does not match.
    let cache = unsafe {
        ctx.device
            .create_pipeline_cache(&wgpu::PipelineCacheDescriptor {
                label: Some("heimdall pipeline cache"),
                data: data.as_deref(),
                fallback: true,
            })
    };
    (Some(cache), state)
}

/// Writes `data` to `path` through a temporary file and a rename, so a reader never sees a
/// half-written cache.
fn write_atomically(path: &std::path::Path, data: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, data)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::{Alias, Placement, Precision, fold_groups, slot_aliases};
    use heimdall_ir::{DType, Graph, Op, OpKind, TensorId, TensorInfo, UnaryKind};

    /// x [1,4,6,8] -> relu -> a -> reshape [1,24,8] (same bytes: alias) -> b -> reshape [1,192]
    /// (channels change: a copy) -> c.
    #[test]
    fn reshapes_keeping_channels_alias_their_input() {
        let t = |shape: Vec<usize>| TensorInfo {
            name: String::new(),
            shape,
            dtype: DType::F32,
            constant: None,
        };
        let g = Graph {
            name: "r".into(),
            tensors: vec![
                t(vec![1, 4, 6, 8]),
                t(vec![1, 4, 6, 8]),
                t(vec![1, 24, 8]),
                t(vec![1, 192]),
            ],
            ops: vec![
                Op::new(
                    OpKind::Unary(UnaryKind::Relu),
                    vec![TensorId(0)],
                    vec![TensorId(1)],
                ),
                Op::new(OpKind::Reshape, vec![TensorId(1)], vec![TensorId(2)]),
                Op::new(OpKind::Reshape, vec![TensorId(2)], vec![TensorId(3)]),
            ],
            inputs: vec![TensorId(0)],
            outputs: vec![TensorId(3)],
        };
        let a = slot_aliases(&g, &[Placement::Gpu; 3], &[Precision::F16; 4], 256);
        let at1 = Some(Alias { root: 1, offset: 0 });
        assert_eq!(a.alias, vec![None, None, at1, None]);
        assert_eq!(a.free, vec![false, true, false]);
        // Different storage precisions never alias.
        let p = [
            Precision::F16,
            Precision::F16,
            Precision::F32,
            Precision::F32,
        ];
        let a = slot_aliases(&g, &[Placement::Gpu; 3], &p, 256);
        assert_eq!(a.alias, vec![None; 4]);
        assert_eq!(a.free, vec![false; 3]);
    }

    /// x [1,8,8,4] -> relu -> a [1,8,8,c0], relu -> b [1,8,8,4]; concat(a, b) -> y -> relu -> z.
    fn concat_graph(c0: usize) -> Graph {
        let t = |c: usize| TensorInfo {
            name: String::new(),
            shape: vec![1, 8, 8, c],
            dtype: DType::F32,
            constant: None,
        };
        let relu = |x: u32, y: u32| {
            Op::new(
                OpKind::Unary(UnaryKind::Relu),
                vec![TensorId(x)],
                vec![TensorId(y)],
            )
        };
        Graph {
            name: "c".into(),
            tensors: vec![t(4), t(c0), t(4), t(c0 + 4), t(c0 + 4)],
            ops: vec![
                relu(0, 1),
                relu(0, 2),
                Op::new(
                    OpKind::Concatenation { axis: 3 },
                    vec![TensorId(1), TensorId(2)],
                    vec![TensorId(3)],
                ),
                relu(3, 4),
            ],
            inputs: vec![TensorId(0)],
            outputs: vec![TensorId(4)],
        }
    }

    #[test]
    fn channel_concats_of_whole_aligned_slices_alias_their_output() {
        let gpu = [Placement::Gpu; 4];
        // 64 pixels of 16 bytes: the second input starts at 1024 (f32) or 512 (f16) bytes.
        let a = slot_aliases(&concat_graph(4), &gpu, &[Precision::F32; 5], 256);
        let at = |offset| Some(Alias { root: 3, offset });
        assert_eq!(a.alias, vec![None, at(0), at(1024), None, None]);
        assert_eq!(a.free, vec![false, false, true, false]);
        let a = slot_aliases(&concat_graph(8), &gpu, &[Precision::F16; 5], 256);
        assert_eq!(a.alias, vec![None, at(0), at(1024), None, None]);
        // Misaligned offset, a partial first slice, a CPU producer, mixed precisions: copies.
        let copy = |a: super::SlotAliases| {
            assert_eq!(a.alias, vec![None; 5]);
            assert_eq!(a.free, vec![false; 4]);
        };
        copy(slot_aliases(
            &concat_graph(4),
            &gpu,
            &[Precision::F16; 5],
            1024,
        ));
        copy(slot_aliases(
            &concat_graph(3),
            &gpu,
            &[Precision::F32; 5],
            4,
        ));
        let cpu = [
            Placement::Gpu,
            Placement::Cpu,
            Placement::Gpu,
            Placement::Gpu,
        ];
        copy(slot_aliases(
            &concat_graph(4),
            &cpu,
            &[Precision::F32; 5],
            256,
        ));
        let mut p = [Precision::F16; 5];
        p[2] = Precision::F32;
        copy(slot_aliases(&concat_graph(4), &gpu, &p, 256));
        // An input that is also a graph output, or read by another op: a copy.
        let mut g = concat_graph(4);
        g.outputs.push(TensorId(1));
        copy(slot_aliases(&g, &gpu, &[Precision::F32; 5], 256));
        let mut g = concat_graph(4);
        g.ops[3].inputs = vec![TensorId(2)];
        g.tensors[4].shape = vec![1, 8, 8, 4];
        copy(slot_aliases(&g, &gpu, &[Precision::F32; 5], 256));
    }

    #[test]
    fn big_grids_fold_into_two_dimensions() {
        assert_eq!(fold_groups(10, 65535), [10, 1]);
        let [x, y] = fold_groups(200_000, 65535);
        assert!(x <= 65535 && y <= 65535 && x * y >= 200_000);
    }
}
