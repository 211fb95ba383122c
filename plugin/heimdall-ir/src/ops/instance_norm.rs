//! INSTANCE_NORM (ONNX `InstanceNormalization`) over H and W of `x [1,H,W,C]`:
//! `(x - mean) / sqrt(var + epsilon)`, times an optional `scale [C]` (input 1), plus an optional
//! `bias [C]` (input 2); scale and bias may be computed at run time.

use crate::shape::OpShapes;

/// Output shape of an instance normalisation: the input's.
pub fn infer(io: &OpShapes) -> Result<Vec<usize>, String> {
    let x = io.input(0)?;
    if x.len() < 3 {
        return Err(format!("input must have rank 3 or 4, has shape {x:?}"));
    }
    let c = x[x.len() - 1];
    for p in &io.inputs[1..] {
        if p.iter().product::<usize>() != c {
            return Err(format!("scale/bias {p:?} does not have {c} values"));
        }
    }
    Ok(x.to_vec())
}

/// Multiply-adds of an instance normalisation: two passes for the statistics, one for the
/// normalisation.
pub fn macs(io: &OpShapes) -> u64 {
    2 * io.output_numel()
}
