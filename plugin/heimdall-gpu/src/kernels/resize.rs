//! RESIZE_BILINEAR: `shaders/resize_bilinear.wgsl`, the CPU reference's coordinates and weights.

use bytemuck::{Pod, Zeroable};

use super::{Dispatch, OpContext, Operand, groups_for, u32_of};
use crate::precision::Precision;
use crate::shaders::{read, write};
use crate::wgsl::KernelSource;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct GpuResizeParams {
    in_h: u32,
    in_w: u32,
    out_h: u32,
    out_w: u32,
    channels: u32,
    scale_h: u32,
    scale_w: u32,
    half_pixel: u32,
    total: u32,
    _pad: [u32; 3],
}

/// Source of the resize kernel.
pub fn source(x: Precision, y: Precision) -> KernelSource {
    KernelSource::new("resize_bilinear", vec![read("x", x), write("y", y)])
}

/// TFLite's scale: `(in - 1) / (out - 1)` with aligned corners, else `in / out` (in f32).
fn scale(input: usize, output: usize, align_corners: bool) -> f32 {
    if align_corners && output > 1 {
        (input - 1) as f32 / (output - 1) as f32
    } else {
        input as f32 / output as f32
    }
}

/// Builds a RESIZE_BILINEAR.
pub fn build(
    ctx: &mut OpContext,
    align_corners: bool,
    half_pixel: bool,
) -> Result<Vec<Dispatch>, String> {
    let x = ctx.in_geom(0)?;
    let y = ctx.out_geom()?;
    if x.c != y.c || x.h == 0 || x.w == 0 {
        return Err(format!("resize of {x:?} to {y:?}"));
    }
    let total = y.vec4s();
    let p = GpuResizeParams {
        in_h: u32_of(x.h)?,
        in_w: u32_of(x.w)?,
        out_h: u32_of(y.h)?,
        out_w: u32_of(y.w)?,
        channels: u32_of(y.c)?,
        scale_h: scale(x.h, y.h, align_corners).to_bits(),
        scale_w: scale(x.w, y.w, align_corners).to_bits(),
        half_pixel: half_pixel as u32,
        total: u32_of(total)?,
        _pad: [0; 3],
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
