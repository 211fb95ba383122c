//! DEPTHWISE_CONV_2D: `x [1,H,W,Ci]`, `filter [1,kh,kw,Ci*multiplier]`, optional bias; each
//! input channel is convolved with its own `multiplier` filters.

use super::conv::{ConvAttrs, check_bias, window};
use crate::shape::{OpShapes, need_rank};

/// Output shape of a DEPTHWISE_CONV_2D.
pub fn infer(a: &ConvAttrs, multiplier: usize, io: &OpShapes) -> Result<Vec<usize>, String> {
    let (x, f) = (io.input(0)?, io.input(1)?);
    need_rank(x, 4, "input")?;
    need_rank(f, 4, "filter")?;
    if f[3] != x[3] * multiplier {
        return Err(format!(
            "filter {f:?} does not match {} channels x multiplier {multiplier}",
            x[3]
        ));
    }
    check_bias(io, f[3])?;
    let [oh, ow] = window(x, f, a)?;
    Ok(vec![x[0], oh, ow, f[3]])
}

/// Multiply-adds of a DEPTHWISE_CONV_2D: one `kh x kw` window per output value.
pub fn macs(io: &OpShapes) -> u64 {
    let f = io.input_or_empty(1);
    io.output_numel() * (f.get(1).copied().unwrap_or(0) * f.get(2).copied().unwrap_or(0)) as u64
}
