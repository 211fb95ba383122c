//! CONV_2D: `shaders/conv1x1.wgsl` (1x1, stride 1, no padding: a blocked matrix product) and
//! `shaders/conv2d.wgsl` (any window). Weights are pre-transformed to
//! `[out_slice][ky][kx][in_slice][in_lane]` vec4 over 4 output channels.

use bytemuck::{Pod, Zeroable};
use heimdall_ir::ConvAttrs;

use super::{Dispatch, OpContext, groups_for, u32_of};
use crate::precision::Precision;
use crate::shaders::{read, write};
use crate::wgsl::{EpilogueDecl, KernelSource};

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct GpuConv1x1Params {
    pixels: u32,
    in_slices: u32,
    out_slices: u32,
    out_channels: u32,
    pixel_blocks: u32,
    total: u32,
    _pad: [u32; 2],
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct GpuConv2dParams {
    in_h: u32,
    in_w: u32,
    in_slices: u32,
    out_h: u32,
    out_w: u32,
    out_slices: u32,
    out_channels: u32,
    k_h: u32,
    k_w: u32,
    stride_h: u32,
    stride_w: u32,
    dil_h: u32,
    dil_w: u32,
    pad_top: u32,
    pad_left: u32,
    col_blocks: u32,
    total: u32,
    _pad: [u32; 3],
}

/// Source of the 1x1 kernel with `bp` pixels x `bs` output slices per thread.
pub fn conv1x1_source(
    x: Precision,
    w: Precision,
    y: Precision,
    bp: u32,
    bs: u32,
    epilogue: EpilogueDecl,
) -> KernelSource {
    KernelSource {
        consts: vec![("BP", bp), ("BS", bs)],
        epilogue,
        ..KernelSource::new(
            "conv1x1",
            vec![
                read("x", x),
                read("w", w),
                read("bias", Precision::F32),
                write("y", y),
            ],
        )
    }
}

/// Source of the generic kernel with `bx` columns x `bs` output slices per thread.
pub fn conv2d_source(
    x: Precision,
    w: Precision,
    y: Precision,
    bx: u32,
    bs: u32,
    epilogue: EpilogueDecl,
) -> KernelSource {
    KernelSource {
        consts: vec![("BX", bx), ("BS", bs)],
        epilogue,
        ..KernelSource::new(
            "conv2d",
            vec![
                read("x", x),
                read("w", w),
                read("bias", Precision::F32),
                write("y", y),
            ],
        )
    }
}

/// Filter `[co, kh, kw, ci]` to `[out_slice][ky][kx][in_slice][in_lane]` vec4 (output lanes),
/// zero-padded. Shared with TRANSPOSE_CONV.
pub fn transform_filter(f: &[f32], co: usize, kh: usize, kw: usize, ci: usize) -> Vec<f32> {
    let (os, is) = (co.div_ceil(4), ci.div_ceil(4));
    let mut out = vec![0.0; os * kh * kw * is * 16];
    for o in 0..co {
        for ky in 0..kh {
            for kx in 0..kw {
                for i in 0..ci {
                    let at = ((((o / 4 * kh + ky) * kw + kx) * is + i / 4) * 4 + i % 4) * 4 + o % 4;
                    out[at] = f[((o * kh + ky) * kw + kx) * ci + i];
                }
            }
        }
    }
    out
}

/// Picks the largest block whose grid still has at least `min_threads` threads.
pub fn choose_block(items: impl Fn(u32, u32) -> usize, min_threads: usize) -> (u32, u32) {
    for (a, b) in [(4, 2), (4, 1), (2, 1)] {
        if items(a, b) >= min_threads {
            return (a, b);
        }
    }
    (1, 1)
}

/// Builds a CONV_2D.
pub fn build(ctx: &mut OpContext, a: &ConvAttrs) -> Result<Vec<Dispatch>, String> {
    let x = ctx.in_geom(0)?;
    let fshape = ctx.in_shape(1)?.to_vec();
    let [co, kh, kw, ci] = fshape[..] else {
        return Err(format!("filter shape {fshape:?} is not 4-D"));
    };
    if ci != x.c {
        return Err(format!("filter expects {ci} channels, input has {}", x.c));
    }
    let y = ctx.out_geom()?;
    let w = transform_filter(ctx.constant(1)?, co, kh, kw, ci);
    let wp = ctx.weights;
    let w_op = ctx.add_const("conv weights".into(), wp.encode(&w));
    let bias = ctx.bias(2, co)?;
    let x_op = super::Operand::Tensor(ctx.op.inputs[0]);
    let xp = ctx.precisions[ctx.op.inputs[0].index()];
    let yp = ctx.out_precision()?;
    let (ep, ep_ops) = ctx.epilogue()?;
    let mut operands = vec![x_op, w_op, bias, super::Operand::Tensor(ctx.output()?)];
    operands.extend(ep_ops);
    let (is, os) = (x.slices(), y.slices());
    let pointwise = kh == 1
        && kw == 1
        && a.stride == [1, 1]
        && a.pad == heimdall_ir::Pad2d::default()
        && (x.h, x.w) == (y.h, y.w);
    let min = ctx.min_threads;
    if pointwise {
        let pixels = y.h * y.w;
        let (bp, bs) = choose_block(
            |p, s| pixels.div_ceil(p as usize) * os.div_ceil(s as usize),
            min,
        );
        let pixel_blocks = pixels.div_ceil(bp as usize);
        let total = pixel_blocks * os.div_ceil(bs as usize);
        let p = GpuConv1x1Params {
            pixels: u32_of(pixels)?,
            in_slices: u32_of(is)?,
            out_slices: u32_of(os)?,
            out_channels: u32_of(y.c)?,
            pixel_blocks: u32_of(pixel_blocks)?,
            total: u32_of(total)?,
            _pad: [0; 2],
        };
        return Ok(vec![Dispatch {
            source: conv1x1_source(xp, wp, yp, bp, bs, ep),
            params: bytemuck::bytes_of(&p).to_vec(),
            operands,
            workgroups: groups_for(total),
        }]);
    }
    let (bx, bs) = choose_block(
        |c, s| y.w.div_ceil(c as usize) * y.h * os.div_ceil(s as usize),
        min,
    );
    let col_blocks = y.w.div_ceil(bx as usize);
    let total = col_blocks * y.h * os.div_ceil(bs as usize);
    let p = GpuConv2dParams {
        in_h: u32_of(x.h)?,
        in_w: u32_of(x.w)?,
        in_slices: u32_of(is)?,
        out_h: u32_of(y.h)?,
        out_w: u32_of(y.w)?,
        out_slices: u32_of(os)?,
        out_channels: u32_of(y.c)?,
        k_h: u32_of(kh)?,
        k_w: u32_of(kw)?,
        stride_h: u32_of(a.stride[0])?,
        stride_w: u32_of(a.stride[1])?,
        dil_h: u32_of(a.dilation[0])?,
        dil_w: u32_of(a.dilation[1])?,
        pad_top: u32_of(a.pad.top)?,
        pad_left: u32_of(a.pad.left)?,
        col_blocks: u32_of(col_blocks)?,
        total: u32_of(total)?,
        _pad: [0; 3],
    };
    Ok(vec![Dispatch {
        source: conv2d_source(xp, wp, yp, bx, bs, ep),
        params: bytemuck::bytes_of(&p).to_vec(),
        operands,
        workgroups: groups_for(total),
    }])
}
