//! CONCATENATION on the GPU: one `shaders/gather.wgsl` dispatch per input, every dispatch
//! after the first keeping the elements it does not own; concatenations whose inputs can be
//! written straight into their part of the output have no dispatch (see `crate::aliases`).

use heimdall_ir::shape::as_nhwc;

use crate::dispatch::{Dispatch, OpContext};
use crate::kernels::gather::{Map, dispatch};

/// Builds a CONCATENATION: one dispatch per input.
pub fn build(ctx: &mut OpContext, axis: usize) -> Result<Vec<Dispatch>, String> {
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
