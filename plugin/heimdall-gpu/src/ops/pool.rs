//! MAX_POOL_2D and AVERAGE_POOL_2D: `shaders/pool.wgsl` (one thread per output vec4) for small
//! windows, `shaders/window_reduce.wgsl` (one work group per output vec4) for windows of at least
//! [`LARGE_WINDOW`] positions (global pools); padded positions skipped. MEAN over height/width
//! reuses this as an average pool (see [`super::reduce`]).

use heimdall_ir::PoolAttrs;

use crate::dispatch::{Dispatch, OpContext, Operand, TileMap, groups_for, u32_of};
use crate::params::shader_params;
use crate::precision::Precision;
use crate::wgsl::{BindingDecl, EpilogueDecl, KernelSource};

shader_params! {
    /// Uniform parameters of `shaders/pool.wgsl` and `shaders/window_reduce.wgsl`.
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
}

/// What a pool computes over its window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolKind {
    /// The maximum (MAX_POOL_2D).
    Max,
    /// The average of the positions inside the input (AVERAGE_POOL_2D, MEAN).
    Average,
}

impl PoolKind {
    /// The kernels' `MODE` constant.
    fn code(self) -> u32 {
        match self {
            PoolKind::Max => 0,
            PoolKind::Average => 1,
        }
    }
}

/// Source of the pooling kernel.
pub fn source(kind: PoolKind, x: Precision, y: Precision, epilogue: EpilogueDecl) -> KernelSource {
    KernelSource {
        consts: vec![("MODE", kind.code())],
        epilogue,
        ..KernelSource::new(
            "pool",
            vec![BindingDecl::read("x", x), BindingDecl::write("y", y)],
        )
    }
    .with_params::<GpuPoolParams>()
}

/// Windows of at least this many positions use the work-group reduction.
pub const LARGE_WINDOW: usize = 64;

/// Source of the work-group reduction over large windows, work groups of 64 threads.
pub fn window_reduce_source(
    kind: PoolKind,
    x: Precision,
    y: Precision,
    epilogue: EpilogueDecl,
) -> KernelSource {
    window_reduce_source_rg(kind, x, y, epilogue, 64)
}

/// [`window_reduce_source`] with work groups of `rg` threads (a power of two, ≤ 256).
pub fn window_reduce_source_rg(
    kind: PoolKind,
    x: Precision,
    y: Precision,
    epilogue: EpilogueDecl,
    rg: u32,
) -> KernelSource {
    KernelSource {
        consts: vec![("MODE", kind.code()), ("RG", rg)],
        epilogue,
        ..KernelSource::new(
            "window_reduce",
            vec![BindingDecl::read("x", x), BindingDecl::write("y", y)],
        )
    }
    .with_params::<GpuPoolParams>()
}

/// Threads per work group of the large-window reduction: 256 (the WebGPU limit) when there
/// are fewer than `min_threads / 64` outputs, so that a global pool of a few output vec4s does
/// not leave the GPU with a handful of groups each walking thousands of positions (H100,
/// selfie_segmentation's 128x128x16 global average: 84 us with 4 groups of 64); 64 otherwise.
/// Never more than the device allows (`max_workgroup`, e.g. 128 on phones; rounded down to a
/// power of two).
fn reduce_group(outputs: usize, min_threads: usize, max_workgroup: u32) -> u32 {
    let wanted: u32 = if outputs * 64 < min_threads { 256 } else { 64 };
    let cap = match max_workgroup {
        0 => 1,
        m => 1 << m.ilog2(),
    };
    wanted.min(cap)
}

/// Builds a MAX_POOL_2D or AVERAGE_POOL_2D.
pub fn build(ctx: &mut OpContext, a: &PoolAttrs, kind: PoolKind) -> Result<Vec<Dispatch>, String> {
    let y = ctx.out_geom()?;
    build_window(ctx, a, kind, (y.h, y.w))
}

/// Builds a pooling window over input 0 with the output grid `out` (height, width); the
/// output's channels must be the input's.
pub fn build_window(
    ctx: &mut OpContext,
    a: &PoolAttrs,
    kind: PoolKind,
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
    let d = Dispatch::new(
        if large {
            window_reduce_source_rg(
                kind,
                xp,
                yp,
                ep,
                reduce_group(total, ctx.tuning.min_threads, ctx.tuning.max_workgroup),
            )
        } else {
            source(kind, xp, yp, ep)
        },
        &p,
        operands,
        if large {
            u32_of(total)?
        } else {
            groups_for(total)
        },
    );
    // The large-window kernel reduces one output vec4 per work group (same order).
    Ok(vec![if large {
        d.with_tiles(TileMap::Rows {
            threads: 1,
            total: u32_of(total)?,
            col_blocks: u32_of(y.w)?,
            bx: 1,
        })
    } else {
        d.with_vec4_rows(total, y.w)
    }])
}

/// Every variant in precision `p` (stored f32, as averages are), for the catalogue.
pub fn catalogue(p: Precision) -> Vec<KernelSource> {
    let mut out = Vec::new();
    for kind in [PoolKind::Max, PoolKind::Average] {
        out.push(source(kind, p, Precision::F32, EpilogueDecl::NONE));
        out.push(window_reduce_source(
            kind,
            p,
            Precision::F32,
            EpilogueDecl::NONE,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::reduce_group;

    /// The large-window reduction takes 256 threads for few outputs, 64 otherwise, never more
    /// than the device allows (rounded down to a power of two).
    #[test]
    fn reduction_groups_stay_within_the_device() {
        assert_eq!(reduce_group(4, 10_000, 256), 256);
        assert_eq!(reduce_group(4, 10_000, 128), 128);
        assert_eq!(reduce_group(4, 10_000, 192), 128);
        assert_eq!(reduce_group(10_000, 10_000, 128), 64);
        assert_eq!(reduce_group(10_000, 10_000, 32), 32);
        assert_eq!(reduce_group(4, 10_000, 0), 1);
    }
}
