//! MAX_POOL_2D and AVERAGE_POOL_2D: `shaders/pool.wgsl` (one thread per output vec4) for small
//! windows, `shaders/window_reduce.wgsl` (one work group per output vec4) for windows of at least
//! [`LARGE_WINDOW`] positions (global pools); padded positions skipped. MEAN over height/width
//! reuses this as an average pool (see [`super::mean`]).

use bytemuck::{Pod, Zeroable};
use heimdall_ir::PoolAttrs;

use super::{Dispatch, OpContext, Operand, groups_for, u32_of};
use crate::precision::Precision;
use crate::shaders::{read, write};
use crate::wgsl::{EpilogueDecl, KernelSource};

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct GpuPoolParams {
    in_h: u32,
    in_w: u32,
    out_h: u32,
    out_w: u32,
    channels: u32,
    k_h: u32,
    k_w: u32,
    stride_h: u32,
    stride_w: u32,
    pad_top: u32,
    pad_left: u32,
    total: u32,
}

/// Source of the pooling kernel; `mode` 0 = max, 1 = average.
pub fn source(mode: u32, x: Precision, y: Precision, epilogue: EpilogueDecl) -> KernelSource {
    KernelSource {
        consts: vec![("MODE", mode)],
        epilogue,
        ..KernelSource::new("pool", vec![read("x", x), write("y", y)])
    }
}

/// Windows of at least this many positions use the work-group reduction.
pub const LARGE_WINDOW: usize = 64;

/// Source of the work-group reduction over large windows; `mode` 0 = max, 1 = average; work
/// groups of 64 threads.
pub fn window_reduce_source(
    mode: u32,
    x: Precision,
    y: Precision,
    epilogue: EpilogueDecl,
) -> KernelSource {
    window_reduce_source_rg(mode, x, y, epilogue, 64)
}

/// [`window_reduce_source`] with work groups of `rg` threads (a power of two, ≤ 256).
pub fn window_reduce_source_rg(
    mode: u32,
    x: Precision,
    y: Precision,
    epilogue: EpilogueDecl,
    rg: u32,
) -> KernelSource {
    KernelSource {
        consts: vec![("MODE", mode), ("RG", rg)],
        epilogue,
        ..KernelSource::new("window_reduce", vec![read("x", x), write("y", y)])
    }
}

/// Threads per work group of the large-window reduction: 256 (the WebGPU limit) when there
/// are fewer than `min_threads / 64` outputs, so that a global pool of a few output vec4s does
/// not leave the GPU with a handful of groups each walking thousands of positions (H100,
/// selfie_segmentation's 128x128x16 global average: 84 us with 4 groups of 64); 64 otherwise.
fn reduce_group(outputs: usize, min_threads: usize) -> u32 {
    if outputs * 64 < min_threads { 256 } else { 64 }
}

/// Builds a pooling op; `mode` 0 = max, 1 = average.
pub fn build(ctx: &mut OpContext, a: &PoolAttrs, mode: u32) -> Result<Vec<Dispatch>, String> {
    let y = ctx.out_geom()?;
    build_window(ctx, a, mode, (y.h, y.w))
}

/// Builds a pooling window over input 0 with the output grid `out` (height, width); the
/// output's channels must be the input's.
pub fn build_window(
    ctx: &mut OpContext,
    a: &PoolAttrs,
    mode: u32,
    out: (usize, usize),
) -> Result<Vec<Dispatch>, String> {
    let x = ctx.in_geom(0)?;
    let mut y = ctx.out_geom()?;
    if y.c != x.c || y.h * y.w != out.0 * out.1 {
        return Err(format!("pool of {x:?} to {y:?}"));
    }
    (y.h, y.w) = out;
    let xp = ctx.precisions[ctx.op.inputs[0].index()];
    let yp = ctx.out_precision()?;
    let (ep, ep_ops) = ctx.epilogue()?;
    let mut operands = vec![
        Operand::Tensor(ctx.op.inputs[0]),
        Operand::Tensor(ctx.output()?),
    ];
    operands.extend(ep_ops);
    let total = y.vec4s();
    let large = a.filter[0] * a.filter[1] >= LARGE_WINDOW;
    let p = GpuPoolParams {
        in_h: u32_of(x.h)?,
        in_w: u32_of(x.w)?,
        out_h: u32_of(y.h)?,
        out_w: u32_of(y.w)?,
        channels: u32_of(y.c)?,
        k_h: u32_of(a.filter[0])?,
        k_w: u32_of(a.filter[1])?,
        stride_h: u32_of(a.stride[0])?,
        stride_w: u32_of(a.stride[1])?,
        pad_top: u32_of(a.pad.top)?,
        pad_left: u32_of(a.pad.left)?,
        total: u32_of(total)?,
    };
    Ok(vec![Dispatch {
        source: if large {
            window_reduce_source_rg(
                mode,
                xp,
                yp,
                ep,
                reduce_group(total, ctx.tuning.min_threads),
            )
        } else {
            source(mode, xp, yp, ep)
        },
        params: bytemuck::bytes_of(&p).to_vec(),
        operands,
        workgroups: if large {
            u32_of(total)?
        } else {
            groups_for(total)
        },
    }])
}
