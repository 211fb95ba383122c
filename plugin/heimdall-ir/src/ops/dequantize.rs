//! DEQUANTIZE: an fp16 constant converted to f32 (TFLite's fp16 weights); the load-time passes
//! fold it into the constant.

use crate::shape::OpShapes;

/// Output shape of a dequantize: the input's.
pub fn infer(io: &OpShapes) -> Result<Vec<usize>, String> {
    Ok(io.input(0)?.to_vec())
}
