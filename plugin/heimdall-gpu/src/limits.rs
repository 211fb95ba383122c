//! What a model needs of a device's limits, known before anything is created on the device.
//!
//! [`GpuModel::compile`](crate::GpuModel::compile) first turns every op into its dispatches
//! (kernel sources, parameters, operands, weights packed on the host) without touching the
//! device (`plan_ops`); [`check_limits`] runs exactly that step and compares what the kernels
//! bind with the device's limits, so a caller learns which ops a device cannot run (a phone
//! with Vulkan's minimum of 4 storage buffers per shader stage, `docs/mobile-limits.md`) before
//! compiling, and can run the model elsewhere (the Bevy plugin runs it on the CPU backend). The
//! compile itself fails with the same typed error ([`GpuError::Limits`]) on such a device.

use heimdall_ir::Graph;

use crate::aliases::{SlotAliases, slot_aliases};
use crate::context::GpuContext;
use crate::dispatch::{ConstBuffer, Dispatch, OpContext};
use crate::error::GpuError;
pub use crate::error::{Limit, LimitShortfall, LimitsError};
use crate::layout::Phwc4;
use crate::options::GpuOptions;
use crate::params::ParamsSpace;
use crate::plan::{Placement, placement};
use crate::precision::Precision;
use crate::storage::{op_precisions, tensor_precisions};

/// Every op turned into its dispatches, with what the rest of a compile needs of that step.
pub(crate) struct OpPlan {
    /// The model's storage precision (f16 falls back to packed f16 without `SHADER_F16`).
    pub precision: Precision,
    pub placement: Vec<Placement>,
    pub precisions: Vec<Precision>,
    /// Bytes of each activation tensor (0 for constants).
    pub bytes: Vec<u64>,
    pub aliases: SlotAliases,
    pub consts: Vec<ConstBuffer>,
    /// Each op's dispatches (none for CPU steps and ops that need no dispatch).
    pub dispatches: Vec<Vec<Dispatch>>,
}

/// Validates `graph` and turns every op into its dispatches for `ctx`'s device (host work only:
/// nothing is created on the device).
pub(crate) fn plan_ops(
    ctx: &GpuContext,
    graph: &Graph,
    options: &GpuOptions,
) -> Result<OpPlan, GpuError> {
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
    let op_precisions = op_precisions(graph, options, ctx.has_f16());
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
        let d = crate::ops::build(&mut octx).map_err(|message| GpuError::Op {
            index,
            name: op.kind.name().into(),
            message,
        })?;
        dispatches.push(d);
    }
    Ok(OpPlan {
        precision,
        placement,
        precisions,
        bytes,
        aliases,
        consts,
        dispatches,
    })
}

/// Storage buffers one dispatch binds on `ctx`'s device (the parameters take one more where
/// they live in a storage buffer).
pub(crate) fn storage_buffers(ctx: &GpuContext, d: &Dispatch) -> u32 {
    let params = u32::from(ctx.params_space() == ParamsSpace::Storage);
    d.source.storage_bindings() as u32 + params
}

/// Every op of `plan` over one of `ctx`'s limits.
pub(crate) fn shortfalls(ctx: &GpuContext, graph: &Graph, plan: &OpPlan) -> Vec<LimitShortfall> {
    let l = &ctx.limits;
    let mut out = Vec::new();
    for (index, ds) in plan.dispatches.iter().enumerate() {
        let name = || graph.ops[index].kind.name().to_string();
        let buffers = ds
            .iter()
            .map(|d| storage_buffers(ctx, d))
            .max()
            .unwrap_or(0);
        if buffers > l.max_storage_buffers_per_shader_stage {
            out.push(LimitShortfall {
                op: index,
                name: name(),
                limit: Limit::StorageBuffersPerStage,
                needs: u64::from(buffers),
                allows: u64::from(l.max_storage_buffers_per_shader_stage),
            });
        }
        let largest = ds
            .iter()
            .flat_map(|d| &d.operands)
            .map(|o| match *o {
                crate::dispatch::Operand::Tensor(t) => plan.bytes[t.index()],
                crate::dispatch::Operand::Const(c) => {
                    plan.consts.get(c).map_or(0, |c| c.bytes.len() as u64)
                }
            })
            .max()
            .unwrap_or(0);
        if largest > l.max_storage_buffer_binding_size {
            out.push(LimitShortfall {
                op: index,
                name: name(),
                limit: Limit::StorageBindingSize,
                needs: largest,
                allows: l.max_storage_buffer_binding_size,
            });
        }
    }
    out
}

/// Whether `ctx`'s device can run `graph` compiled with `options`, known before anything is
/// created on the device: `Err(GpuError::Limits)` lists every op whose kernels bind more storage
/// buffers per shader stage, or more bytes in one binding, than the device allows; any other
/// error is one [`GpuModel::compile`](crate::GpuModel::compile) would return too (an invalid
/// graph, an op the backend cannot build). Host work only (the kernels' sources and the packed
/// weights are built and dropped), a fraction of a compile.
pub fn check_limits(ctx: &GpuContext, graph: &Graph, options: &GpuOptions) -> Result<(), GpuError> {
    let plan = plan_ops(ctx, graph, options)?;
    let shortfalls = shortfalls(ctx, graph, &plan);
    if shortfalls.is_empty() {
        Ok(())
    } else {
        Err(GpuError::Limits(LimitsError { shortfalls }))
    }
}
