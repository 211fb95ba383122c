//! PAD_WITH (ONNX `Pad` with constant, reflect or edge fill): `shaders/pad_with.wgsl`.

use bytemuck::{Pod, Zeroable};
use heimdall_ir::PadMode;

use super::onnx::{batch_one, dims4};
use super::{Dispatch, OpContext, Operand, align4, groups_for, u32_of};
use crate::precision::Precision;
use crate::shaders::{read, write};
use crate::wgsl::KernelSource;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct GpuPadWithParams {
    in_dims: [i32; 4],
    out_dims: [i32; 4],
    before: [i32; 4],
    mode: u32,
    value: f32,
    total: u32,
    _pad: u32,
}

/// Source of the padding kernel (the mode is a parameter).
pub fn source(x: Precision, y: Precision) -> KernelSource {
    KernelSource::new("pad_with", vec![read("x", x), write("y", y)])
}

fn i32s(v: [u32; 4]) -> Result<[i32; 4], String> {
    let one = |x: u32| i32::try_from(x).map_err(|_| format!("size {x} does not fit in i32"));
    Ok([one(v[0])?, one(v[1])?, one(v[2])?, one(v[3])?])
}

/// Builds a PAD_WITH; `pads[d] = [before, after]` per input dimension.
pub fn build(
    ctx: &mut OpContext,
    pads: &[[usize; 2]],
    mode: PadMode,
) -> Result<Vec<Dispatch>, String> {
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
    let (code, value) = match mode {
        PadMode::Constant(v) => (0, v),
        PadMode::Reflect => (1, 0.0),
        PadMode::Edge => (2, 0.0),
    };
    let p = GpuPadWithParams {
        in_dims: i32s(dims4(&shape)?)?,
        out_dims: i32s(dims4(&out_shape)?)?,
        before: {
            let b = align4(&before, 0)?;
            i32s([u32_of(b[0])?, u32_of(b[1])?, u32_of(b[2])?, u32_of(b[3])?])?
        },
        mode: code,
        value,
        total: u32_of(total)?,
        _pad: 0,
    };
    Ok(vec![Dispatch {
        source: source(xp, ctx.out_precision()?),
        params: bytemuck::bytes_of(&p).to_vec(),
        operands: vec![x_op, Operand::Tensor(ctx.output()?)],
        workgroups: groups_for(total),
    }])
}
