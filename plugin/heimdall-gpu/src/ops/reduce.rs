//! Reductions: MEAN over height and/or width is an average pool whose window spans the reduced
//! axes (see [`super::pool`]; large windows use the work-group reduction); every other
//! reduction (ONNX `ReduceSum`, `ReduceMax`, ..., and means over other axes) is
//! `shaders/reduce.wgsl`, one thread per output vec4 folding the reduced box of each lane, or,
//! for a few outputs of long reductions on a GPU, `shaders/reduce_split.wgsl`, one work group
//! per output vec4 ([`splits`]).

use heimdall_ir::{Pad2d, PoolAttrs, ReduceKind};

use super::pool::{PoolKind, build_window};
use crate::dispatch::{Dispatch, OpContext, Operand, batch_one, dims4, groups_for, u32_of};
use crate::params::shader_params;
use crate::precision::Precision;
use crate::wgsl::{BindingDecl, KernelSource};

shader_params! {
    /// Uniform parameters of `shaders/reduce.wgsl`.
    struct GpuReduceParams {
        out_dims: [u32; 4],
        red_dims: [u32; 4],
        in_h: u32,
        in_w: u32,
        y_h: u32,
        y_w: u32,
        y_c: u32,
        total: u32,
    }
}

/// The kernel's `FOLD` code of a reduction.
fn fold_code(k: ReduceKind) -> u32 {
    match k {
        ReduceKind::Sum => 0,
        ReduceKind::Max => 1,
        ReduceKind::Min => 2,
        ReduceKind::Prod => 3,
        ReduceKind::SumSquare => 4,
        ReduceKind::L1 => 5,
        ReduceKind::L2 => 6,
        ReduceKind::LogSum => 7,
        ReduceKind::LogSumExp => 8,
        ReduceKind::Mean => 9,
    }
}

/// Source of the reduction kernel for `kind`.
pub fn source(x: Precision, y: Precision, kind: ReduceKind) -> KernelSource {
    KernelSource {
        consts: vec![("FOLD", fold_code(kind))],
        ..KernelSource::new(
            "reduce",
            vec![BindingDecl::read("x", x), BindingDecl::write("y", y)],
        )
    }
    .with_params::<GpuReduceParams>()
}

/// Source of the split reduction (`reduce_split.wgsl`, one work group per output vec4).
pub fn split_source(x: Precision, y: Precision, kind: ReduceKind) -> KernelSource {
    KernelSource {
        name: "reduce_split",
        ..source(x, y, kind)
    }
}

/// Whether a reduction of `total` output vec4s of `count` terms each runs one work group per
/// output vec4: where the grid of one thread per output would stay below the tuning's split
/// threshold ([`crate::Tuning::split_k_threads`], 0 on a CPU rasteriser: never) and each output
/// folds at least 16 terms. H100, multistyle26's 36 `[26, 32] -> [32]` sums: 0.067 ms each
/// with one thread per output vec4 (8 threads, a serial chain of 104 loads each).
/// `HEIMDALL_REDUCE_SPLIT=0` never splits (for A/B measurements).
pub fn splits(t: &crate::Tuning, total: usize, count: usize) -> bool {
    static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let off = *OFF.get_or_init(|| std::env::var("HEIMDALL_REDUCE_SPLIT").is_ok_and(|v| v == "0"));
    !off && count >= 16
        && total.saturating_mul(crate::wgsl::WORKGROUP_SIZE as usize) < t.split_k_threads
}

/// Builds a reduction of input 0 over `axes` (of the input's rank).
pub fn build(
    ctx: &mut OpContext,
    kind: ReduceKind,
    axes: &[usize],
) -> Result<Vec<Dispatch>, String> {
    if kind == ReduceKind::Mean
        && let Some(d) = build_spatial_mean(ctx, axes)?
    {
        return Ok(d);
    }
    let shape = ctx.in_shape(0)?.to_vec();
    batch_one(&shape)?;
    let off = 4 - shape.len();
    let d = dims4(&shape)?;
    let mut out_dims = d;
    let mut red_dims = [1u32; 4];
    for &a in axes {
        if a >= shape.len() {
            return Err(format!("axis {a} of rank {}", shape.len()));
        }
        out_dims[off + a] = 1;
        red_dims[off + a] = d[off + a];
    }
    let x = ctx.in_geom(0)?;
    let y = ctx.out_geom()?;
    if y.h * y.w * y.c != out_dims.iter().map(|&v| v as usize).product::<usize>() {
        return Err(format!("reduction of {shape:?} over {axes:?} into {y:?}"));
    }
    let (x_op, xp, _) = ctx.input_operand(0)?;
    let total = y.vec4s();
    let p = GpuReduceParams {
        out_dims,
        red_dims,
        in_h: u32_of(x.h)?,
        in_w: u32_of(x.w)?,
        y_h: u32_of(y.h)?,
        y_w: u32_of(y.w)?,
        y_c: u32_of(y.c)?,
        total: u32_of(total)?,
    };
    let count: usize = red_dims.iter().map(|&v| v as usize).product();
    if splits(&ctx.tuning, total, count) {
        return Ok(vec![Dispatch::new(
            split_source(xp, ctx.out_precision()?, kind),
            &p,
            vec![x_op, Operand::Tensor(ctx.output()?)],
            u32_of(total)?,
        )]);
    }
    Ok(vec![Dispatch::new(
        source(xp, ctx.out_precision()?, kind),
        &p,
        vec![x_op, Operand::Tensor(ctx.output()?)],
        groups_for(total),
    )])
}

/// Builds a MEAN over height and/or width of a 4-D input as an average pool; `None` for any
/// other axes.
fn build_spatial_mean(
    ctx: &mut OpContext,
    axes: &[usize],
) -> Result<Option<Vec<Dispatch>>, String> {
    let rank = ctx.in_shape(0)?.len();
    let x = ctx.in_geom(0)?;
    let axes4: Vec<usize> = axes.iter().map(|a| a + 4 - rank).collect();
    if rank != 4 || axes4.iter().any(|&a| a != 1 && a != 2) {
        return Ok(None);
    }
    let (rh, rw) = (axes4.contains(&1), axes4.contains(&2));
    let filter = [if rh { x.h } else { 1 }, if rw { x.w } else { 1 }];
    let attrs = PoolAttrs {
        filter,
        stride: [filter[0].max(1), filter[1].max(1)],
        pad: Pad2d::default(),
    };
    // The output keeps the non-reduced axes; a removed unit axis leaves the same PHWC4 order.
    let out = (if rh { 1 } else { x.h }, if rw { 1 } else { x.w });
    build_window(ctx, &attrs, PoolKind::Average, out).map(Some)
}

/// Every reduction in precision `p`, for the catalogue.
pub fn catalogue(p: Precision) -> Vec<KernelSource> {
    [
        ReduceKind::Mean,
        ReduceKind::Sum,
        ReduceKind::Max,
        ReduceKind::Min,
        ReduceKind::Prod,
        ReduceKind::SumSquare,
        ReduceKind::L1,
        ReduceKind::L2,
        ReduceKind::LogSum,
        ReduceKind::LogSumExp,
    ]
    .into_iter()
    .flat_map(|k| [source(p, p, k), split_source(p, p, k)])
    .collect()
}
