//! MediaPipe's `TransformTensorBilinear` (version 2) on the GPU, with the semantics of the CPU
//! reference: `shaders/transform_tensor_bilinear.wgsl`, one thread per output vec4. The matrix
//! input is read in f32 (or in the precision of a tensor produced elsewhere).

use crate::dispatch::{Dispatch, OpContext, Operand, groups_for, u32_of};
use crate::params::shader_params;
use crate::precision::Precision;
use crate::wgsl::{BindingDecl, KernelSource};

shader_params! {
    /// Uniform parameters of `shaders/transform_tensor_bilinear.wgsl`.
    struct GpuTransformTensorParams {
        in_h: u32,
        in_w: u32,
        out_h: u32,
        out_w: u32,
        total: u32,
        /// 1.0 and 0.0, unknown to the compiler (see the shader's `opaque`).
        one: f32,
        zero: f32,
    }
}

/// Source of the bilinear tensor-warp kernel.
pub fn source(x: Precision, m: Precision, y: Precision) -> KernelSource {
    KernelSource::new(
        "transform_tensor_bilinear",
        vec![
            BindingDecl::read("x", x),
            BindingDecl::read("m", m),
            BindingDecl::write("y", y),
        ],
    )
    .with_params::<GpuTransformTensorParams>()
}

/// Builds a `TransformTensorBilinear` (the output size comes from the output's shape).
pub fn build(ctx: &mut OpContext) -> Result<Vec<Dispatch>, String> {
    let x = ctx.in_geom(0)?;
    let y = ctx.out_geom()?;
    if ctx.in_shape(0)?.len() != 4 || x.c != y.c || x.h == 0 || x.w == 0 {
        return Err(format!("transform of {x:?} to {y:?}"));
    }
    let (x_op, xp, _) = ctx.input_operand(0)?;
    let (m_op, mp) = ctx.matrix_operand(1)?;
    let total = y.vec4s();
    let p = GpuTransformTensorParams {
        in_h: u32_of(x.h)?,
        in_w: u32_of(x.w)?,
        out_h: u32_of(y.h)?,
        out_w: u32_of(y.w)?,
        total: u32_of(total)?,
        one: 1.0,
        zero: 0.0,
    };
    Ok(vec![Dispatch::new(
        source(xp, mp, ctx.out_precision()?),
        &p,
        vec![x_op, m_op, Operand::Tensor(ctx.output()?)],
        groups_for(total),
    )])
}

/// Every variant in precision `p` (matrices in f32, and in `p` for a matrix produced
/// elsewhere), for the catalogue.
pub fn catalogue(p: Precision) -> Vec<KernelSource> {
    [Precision::F32, p].map(|m| source(p, m, p)).to_vec()
}
