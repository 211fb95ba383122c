//! SOFTMAX and LOG_SOFTMAX along one axis: `m = max`, `s = sum(exp(x - m))`, then
//! `exp(x - m) / s` or `(x - m) - ln(s)`.

use crate::shape::OpShapes;

/// Output shape of a softmax along `axis`: the input's.
pub fn infer(axis: usize, io: &OpShapes) -> Result<Vec<usize>, String> {
    let x = io.input(0)?;
    if axis >= x.len() {
        return Err(format!("axis {axis} out of range for {x:?}"));
    }
    Ok(x.to_vec())
}

/// Multiply-adds of a softmax: two per value (the exponentials and the normalisation).
pub fn macs(io: &OpShapes) -> u64 {
    2 * io.output_numel()
}
