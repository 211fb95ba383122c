//! PAD on the GPU: zero padding (TFLite's PAD) is a copy through `shaders/gather.wgsl`; a
//! constant, reflect or edge fill (ONNX `Pad`) is `shaders/pad.wgsl`.

use heimdall_ir::PadMode;
use heimdall_ir::shape::as_nhwc;

use crate::dispatch::{Dispatch, OpContext, Operand, align4, batch_one, dims4, groups_for, u32_of};
use crate::kernels::gather::{Map, dispatch};
use crate::params::shader_params;
use crate::precision::Precision;
use crate::wgsl::{BindingDecl, KernelSource};

shader_params! {
    /// Uniform parameters of `shaders/pad.wgsl`.
    struct GpuPadParams {
        in_dims: [i32; 4],
        out_dims: [i32; 4],
        before: [i32; 4],
        mode: u32,
        value: f32,
        total: u32,
    }
}

/// Source of the padding kernel (the mode is a parameter).
pub fn source(x: Precision, y: Precision) -> KernelSource {
    KernelSource::new(
        "pad",
        vec![BindingDecl::read("x", x), BindingDecl::write("y", y)],
    )
    .with_params::<GpuPadParams>()
}

/// The kernel's `mode` parameter and fill value of a padding mode.
fn mode_code(mode: PadMode) -> (u32, f32) {
    match mode {
        PadMode::Constant(v) => (0, v),
        PadMode::Reflect => (1, 0.0),
        PadMode::Edge => (2, 0.0),
    }
}

/// Every variant in precision `p`, for the catalogue.
pub fn catalogue(p: Precision) -> Vec<KernelSource> {
    vec![source(p, p)]
}

fn i32s(v: [u32; 4]) -> Result<[i32; 4], String> {
    let one = |x: u32| i32::try_from(x).map_err(|_| format!("size {x} does not fit in i32"));
    Ok([one(v[0])?, one(v[1])?, one(v[2])?, one(v[3])?])
}

/// Builds a PAD; `pads[d] = [before, after]` per input dimension.
pub fn build(
    ctx: &mut OpContext,
    pads: &[[usize; 2]],
    mode: PadMode,
) -> Result<Vec<Dispatch>, String> {
    if mode.is_zero() {
        return build_zero(ctx, pads);
    }
    let shape = ctx.in_shape(0)?.to_vec();
    if pads.len() != shape.len() {
        return Err(format!("{} pads for rank {}", pads.len(), shape.len()));
    }
    let out_shape = ctx.graph.tensor(ctx.output()?).shape.clone();
    batch_one(&shape)?;
    batch_one(&out_shape)?;
    if shape.contains(&0) && !matches!(mode, PadMode::Constant(_)) {
        return Err("reflect or edge padding of an empty axis".into());
    }
    let before: Vec<usize> = pads.iter().map(|p| p[0]).collect();
    let (x_op, xp, _) = ctx.input_operand(0)?;
    let y = ctx.out_geom()?;
    let total = y.vec4s();
    let (code, value) = mode_code(mode);
    let p = GpuPadParams {
        in_dims: i32s(dims4(&shape)?)?,
        out_dims: i32s(dims4(&out_shape)?)?,
        before: {
            let b = align4(&before, 0)?;
            i32s([u32_of(b[0])?, u32_of(b[1])?, u32_of(b[2])?, u32_of(b[3])?])?
        },
        mode: code,
        value,
        total: u32_of(total)?,
    };
    Ok(vec![
        Dispatch::new(
            source(xp, ctx.out_precision()?),
            &p,
            vec![x_op, Operand::Tensor(ctx.output()?)],
            groups_for(total),
        )
        .with_vec4_rows(total, y.w),
    ])
}

/// Builds a zero PAD: a copy through `shaders/gather.wgsl`.
fn build_zero(ctx: &mut OpContext, pads: &[[usize; 2]]) -> Result<Vec<Dispatch>, String> {
    let before: Vec<i64> = pads.iter().map(|p| p[0] as i64).collect();
    let out = as_nhwc(&ctx.graph.tensor(ctx.output()?).shape);
    let m = Map {
        dims: out,
        lo: align4(&before, 0)?,
        count: as_nhwc(ctx.in_shape(0)?),
        begin: [0; 4],
        stride: [1; 4],
    };
    let y = ctx.out_geom()?;
    Ok(vec![
        dispatch(ctx, 0, m, false)?.with_vec4_rows(y.vec4s(), y.w),
    ])
}
