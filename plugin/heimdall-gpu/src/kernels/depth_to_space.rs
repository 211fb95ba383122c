//! DEPTH_TO_SPACE (DCR): `shaders/depth_to_space.wgsl`, one thread per output vec4.

use bytemuck::{Pod, Zeroable};

use super::{Dispatch, OpContext, Operand, groups_for, u32_of};
use crate::precision::Precision;
use crate::shaders::{read, write};
use crate::wgsl::KernelSource;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct GpuDepthToSpaceParams {
    in_h: u32,
    in_w: u32,
    out_h: u32,
    out_w: u32,
    out_c: u32,
    block: u32,
    total: u32,
    _pad: u32,
}

/// Source of the depth-to-space kernel.
pub fn source(x: Precision, y: Precision) -> KernelSource {
    KernelSource::new("depth_to_space", vec![read("x", x), write("y", y)])
}

/// Builds a DEPTH_TO_SPACE.
pub fn build(ctx: &mut OpContext, block: usize) -> Result<Vec<Dispatch>, String> {
    let x = ctx.in_geom(0)?;
    let y = ctx.out_geom()?;
    if block == 0 || y.h != x.h * block || y.w != x.w * block || y.c * block * block != x.c {
        return Err(format!(
            "depth to space of {x:?} to {y:?} with block {block}"
        ));
    }
    let total = y.vec4s();
    let p = GpuDepthToSpaceParams {
        in_h: u32_of(x.h)?,
        in_w: u32_of(x.w)?,
        out_h: u32_of(y.h)?,
        out_w: u32_of(y.w)?,
        out_c: u32_of(y.c)?,
        block: u32_of(block)?,
        total: u32_of(total)?,
        _pad: 0,
    };
    let xp = ctx.precisions[ctx.op.inputs[0].index()];
    Ok(vec![Dispatch {
        source: source(xp, ctx.out_precision()?),
        params: bytemuck::bytes_of(&p).to_vec(),
        operands: vec![
            Operand::Tensor(ctx.op.inputs[0]),
            Operand::Tensor(ctx.output()?),
        ],
        workgroups: groups_for(total),
    }])
}
