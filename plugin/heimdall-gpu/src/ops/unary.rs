//! Element-wise functions of one tensor on the GPU: the TFLite activations are the elementwise
//! kernel with the activation in its epilogue (`crate::kernels::elementwise`); the ONNX math
//! functions are the nary kernel (`crate::kernels::nary`).

use heimdall_ir::UnaryKind;

use crate::dispatch::{Dispatch, OpContext};
use crate::kernels::elementwise::{self, ElementwiseOp};
use crate::kernels::nary::{self, NaryFn};

/// Builds an element-wise function `f`.
pub fn build(ctx: &mut OpContext, f: UnaryKind) -> Result<Vec<Dispatch>, String> {
    if f.fusable() {
        elementwise::build(ctx, ElementwiseOp::Activation(f))
    } else {
        nary::build(ctx, NaryFn::Unary(f))
    }
}
