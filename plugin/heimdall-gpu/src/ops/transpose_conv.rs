//! TRANSPOSE_CONV (and MediaPipe's Convolution2DTransposeBias): `shaders/transpose_conv.wgsl`,
//! a gather over the input pixels whose scattered window covers each output pixel. Weights use
//! the convolution layout (see [`super::conv::transform_filter`]).

use heimdall_ir::ConvAttrs;

use crate::dispatch::{Dispatch, OpContext, Operand, groups_for, u32_of};
use crate::params::shader_params;
use crate::precision::Precision;
use crate::wgsl::{BindingDecl, EpilogueDecl, KernelSource};

shader_params! {
    /// Uniform parameters of `shaders/transpose_conv.wgsl`.
    struct GpuTransposeConvParams {
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
        pad_top: u32,
        pad_left: u32,
        total: u32,
    }
}

/// Source of the transposed convolution kernel.
pub fn source(x: Precision, y: Precision, epilogue: EpilogueDecl) -> KernelSource {
    KernelSource {
        epilogue,
        ..KernelSource::new(
            "transpose_conv",
            vec![
                BindingDecl::read("x", x),
                BindingDecl::read("w", x),
                BindingDecl::read("bias", Precision::F32),
                BindingDecl::write("y", y),
            ],
        )
    }
    .with_params::<GpuTransposeConvParams>()
}

/// Builds a TRANSPOSE_CONV.
pub fn build(ctx: &mut OpContext, a: &ConvAttrs) -> Result<Vec<Dispatch>, String> {
    let x = ctx.in_geom(0)?;
    let y = ctx.out_geom()?;
    let fshape = ctx.in_shape(1)?.to_vec();
    let [co, kh, kw, ci] = fshape[..] else {
        return Err(format!("filter shape {fshape:?} is not 4-D"));
    };
    if ci != x.c || co != y.c || a.dilation != [1, 1] {
        return Err(format!(
            "filter {fshape:?} / dilation {:?} do not fit",
            a.dilation
        ));
    }
    let w = super::conv::transform_filter(ctx.constant(1)?, co, kh, kw, ci);
    let wp = ctx.weights;
    let w_op = ctx.add_const("transpose conv weights".into(), wp.encode(&w));
    let bias = ctx.bias(2, co)?;
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
    let total = y.vec4s();
    let p = GpuTransposeConvParams {
        in_h: u32_of(x.h)?,
        in_w: u32_of(x.w)?,
        in_slices: u32_of(x.slices())?,
        out_h: u32_of(y.h)?,
        out_w: u32_of(y.w)?,
        out_slices: u32_of(y.slices())?,
        out_channels: u32_of(y.c)?,
        k_h: u32_of(kh)?,
        k_w: u32_of(kw)?,
        stride_h: u32_of(a.stride[0])?,
        stride_w: u32_of(a.stride[1])?,
        pad_top: u32_of(a.pad.top)?,
        pad_left: u32_of(a.pad.left)?,
        total: u32_of(total)?,
    };
    let mut src = source(xp, yp, ep);
    src.bindings[1].precision = wp;
    Ok(vec![
        Dispatch::new(src, &p, operands, groups_for(total)).with_vec4_rows(total, y.w),
    ])
}

/// Every variant in precision `p` with representative epilogues, for the catalogue.
pub fn catalogue(p: Precision) -> Vec<KernelSource> {
    EpilogueDecl::representative(p)
        .map(|ep| source(p, p, ep))
        .to_vec()
}
