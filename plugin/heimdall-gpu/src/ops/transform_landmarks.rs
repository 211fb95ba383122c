//! MediaPipe's `TransformLandmarks` (version 2) on the GPU, with the semantics of the CPU
//! reference: `shaders/transform_landmarks.wgsl`, one thread per landmark. The matrix input is
//! read in f32 (or in the precision of a tensor produced elsewhere).

use crate::dispatch::{Dispatch, OpContext, Operand, groups_for, u32_of};
use crate::params::shader_params;
use crate::precision::Precision;
use crate::wgsl::{BindingDecl, KernelSource};

shader_params! {
    /// Uniform parameters of `shaders/transform_landmarks.wgsl`.
    struct GpuTransformLandmarksParams {
        count: u32,
        /// 1.0 and 0.0, unknown to the compiler (see the shader's `opaque`).
        one: f32,
        zero: f32,
    }
}

/// Source of the landmark-transform kernel.
pub fn source(x: Precision, m: Precision, y: Precision) -> KernelSource {
    KernelSource::new(
        "transform_landmarks",
        vec![
            BindingDecl::read("x", x),
            BindingDecl::read("m", m),
            BindingDecl::write("y", y),
        ],
    )
    .with_params::<GpuTransformLandmarksParams>()
}

/// Builds a `TransformLandmarks`.
pub fn build(ctx: &mut OpContext) -> Result<Vec<Dispatch>, String> {
    let shape = ctx.in_shape(0)?;
    let [1, n, 2 | 3] = *shape else {
        return Err(format!("landmarks must be [1, N, 2|3], got {shape:?}"));
    };
    if ctx.out_geom()? != ctx.in_geom(0)? {
        return Err(format!(
            "output {:?} differs from the landmarks {shape:?}",
            ctx.out_geom()?
        ));
    }
    let (x_op, xp, _) = ctx.input_operand(0)?;
    let (m_op, mp) = ctx.matrix_operand(1)?;
    let p = GpuTransformLandmarksParams {
        count: u32_of(n)?,
        one: 1.0,
        zero: 0.0,
    };
    Ok(vec![Dispatch::new(
        source(xp, mp, ctx.out_precision()?),
        &p,
        vec![x_op, m_op, Operand::Tensor(ctx.output()?)],
        groups_for(n),
    )])
}

/// Every variant in precision `p` (matrices in f32, and in `p` for a matrix produced
/// elsewhere), for the catalogue.
pub fn catalogue(p: Precision) -> Vec<KernelSource> {
    [Precision::F32, p].map(|m| source(p, m, p)).to_vec()
}
