//! DENSIFY: a sparse constant expanded to dense (TFLite sparsity, see [`crate::sparse`]); the
//! load-time passes fold it into the constant.

use crate::shape::OpShapes;

/// Output shape of a densify: the input's (dense) shape.
pub fn infer(io: &OpShapes) -> Result<Vec<usize>, String> {
    Ok(io.input(0)?.to_vec())
}
