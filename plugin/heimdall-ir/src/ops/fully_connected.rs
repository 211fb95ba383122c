//! FULLY_CONNECTED: `x [..., I]` times `weights [O, I]`, optional `bias [O]`.

use super::conv::check_bias;
use crate::shape::{OpShapes, need_rank};

/// Output shape of a FULLY_CONNECTED: the input's leading dimensions when the declared output
/// keeps them (TFLite `keep_num_dims`), else `[batch, O]`.
pub fn infer(io: &OpShapes) -> Result<Vec<usize>, String> {
    let (x, w) = (io.input(0)?, io.input(1)?);
    need_rank(w, 2, "weights")?;
    let numel: usize = x.iter().product();
    if w[1] == 0 || !numel.is_multiple_of(w[1]) {
        return Err(format!(
            "input {x:?} is not a multiple of the weights' {} inputs",
            w[1]
        ));
    }
    check_bias(io, w[0])?;
    let batch = numel / w[1];
    let out = io.output(0)?;
    Ok(if out.len() == x.len() && out.len() > 2 {
        let mut s = x.to_vec();
        *s.last_mut().expect("rank > 2") = w[0];
        s
    } else {
        vec![batch, w[0]]
    })
}

/// Multiply-adds of a FULLY_CONNECTED: one weight row per output value.
pub fn macs(io: &OpShapes) -> u64 {
    io.output_numel() * io.input_or_empty(1).get(1).copied().unwrap_or(0) as u64
}
