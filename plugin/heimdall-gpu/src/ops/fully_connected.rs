//! FULLY_CONNECTED (batch 1): `shaders/fully_connected.wgsl`, one work group per output slice
//! with a fixed-tree reduction. Weights `[O, I]` are pre-transformed into the input's PHWC4 order
//! (`[out_slice][position][out_lane]` vec4 over input lanes), so the input needs no relayout.

use crate::dispatch::{Dispatch, OpContext, Operand, u32_of};
use crate::params::shader_params;
use crate::precision::Precision;
use crate::wgsl::{BindingDecl, EpilogueDecl, KernelSource};

shader_params! {
    /// Uniform parameters of `shaders/fully_connected.wgsl`.
    struct GpuFullyConnectedParams {
        positions: u32,
        out_slices: u32,
        out_channels: u32,
    }
}

/// Source of the fully connected kernel.
pub fn source(x: Precision, y: Precision, epilogue: EpilogueDecl) -> KernelSource {
    KernelSource {
        epilogue,
        ..KernelSource::new(
            "fully_connected",
            vec![
                BindingDecl::read("x", x),
                BindingDecl::read("w", x),
                BindingDecl::read("bias", Precision::F32),
                BindingDecl::write("y", y),
            ],
        )
    }
    .with_params::<GpuFullyConnectedParams>()
}

/// Builds a FULLY_CONNECTED.
pub fn build(ctx: &mut OpContext) -> Result<Vec<Dispatch>, String> {
    let wshape = ctx.in_shape(1)?.to_vec();
    let [o, i] = wshape[..] else {
        return Err(format!("weights shape {wshape:?} is not 2-D"));
    };
    let weights = ctx.constant(1)?.to_vec();
    build_with(ctx, &weights, o, i)
}

/// Builds the fully connected kernel for `ctx`'s op with weights `[o, i]` (row-major, `i` in
/// the input's NHWC order) and the optional bias at input 2: FULLY_CONNECTED, and a CONV_2D
/// whose window covers its whole input (one output pixel, filter `[o, H, W, C]` = `[o, H*W*C]`).
pub fn build_with(
    ctx: &mut OpContext,
    weights: &[f32],
    o: usize,
    i: usize,
) -> Result<Vec<Dispatch>, String> {
    let x = ctx.in_geom(0)?;
    let y = ctx.out_geom()?;
    if x.h * x.w * x.c != i || y.h * y.w != 1 || y.c != o || weights.len() != o * i {
        return Err(format!(
            "input {:?} / output {:?} with weights [{o}, {i}]: only batch 1 is supported",
            ctx.in_shape(0)?,
            ctx.graph.tensor(ctx.output()?).shape
        ));
    }
    let positions = x.vec4s();
    let os = y.slices();
    let mut w = vec![0.0f32; os * positions * 16];
    for s in 0..x.slices() {
        for yy in 0..x.h {
            for xx in 0..x.w {
                let p = (s * x.h + yy) * x.w + xx;
                for il in 0..4 {
                    let ch = 4 * s + il;
                    if ch >= x.c {
                        continue;
                    }
                    let f = (yy * x.w + xx) * x.c + ch;
                    for out in 0..o {
                        w[(((out / 4) * positions + p) * 4 + out % 4) * 4 + il] =
                            weights[out * i + f];
                    }
                }
            }
        }
    }
    let wp = ctx.weights;
    let w_op = ctx.add_const("fully connected weights".into(), wp.encode(&w));
    let bias = ctx.bias(2, o)?;
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
    let p = GpuFullyConnectedParams {
        positions: u32_of(positions)?,
        out_slices: u32_of(os)?,
        out_channels: u32_of(o)?,
    };
    let mut src = source(xp, yp, ep);
    src.bindings[1].precision = wp;
    Ok(vec![Dispatch::new(src, &p, operands, u32_of(os)?)])
}

/// Every variant in precision `p` with representative epilogues, for the catalogue.
pub fn catalogue(p: Precision) -> Vec<KernelSource> {
    EpilogueDecl::representative(p)
        .map(|ep| source(p, p, ep))
        .to_vec()
}
