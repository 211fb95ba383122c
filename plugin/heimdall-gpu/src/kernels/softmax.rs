//! SOFTMAX and LOG_SOFTMAX along one axis: `shaders/softmax.wgsl`.

use bytemuck::{Pod, Zeroable};

use super::onnx::{batch_one, dims4};
use super::{Dispatch, OpContext, Operand, groups_for, u32_of};
use crate::precision::Precision;
use crate::shaders::{read, write};
use crate::wgsl::KernelSource;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct GpuSoftmaxParams {
    dims: [u32; 4],
    axis: u32,
    h: u32,
    w: u32,
    c: u32,
    total: u32,
    _pad: [u32; 3],
}

/// Source of the softmax kernel (`log`: log-softmax).
pub fn source(x: Precision, y: Precision, log: bool) -> KernelSource {
    KernelSource {
        consts: vec![("LOG", log as u32)],
        ..KernelSource::new("softmax", vec![read("x", x), write("y", y)])
    }
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
        _pad: [0; 3],
    };
    Ok(vec![Dispatch {
        source: source(xp, ctx.out_precision()?, log),
        params: bytemuck::bytes_of(&p).to_vec(),
        operands: vec![x_op, Operand::Tensor(ctx.output()?)],
        workgroups: groups_for(total),
    }])
}
