//! DEPTHWISE_CONV_2D (multiplier 1): `shaders/depthwise.wgsl` with the window (taps, strides,
//! dilations) baked in, several output columns per thread. Weights are pre-transformed to
//! `[ky][kx][slice]` vec4.

use bytemuck::{Pod, Zeroable};
use heimdall_ir::ConvAttrs;

use super::{Dispatch, OpContext, Operand, groups_for, u32_of};
use crate::precision::Precision;
use crate::shaders::{read, write};
use crate::wgsl::{EpilogueDecl, KernelSource};

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct GpuDepthwiseParams {
    in_h: u32,
    in_w: u32,
    slices: u32,
    channels: u32,
    out_h: u32,
    out_w: u32,
    pad_top: u32,
    pad_left: u32,
    col_blocks: u32,
    total: u32,
    _pad: [u32; 2],
}

/// Source of the depthwise kernel for a `k` window with `stride` and `dilation`, `bx` output
/// columns per thread.
pub fn source(
    x: Precision,
    y: Precision,
    k: [u32; 2],
    stride: [u32; 2],
    dilation: [u32; 2],
    bx: u32,
    epilogue: EpilogueDecl,
) -> KernelSource {
    KernelSource {
        consts: vec![
            ("KH", k[0]),
            ("KW", k[1]),
            ("SH", stride[0]),
            ("SW", stride[1]),
            ("DH", dilation[0]),
            ("DW", dilation[1]),
            ("BX", bx),
        ],
        epilogue,
        ..KernelSource::new(
            "depthwise",
            vec![
                read("x", x),
                read("w", x),
                read("bias", Precision::F32),
                write("y", y),
            ],
        )
    }
}

/// Builds a DEPTHWISE_CONV_2D.
pub fn build(
    ctx: &mut OpContext,
    a: &ConvAttrs,
    multiplier: usize,
) -> Result<Vec<Dispatch>, String> {
    let x = ctx.in_geom(0)?;
    let y = ctx.out_geom()?;
    let fshape = ctx.in_shape(1)?.to_vec();
    let [1, kh, kw, c] = fshape[..] else {
        return Err(format!("filter shape {fshape:?} is not [1, kh, kw, c]"));
    };
    if multiplier != 1 || c != x.c || y.c != c {
        return Err(format!(
            "depth multiplier {multiplier} ({} -> {c} channels) is not supported on the GPU",
            x.c
        ));
    }
    if kh > 7 || kw > 7 || a.stride[0] > 4 || a.stride[1] > 4 || a.dilation.iter().any(|&d| d > 4) {
        return Err(format!(
            "window {kh}x{kw} stride {:?} dilation {:?} too large for the depthwise kernel",
            a.stride, a.dilation
        ));
    }
    let s = x.slices();
    let f = ctx.constant(1)?;
    let mut w = vec![0.0f32; kh * kw * s * 4];
    for ky in 0..kh {
        for kx in 0..kw {
            for ch in 0..c {
                w[((ky * kw + kx) * s + ch / 4) * 4 + ch % 4] = f[(ky * kw + kx) * c + ch];
            }
        }
    }
    // Weights share the input's accessor precision choice: the op's weight precision.
    let wp = ctx.weights;
    let w_op = ctx.add_const("depthwise weights".into(), wp.encode(&w));
    let bias = ctx.bias(2, c)?;
    let xp = ctx.precisions[ctx.op.inputs[0].index()];
    let yp = ctx.out_precision()?;
    let (ep, ep_ops) = ctx.epilogue()?;
    let mut operands = vec![
        Operand::Tensor(ctx.op.inputs[0]),
        w_op,
        bias,
        Operand::Tensor(ctx.output()?),
    ];
    operands.extend(ep_ops);
    let bx = [4usize, 2]
        .into_iter()
        .find(|&b| y.w.div_ceil(b) * y.h * s >= ctx.min_threads)
        .unwrap_or(1);
    let col_blocks = y.w.div_ceil(bx);
    let total = col_blocks * y.h * s;
    let p = GpuDepthwiseParams {
        in_h: u32_of(x.h)?,
        in_w: u32_of(x.w)?,
        slices: u32_of(s)?,
        channels: u32_of(c)?,
        out_h: u32_of(y.h)?,
        out_w: u32_of(y.w)?,
        pad_top: u32_of(a.pad.top)?,
        pad_left: u32_of(a.pad.left)?,
        col_blocks: u32_of(col_blocks)?,
        total: u32_of(total)?,
        _pad: [0; 2],
    };
    let mut src = source(
        xp,
        yp,
        [kh as u32, kw as u32],
        [a.stride[0] as u32, a.stride[1] as u32],
        [a.dilation[0] as u32, a.dilation[1] as u32],
        bx as u32,
        ep,
    );
    src.bindings[1].precision = wp;
    Ok(vec![Dispatch {
        source: src,
        params: bytemuck::bytes_of(&p).to_vec(),
        operands,
        workgroups: groups_for(total),
    }])
}
