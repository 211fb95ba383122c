//! [`GpuModel::compile`]: a validated graph to a compiled model. Plans every op's dispatches
//! ([`crate::limits`]), picks the convolution cache's dispatches, plans the activation slots
//! (twice with a cache: the cached plan and the plain one it runs while off), creates every
//! buffer, pipeline and bind group inside one validation scope, then the CPU steps, the resume
//! tables, the inputs' and outputs' packing kernels and the readback.

use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;
use std::time::Instant;

use heimdall_ir::conv_cache::{CachePlan, ConvCacheConfig};
use heimdall_ir::{Graph, Op, OpKind, TensorId};

use crate::context::GpuContext;
use crate::conv_cache::{CachedDispatch, ConvCache};
use crate::cpu_step::CpuStep;
use crate::error::GpuError;
use crate::io_pack::{DenseInputs, DenseOutputs};
use crate::layout::Phwc4;
use crate::limits::{LimitsError, OpPlan, plan_ops, shortfalls, storage_buffers};
use crate::memory::{self, MemoryPlan, TwinPlans};
use crate::model::{Bound, GpuModel};
use crate::options::{CompileReport, GpuOptions, PipelineCacheState};
use crate::plan::Placement;
use crate::readback::{IoTensor, Readback};
use crate::resources::{self, EncodedDispatch, Shared, open_pipeline_cache, write_atomically};
use crate::resume::{ResumeSources, ResumeTable};

/// One memory plan's slots and the dispatches bound to them, before its CPU steps and tables.
type BoundSlots<'m> = (&'m MemoryPlan, Vec<wgpu::Buffer>, Vec<Vec<EncodedDispatch>>);

impl GpuModel {
    /// Compiles a validated graph for `ctx`: plans the activation slots, pre-transforms and
    /// uploads every weight, composes and creates every pipeline (deduplicated) and bind group.
    pub fn compile(
        ctx: &GpuContext,
        graph: &Graph,
        options: GpuOptions,
    ) -> Result<GpuModel, GpuError> {
        let start = Instant::now();
        let plan = plan_ops(ctx, graph, &options)?;
        let over = shortfalls(ctx, graph, &plan);
        if !over.is_empty() {
            return Err(GpuError::Limits(LimitsError { shortfalls: over }));
        }
        let cache_plan = conv_cache_plan(graph, &options)?;
        let (cached, persistent) = match &cache_plan {
            Some((_, cp)) => cached_dispatches(ctx, graph, &plan, cp),
            None => (Vec::new(), vec![false; graph.tensors.len()]),
        };
        let first_gpu_step = (plan.placement.iter())
            .position(|p| *p == Placement::Gpu)
            .unwrap_or(0);
        // Where no CPU step comes before the first GPU one (a run's plan is chosen there), a
        // cached model also gets the plain plan, to run while its cache is off.
        let with_twin = !cached.is_empty() && first_gpu_step == 0;
        let (mem, twins) = memory_plans(graph, &plan, &persistent, with_twin);
        let mut conv_cache = match &cache_plan {
            Some((config, cp)) if !cached.is_empty() => Some(ConvCache::new(
                ctx,
                *config,
                cp.in_hw,
                cp.channels,
                &cached,
            )?),
            _ => None,
        };
        let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let (cache, mut cache_state) = open_pipeline_cache(ctx, options.pipeline_cache.as_deref());
        let cached_input = cache_plan.as_ref().map(|(_, cp)| cp.input);
        let built = create_plans(
            ctx,
            graph,
            &plan,
            cache.as_ref(),
            (conv_cache.as_mut(), cached_input),
            &mem,
            twins.as_ref(),
        );
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Wgpu(e.to_string()));
        }
        let (shared, plans) = built?;
        let cpu_ops = heimdall_cpu::cpu_ops(graph);
        let bound = (plans.into_iter())
            .map(|slots| bind_plan(ctx, graph, &plan, &cpu_ops, slots))
            .collect::<Result<Vec<_>, _>>()?;
        let (dense_inputs, dense_outputs, readback) =
            io_resources(ctx, cache.as_ref(), &bound[0], conv_cache.as_ref())?;
        if let (Some(cache), Some(path)) = (&cache, &options.pipeline_cache)
            && let Some(data) = cache.get_data()
            && let Err(e) = write_atomically(path, &data)
        {
            cache_state = PipelineCacheState::Failed(format!("{}: {e}", path.display()));
        }
        let report = CompileReport {
            compile_time: start.elapsed(),
            precision: plan.precision,
            pipelines: shared.pipelines.len(),
            dispatches: bound[0].steps.iter().map(Vec::len).sum(),
            free_concats: free_concats(graph, &plan),
            peak_bytes: mem.peak_bytes(),
            plain_plan_bytes: plain_plan_bytes(twins.as_ref()),
            total_bytes: mem.total_bytes,
            weight_bytes: plan.consts.iter().map(|c| c.bytes.len() as u64).sum(),
            pipeline_cache: cache_state,
            cached_ops: cached.iter().map(|c| c.step).collect(),
            f16_arith_ops: f16_arith_ops(&plan),
        };
        Ok(GpuModel {
            ctx: ctx.clone(),
            names: graph.ops.iter().map(|o| o.kind.name()).collect(),
            placement: plan.placement,
            pipelines: shared.pipelines,
            _consts: shared.consts,
            _uniforms: shared.uniforms,
            bound,
            current: AtomicUsize::new(0),
            upload: Mutex::new(Vec::new()),
            dense_inputs,
            dense_outputs,
            readback,
            report,
            cache,
            conv_cache,
            first_gpu_step,
        })
    }
}

/// The memory plan the model is compiled with and, with `twins` (a cached model), the plain plan
/// it runs while its cache is off; `persistent` tensors keep their slots.
fn memory_plans(
    graph: &Graph,
    plan: &OpPlan,
    persistent: &[bool],
    twins: bool,
) -> (MemoryPlan, Option<TwinPlans>) {
    let twins = match twins {
        true => memory::plan_twins(graph, &plan.bytes, &plan.aliases.alias, persistent),
        false => None,
    };
    let mem = match &twins {
        Some(t) => t.cached.clone(),
        None => memory::plan_persistent(graph, &plan.bytes, &plan.aliases.alias, persistent),
    };
    (mem, twins)
}

/// The inputs' packing kernels, the outputs' unpacking kernels and the outputs' readback (with
/// the convolution cache's counters), on the compiled plan's slots.
fn io_resources(
    ctx: &GpuContext,
    cache: Option<&wgpu::PipelineCache>,
    first: &Bound,
    conv_cache: Option<&ConvCache>,
) -> Result<(DenseInputs, DenseOutputs, Readback), GpuError> {
    let dense_inputs = DenseInputs::new(ctx, cache, &first.inputs, &first.slots)?;
    let dense_outputs = DenseOutputs::new(ctx, cache, &first.outputs, &first.slots)?;
    let dense: Vec<bool> = (0..first.outputs.len())
        .map(|i| dense_outputs.has(i))
        .collect();
    let readback = Readback::new(
        &ctx.device,
        &first.outputs,
        &dense,
        conv_cache.map(ConvCache::counters_bytes),
    );
    Ok((dense_inputs, dense_outputs, readback))
}

/// The convolution cache's settings (checked) and plan, when the options ask for one.
fn conv_cache_plan(
    graph: &Graph,
    options: &GpuOptions,
) -> Result<Option<(ConvCacheConfig, CachePlan)>, GpuError> {
    match &options.conv_cache {
        Some(c) => {
            c.validate().map_err(GpuError::Options)?;
            Ok(Some((
                *c,
                CachePlan::new(graph, c.layers).map_err(GpuError::Options)?,
            )))
        }
        None => Ok(None),
    }
}

/// The conv cache's dispatches: ops it may skip whose one dispatch has a known thread order and
/// a binding to spare for its work group list; and, per tensor, whether it keeps its slot (their
/// outputs do).
fn cached_dispatches(
    ctx: &GpuContext,
    graph: &Graph,
    plan: &OpPlan,
    cache_plan: &CachePlan,
) -> (Vec<CachedDispatch>, Vec<bool>) {
    let mut cached: Vec<CachedDispatch> = Vec::new();
    let mut persistent = vec![false; graph.tensors.len()];
    for (i, ds) in plan.dispatches.iter().enumerate() {
        let ([d], true, false) = (
            ds.as_slice(),
            cache_plan.cacheable[i] && plan.placement[i] == Placement::Gpu,
            plan.aliases.free[i],
        ) else {
            continue;
        };
        let out = graph.ops[i].outputs[0];
        let (Some(tiles), Some(field), &[1, h, w, _]) = (
            d.tiles,
            cache_plan.field(out),
            graph.tensor(out).shape.as_slice(),
        ) else {
            continue;
        };
        let bindings = storage_buffers(ctx, d) + 1;
        if bindings > ctx.limits.max_storage_buffers_per_shader_stage || d.workgroups == 0 {
            continue;
        }
        cached.push(CachedDispatch {
            step: i,
            workgroups: d.workgroups,
            tiles,
            field,
            out_hw: [h as u32, w as u32],
        });
        persistent[out.index()] = true;
    }
    (cached, persistent)
}

/// Creates the shared resources (constants, uniforms, pipelines) and, per memory plan (`mem`,
/// then the plain twin if any), its slots and bind groups; attaches the cached input's slot to
/// the convolution cache. Device errors surface in the caller's validation scope.
fn create_plans<'m>(
    ctx: &GpuContext,
    graph: &Graph,
    plan: &OpPlan,
    cache: Option<&wgpu::PipelineCache>,
    (mut conv_cache, cached_input): (Option<&mut ConvCache>, Option<TensorId>),
    mem: &'m MemoryPlan,
    twins: Option<&'m TwinPlans>,
) -> Result<(Shared, Vec<BoundSlots<'m>>), GpuError> {
    let dispatches = &plan.dispatches;
    let shared =
        resources::create_shared(ctx, cache, &plan.consts, dispatches, conv_cache.as_deref())?;
    let slots = resources::create_slots(ctx, mem, &[], "heimdall slot")?;
    if let (Some(c), Some(input)) = (conv_cache.as_deref_mut(), cached_input) {
        let slot = mem.slot_of[input.index()]
            .ok_or_else(|| GpuError::Unsupported("the cached input has no slot".into()))?;
        c.attach_input(ctx, &slots[slot], plan.precisions[input.index()], cache)?;
    }
    let steps = resources::bind(
        ctx,
        graph,
        mem,
        &slots,
        &shared,
        dispatches,
        conv_cache.as_deref(),
    )?;
    let mut plans = vec![(mem, slots, steps)];
    if let Some(t) = twins {
        let reuse: Vec<Option<wgpu::Buffer>> = (t.shared.iter())
            .map(|a| a.map(|a| plans[0].1[a].clone()))
            .collect();
        let slots = resources::create_slots(ctx, &t.plain, &reuse, "heimdall plain slot")?;
        let steps = resources::bind(ctx, graph, &t.plain, &slots, &shared, dispatches, None)?;
        plans.push((&t.plain, slots, steps));
    }
    Ok((shared, plans))
}

/// One memory plan's resources completed: where the inputs and outputs live, the CPU steps
/// and the resume table.
fn bind_plan(
    ctx: &GpuContext,
    graph: &Graph,
    plan: &OpPlan,
    cpu_ops: &[Op],
    (mem, slots, steps): BoundSlots<'_>,
) -> Result<Bound, GpuError> {
    let io = |t: TensorId| -> Result<IoTensor, GpuError> {
        let slot = mem.slot_of[t.index()].ok_or_else(|| {
            GpuError::Unsupported(format!("tensor {} is a constant, not an activation", t.0))
        })?;
        Ok(IoTensor {
            slot,
            offset: mem.view_of[t.index()].map_or(0, |v| v.0),
            geom: Phwc4::of(&graph.tensor(t).shape)?,
            precision: plan.precisions[t.index()],
            shape: graph.tensor(t).shape.clone(),
        })
    };
    let inputs = (graph.inputs.iter())
        .map(|&t| io(t))
        .collect::<Result<Vec<_>, _>>()?;
    let outputs = (graph.outputs.iter())
        .map(|&t| io(t))
        .collect::<Result<Vec<_>, _>>()?;
    let cpu_steps = (plan.placement.iter().enumerate())
        .map(|(i, p)| match p {
            Placement::Cpu => CpuStep::new(&ctx.device, graph, i, io).map(Some),
            Placement::Gpu => Ok(None),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let sources = ResumeSources {
        graph,
        placement: &plan.placement,
        aliases: &plan.aliases,
        cpu_ops,
    };
    Ok(Bound {
        resume: ResumeTable::new(&sources, mem, io)?,
        steps,
        slots,
        inputs,
        outputs,
        cpu_steps,
    })
}

/// Free concatenations (ops with no dispatch: their inputs are written in place).
fn free_concats(graph: &Graph, plan: &OpPlan) -> usize {
    (graph.ops.iter().zip(&plan.aliases.free))
        .filter(|(op, free)| **free && matches!(op.kind, OpKind::Concatenation { .. }))
        .count()
}

/// Bytes the plain twin plan adds (its slots not shared with the cached plan).
fn plain_plan_bytes(twins: Option<&TwinPlans>) -> u64 {
    twins.map_or(0, |t| {
        (t.plain.slot_bytes.iter().zip(&t.shared))
            .filter(|(_, s)| s.is_none())
            .map(|(b, _)| *b)
            .sum()
    })
}

/// Ops with a dispatch that computes in f16.
fn f16_arith_ops(plan: &OpPlan) -> Vec<usize> {
    (plan.dispatches.iter().enumerate())
        .filter(|(_, ds)| ds.iter().any(|d| d.source.f16_arith))
        .map(|(i, _)| i)
        .collect()
}
