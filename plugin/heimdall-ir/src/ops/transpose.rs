//! TRANSPOSE (ONNX `Transpose`): output axis `i` is input axis `perm[i]`.

use crate::shape::OpShapes;

/// Output shape of a transpose.
pub fn infer(perm: &[usize], io: &OpShapes) -> Result<Vec<usize>, String> {
    shape(io.input(0)?, perm)
}

/// The shape of `x` permuted by `perm`, or an error when `perm` is not a permutation of its
/// axes.
pub fn shape(x: &[usize], perm: &[usize]) -> Result<Vec<usize>, String> {
    let mut seen = vec![false; x.len()];
    if perm.len() != x.len() {
        return Err(format!("permutation {perm:?} for rank {}", x.len()));
    }
    for &p in perm {
        if p >= x.len() || std::mem::replace(&mut seen[p], true) {
            return Err(format!("{perm:?} is not a permutation"));
        }
    }
    Ok(perm.iter().map(|&p| x[p]).collect())
}
