//! SPACE_TO_DEPTH and DEPTH_TO_SPACE_CRD (ONNX `SpaceToDepth`, `DepthToSpace` with
//! `mode="CRD"`): `shaders/space_depth.wgsl`.

use bytemuck::{Pod, Zeroable};

use super::{Dispatch, OpContext, Operand, groups_for, u32_of};
use crate::precision::Precision;
use crate::shaders::{read, write};
use crate::wgsl::KernelSource;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct GpuSpaceDepthParams {
    in_h: u32,
    in_w: u32,
    in_c: u32,
    block: u32,
    out_h: u32,
    out_w: u32,
    out_c: u32,
    total: u32,
}

/// Source of the kernel: `crd` for depth-to-space (CRD), else space-to-depth.
pub fn source(x: Precision, y: Precision, crd: bool) -> KernelSource {
    KernelSource {
        consts: vec![("CRD", crd as u32)],
        ..KernelSource::new("space_depth", vec![read("x", x), write("y", y)])
    }
}

/// Builds a SPACE_TO_DEPTH (`crd = false`) or DEPTH_TO_SPACE_CRD (`crd = true`).
pub fn build(ctx: &mut OpContext, block: usize, crd: bool) -> Result<Vec<Dispatch>, String> {
    let x = ctx.in_geom(0)?;
    let y = ctx.out_geom()?;
    let b = block;
    let ok = b > 0
        && if crd {
            x.c % (b * b) == 0 && y.h == x.h * b && y.w == x.w * b && y.c == x.c / (b * b)
        } else {
            x.h % b == 0 && x.w % b == 0 && y.h == x.h / b && y.w == x.w / b && y.c == x.c * b * b
        };
    if !ok {
        return Err(format!("block {b} from {x:?} to {y:?}"));
    }
    let (x_op, xp, _) = ctx.input_operand(0)?;
    let total = y.vec4s();
    let p = GpuSpaceDepthParams {
        in_h: u32_of(x.h)?,
        in_w: u32_of(x.w)?,
        in_c: u32_of(x.c)?,
        block: u32_of(b)?,
        out_h: u32_of(y.h)?,
        out_w: u32_of(y.w)?,
        out_c: u32_of(y.c)?,
        total: u32_of(total)?,
    };
    Ok(vec![Dispatch {
        source: source(xp, ctx.out_precision()?, crd),
        params: bytemuck::bytes_of(&p).to_vec(),
        operands: vec![x_op, Operand::Tensor(ctx.output()?)],
        workgroups: groups_for(total),
    }])
}
