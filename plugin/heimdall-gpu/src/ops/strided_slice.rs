//! STRIDED_SLICE on the GPU: `shaders/gather.wgsl` with the resolved begin, stride and count.

use heimdall_ir::StridedSliceAttrs;

use crate::dispatch::{Dispatch, OpContext, align4};
use crate::kernels::gather::{Map, dispatch};

/// Builds a STRIDED_SLICE (resolved begin, stride and count per axis).
pub fn build(ctx: &mut OpContext, a: &StridedSliceAttrs) -> Result<Vec<Dispatch>, String> {
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
