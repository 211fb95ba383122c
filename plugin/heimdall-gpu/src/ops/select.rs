//! SELECT (ONNX `Where`) on the GPU: the nary kernel (`crate::kernels::nary`) over three
//! broadcast operands.

use crate::dispatch::{Dispatch, OpContext};
use crate::kernels::nary::{self, NaryFn};

/// Builds a SELECT.
pub fn build(ctx: &mut OpContext) -> Result<Vec<Dispatch>, String> {
    nary::build(ctx, NaryFn::Select)
}
