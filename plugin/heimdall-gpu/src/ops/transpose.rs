//! TRANSPOSE (ONNX `Transpose`): `shaders/transpose.wgsl`, a per-lane gather through the
//! permutation.

use crate::dispatch::{Dispatch, OpContext, Operand, batch_one, dims4, groups_for, u32_of};
use crate::params::shader_params;
use crate::precision::Precision;
use crate::wgsl::{BindingDecl, KernelSource};

shader_params! {
    /// Uniform parameters of `shaders/transpose.wgsl`.
    struct GpuTransposeParams {
        out_dims: [u32; 4],
        perm: [u32; 4],
        in_h: u32,
        in_w: u32,
        y_h: u32,
        y_w: u32,
        y_c: u32,
        total: u32,
    }
}

/// Source of the transpose kernel.
pub fn source(x: Precision, y: Precision) -> KernelSource {
    KernelSource::new(
        "transpose",
        vec![BindingDecl::read("x", x), BindingDecl::write("y", y)],
    )
    .with_params::<GpuTransposeParams>()
}

/// Builds a TRANSPOSE with `perm` (output axis `i` is input axis `perm[i]`).
pub fn build(ctx: &mut OpContext, perm: &[usize]) -> Result<Vec<Dispatch>, String> {
    let shape = ctx.in_shape(0)?.to_vec();
    let out_shape = ctx.graph.tensor(ctx.output()?).shape.clone();
    batch_one(&shape)?;
    batch_one(&out_shape)?;
    let rank = shape.len();
    let mut seen = [false; 4];
    if perm.len() != rank
        || perm
            .iter()
            .any(|&p| p >= rank || std::mem::replace(&mut seen[p], true))
    {
        return Err(format!("permutation {perm:?} of rank {rank}"));
    }
    let off = 4 - rank;
    let mut perm4 = [0u32, 1, 2, 3];
    for (i, &p) in perm.iter().enumerate() {
        perm4[off + i] = u32_of(off + p)?;
    }
    let x = ctx.in_geom(0)?;
    let y = ctx.out_geom()?;
    let (x_op, xp, _) = ctx.input_operand(0)?;
    let total = y.vec4s();
    let p = GpuTransposeParams {
        out_dims: dims4(&out_shape)?,
        perm: perm4,
        in_h: u32_of(x.h)?,
        in_w: u32_of(x.w)?,
        y_h: u32_of(y.h)?,
        y_w: u32_of(y.w)?,
        y_c: u32_of(y.c)?,
        total: u32_of(total)?,
    };
    Ok(vec![Dispatch::new(
        source(xp, ctx.out_precision()?),
        &p,
        vec![x_op, Operand::Tensor(ctx.output()?)],
        groups_for(total),
    )])
}

/// Every variant in precision `p`, for the catalogue.
pub fn catalogue(p: Precision) -> Vec<KernelSource> {
    vec![source(p, p)]
}
