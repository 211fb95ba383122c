//! SELECT (ONNX `Where`): inputs `cond`, `x`, `y` broadcast together; `x` where `cond != 0`,
//! else `y`.

use super::binary::shape;
use crate::shape::OpShapes;

/// Output shape of a select: the broadcast of its three inputs.
pub fn infer(io: &OpShapes) -> Result<Vec<usize>, String> {
    shape(&shape(io.input(0)?, io.input(1)?)?, io.input(2)?)
}

/// Multiply-adds of a select: half of one per output value.
pub fn macs(io: &OpShapes) -> u64 {
    io.output_numel() / 2
}
