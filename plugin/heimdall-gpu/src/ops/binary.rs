//! Element-wise functions of two tensors on the GPU: ADD, SUB, MUL (with their fused epilogue)
//! and PRELU are the elementwise kernel (`crate::kernels::elementwise`); division, power,
//! extrema and comparisons are the nary kernel (`crate::kernels::nary`).

use heimdall_ir::BinaryFn;

use crate::dispatch::{Dispatch, OpContext};
use crate::kernels::elementwise::{self, ElementwiseOp};
use crate::kernels::nary::{self, NaryFn};

/// Builds a binary function `f`.
pub fn build(ctx: &mut OpContext, f: BinaryFn) -> Result<Vec<Dispatch>, String> {
    let op = match f {
        BinaryFn::Add => ElementwiseOp::Add,
        BinaryFn::Sub => ElementwiseOp::Sub,
        BinaryFn::Mul => ElementwiseOp::Mul,
        BinaryFn::Prelu => ElementwiseOp::Prelu,
        _ => return nary::build(ctx, NaryFn::Binary(f)),
    };
    elementwise::build(ctx, op)
}
