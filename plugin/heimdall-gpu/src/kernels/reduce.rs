//! REDUCE_* (ONNX `ReduceSum`, `ReduceMax`, ...): `shaders/reduce.wgsl`, one thread per output
//! vec4 folding the reduced box of each lane.

use bytemuck::{Pod, Zeroable};
use heimdall_ir::ReduceKind;

use super::onnx::{batch_one, dims4};
use super::{Dispatch, OpContext, Operand, groups_for, u32_of};
use crate::precision::Precision;
use crate::shaders::{read, write};
use crate::wgsl::KernelSource;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct GpuReduceParams {
    out_dims: [u32; 4],
    red_dims: [u32; 4],
    in_h: u32,
    in_w: u32,
    y_h: u32,
    y_w: u32,
    y_c: u32,
    total: u32,
    _pad: [u32; 2],
}

/// The kernel's `FOLD` code of a reduction.
fn fold_code(k: ReduceKind) -> u32 {
    match k {
        ReduceKind::Mean => unreachable!("MEAN runs as an average pool"),
        ReduceKind::Sum => 0,
        ReduceKind::Max => 1,
        ReduceKind::Min => 2,
        ReduceKind::Prod => 3,
        ReduceKind::SumSquare => 4,
        ReduceKind::L1 => 5,
        ReduceKind::L2 => 6,
        ReduceKind::LogSum => 7,
        ReduceKind::LogSumExp => 8,
    }
}

/// Source of the reduction kernel for `kind`.
pub fn source(x: Precision, y: Precision, kind: ReduceKind) -> KernelSource {
    KernelSource {
        consts: vec![("FOLD", fold_code(kind))],
        ..KernelSource::new("reduce", vec![read("x", x), write("y", y)])
    }
}

/// Builds a reduction of input 0 over `axes` (of the input's rank).
pub fn build(
    ctx: &mut OpContext,
    kind: ReduceKind,
    axes: &[usize],
) -> Result<Vec<Dispatch>, String> {
    let shape = ctx.in_shape(0)?.to_vec();
    batch_one(&shape)?;
    let off = 4 - shape.len();
    let d = dims4(&shape)?;
    let mut out_dims = d;
    let mut red_dims = [1u32; 4];
    for &a in axes {
        if a >= shape.len() {
            return Err(format!("axis {a} of rank {}", shape.len()));
        }
        out_dims[off + a] = 1;
        red_dims[off + a] = d[off + a];
    }
    let x = ctx.in_geom(0)?;
    let y = ctx.out_geom()?;
    if y.h * y.w * y.c != out_dims.iter().map(|&v| v as usize).product::<usize>() {
        return Err(format!("reduction of {shape:?} over {axes:?} into {y:?}"));
    }
    let (x_op, xp, _) = ctx.input_operand(0)?;
    let total = y.vec4s();
    let p = GpuReduceParams {
        out_dims,
        red_dims,
        in_h: u32_of(x.h)?,
        in_w: u32_of(x.w)?,
        y_h: u32_of(y.h)?,
        y_w: u32_of(y.w)?,
        y_c: u32_of(y.c)?,
        total: u32_of(total)?,
        _pad: [0; 2],
    };
    Ok(vec![Dispatch {
        source: source(xp, ctx.out_precision()?, kind),
        params: bytemuck::bytes_of(&p).to_vec(),
        operands: vec![x_op, Operand::Tensor(ctx.output()?)],
        workgroups: groups_for(total),
    }])
}
