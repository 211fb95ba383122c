//! RESHAPE, PAD, STRIDED_SLICE and CONCATENATION: `shaders/gather.wgsl`, a per-axis affine map
//! from a virtual 4-D index space to the input (see the shader's header). A concatenation is one
//! dispatch per input; every dispatch after the first keeps the elements it does not own.

use bytemuck::{Pod, Zeroable};
use heimdall_ir::StridedSliceAttrs;
use heimdall_ir::shape::as_nhwc;

use super::{Dispatch, OpContext, Operand, align4, groups_for, u32_of};
use crate::precision::Precision;
use crate::shaders::read;
use crate::wgsl::{Access, BindingDecl, KernelSource};

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct GpuGatherParams {
    dims: [u32; 4],
    lo: [i32; 4],
    count: [i32; 4],
    begin: [i32; 4],
    stride: [i32; 4],
    in_h: u32,
    in_w: u32,
    out_h: u32,
    out_w: u32,
    out_c: u32,
    total: u32,
    _pad: [u32; 2],
}

/// Source of the gather kernel; `keep` keeps elements outside the mapped region (the output is
/// read-write either way, so the kernel's `KEEP` branch always type-checks).
pub fn source(x: Precision, y: Precision, keep: bool) -> KernelSource {
    let out = BindingDecl {
        name: "y",
        access: Access::ReadWrite,
        precision: y,
    };
    KernelSource {
        consts: vec![("KEEP", keep as u32)],
        ..KernelSource::new("gather", vec![read("x", x), out])
    }
}

struct Map {
    dims: [usize; 4],
    lo: [i64; 4],
    count: [usize; 4],
    begin: [i64; 4],
    stride: [i64; 4],
}

fn i32_of(v: i64) -> Result<i32, String> {
    i32::try_from(v).map_err(|_| format!("{v} does not fit in 32 bits"))
}

fn dispatch(ctx: &mut OpContext, input: usize, m: Map, keep: bool) -> Result<Dispatch, String> {
    let (x_op, xp, x) = ctx.input_operand(input)?;
    let y = ctx.out_geom()?;
    let total = y.vec4s();
    let p = GpuGatherParams {
        dims: [
            u32_of(m.dims[0])?,
            u32_of(m.dims[1])?,
            u32_of(m.dims[2])?,
            u32_of(m.dims[3])?,
        ],
        lo: [
            i32_of(m.lo[0])?,
            i32_of(m.lo[1])?,
            i32_of(m.lo[2])?,
            i32_of(m.lo[3])?,
        ],
        count: [
            i32_of(m.count[0] as i64)?,
            i32_of(m.count[1] as i64)?,
            i32_of(m.count[2] as i64)?,
            i32_of(m.count[3] as i64)?,
        ],
        begin: [
            i32_of(m.begin[0])?,
            i32_of(m.begin[1])?,
            i32_of(m.begin[2])?,
            i32_of(m.begin[3])?,
        ],
        stride: [
            i32_of(m.stride[0])?,
            i32_of(m.stride[1])?,
            i32_of(m.stride[2])?,
            i32_of(m.stride[3])?,
        ],
        in_h: u32_of(x.h)?,
        in_w: u32_of(x.w)?,
        out_h: u32_of(y.h)?,
        out_w: u32_of(y.w)?,
        out_c: u32_of(y.c)?,
        total: u32_of(total)?,
        _pad: [0; 2],
    };
    if m.dims.contains(&0) {
        return Err("empty tensor".into());
    }
    Ok(Dispatch {
        source: source(xp, ctx.out_precision()?, keep),
        params: bytemuck::bytes_of(&p).to_vec(),
        operands: vec![x_op, Operand::Tensor(ctx.output()?)],
        workgroups: groups_for(total),
    })
}

/// Builds a RESHAPE: the output's flat index decomposed by the input's shape.
pub fn build_reshape(ctx: &mut OpContext) -> Result<Vec<Dispatch>, String> {
    let dims = as_nhwc(ctx.in_shape(0)?);
    let m = Map {
        dims,
        lo: [0; 4],
        count: dims,
        begin: [0; 4],
        stride: [1; 4],
    };
    Ok(vec![dispatch(ctx, 0, m, false)?])
}

/// Builds a PAD (zero padding).
pub fn build_pad(ctx: &mut OpContext, pads: &[[usize; 2]]) -> Result<Vec<Dispatch>, String> {
    let before: Vec<i64> = pads.iter().map(|p| p[0] as i64).collect();
    let out = as_nhwc(&ctx.graph.tensor(ctx.output()?).shape);
    let m = Map {
        dims: out,
        lo: align4(&before, 0)?,
        count: as_nhwc(ctx.in_shape(0)?),
        begin: [0; 4],
        stride: [1; 4],
    };
    Ok(vec![dispatch(ctx, 0, m, false)?])
}

/// Builds a STRIDED_SLICE (resolved begin, stride and count per axis).
pub fn build_strided_slice(
    ctx: &mut OpContext,
    a: &StridedSliceAttrs,
) -> Result<Vec<Dispatch>, String> {
    let count = align4(&a.count, 1)?;
    let m = Map {
        dims: count,
        lo: [0; 4],
        count,
        begin: align4(&a.begin, 0)?,
        stride: align4(&a.stride, 1)?,
    };
    Ok(vec![dispatch(ctx, 0, m, false)?])
}

/// Builds a CONCATENATION: one dispatch per input.
pub fn build_concat(ctx: &mut OpContext, axis: usize) -> Result<Vec<Dispatch>, String> {
    let out_shape = ctx.graph.tensor(ctx.output()?).shape.clone();
    let rank = out_shape.len();
    if axis >= rank {
        return Err(format!("axis {axis} of rank {rank}"));
    }
    let a4 = axis + 4 - rank;
    let dims = as_nhwc(&out_shape);
    let mut offset = 0;
    let mut out = Vec::new();
    for i in 0..ctx.op.inputs.len() {
        let count = as_nhwc(ctx.in_shape(i)?);
        let mut lo = [0i64; 4];
        lo[a4] = offset as i64;
        offset += count[a4];
        let m = Map {
            dims,
            lo,
            count,
            begin: [0; 4],
            stride: [1; 4],
        };
        out.push(dispatch(ctx, i, m, i > 0)?);
    }
    Ok(out)
}
