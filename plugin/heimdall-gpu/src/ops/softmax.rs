//! SOFTMAX and LOG_SOFTMAX along one axis: `shaders/softmax.wgsl`.

use crate::dispatch::{Dispatch, OpContext, Operand, batch_one, dims4, groups_for, u32_of};
use crate::params::shader_params;
use crate::precision::Precision;
use crate::wgsl::{BindingDecl, KernelSource};

shader_params! {
    /// Uniform parameters of `shaders/softmax.wgsl`.
    struct GpuSoftmaxParams {
        dims: [u32; 4],
        axis: u32,
        h: u32,
        w: u32,
        c: u32,
        total: u32,
    }
}

/// Source of the softmax kernel (`log`: log-softmax).
pub fn source(x: Precision, y: Precision, log: bool) -> KernelSource {
    KernelSource {
        consts: vec![("LOG", log as u32)],
        ..KernelSource::new(
            "softmax",
            vec![BindingDecl::read("x", x), BindingDecl::write("y", y)],
        )
    }
    .with_params::<GpuSoftmaxParams>()
}

/// Builds a softmax of input 0 along `axis` (of the input's rank).
pub fn build(ctx: &mut OpContext, axis: usize, log: bool) -> Result<Vec<Dispatch>, String> {
    let shape = ctx.in_shape(0)?.to_vec();
    batch_one(&shape)?;
    if axis >= shape.len() {
        return Err(format!("axis {axis} of rank {}", shape.len()));
    }
    let axis4 = axis + 4 - shape.len();
    let x = ctx.in_geom(0)?;
    let (x_op, xp, _) = ctx.input_operand(0)?;
    let total = x.vec4s();
    let p = GpuSoftmaxParams {
        dims: dims4(&shape)?,
        axis: u32_of(axis4)?,
        h: u32_of(x.h)?,
        w: u32_of(x.w)?,
        c: u32_of(x.c)?,
        total: u32_of(total)?,
    };
    Ok(vec![Dispatch::new(
        source(xp, ctx.out_precision()?, log),
        &p,
        vec![x_op, Operand::Tensor(ctx.output()?)],
        groups_for(total),
    )])
}

/// Both variants (softmax, log-softmax) in precision `p`, for the catalogue.
pub fn catalogue(p: Precision) -> Vec<KernelSource> {
    [false, true].map(|log| source(p, p, log)).to_vec()
}
