//! RESHAPE on the GPU: a copy through `shaders/gather.wgsl` (the output's flat index decomposed
//! by the input's shape), when the model's memory plan does not alias the output to the input
//! (then it has no dispatch at all, see `crate::aliases`).

use heimdall_ir::shape::as_nhwc;

use crate::dispatch::{Dispatch, OpContext};
use crate::kernels::gather::{Map, dispatch};

/// Builds a RESHAPE: the output's flat index decomposed by the input's shape.
pub fn build(ctx: &mut OpContext) -> Result<Vec<Dispatch>, String> {
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
