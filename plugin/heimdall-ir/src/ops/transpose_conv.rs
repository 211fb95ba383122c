//! TRANSPOSE_CONV: `x [1,H,W,Ci]`, `filter [Co,kh,kw,Ci]`, optional bias; every input pixel
//! scatters a `kh x kw x Co` window into the full `(H-1)*s+kh` output, of which `attrs.pad`
//! is cropped.

use super::conv::{ConvAttrs, check_bias};
use crate::shape::{OpShapes, need_rank};

/// Output shape of a TRANSPOSE_CONV.
pub fn infer(a: &ConvAttrs, io: &OpShapes) -> Result<Vec<usize>, String> {
    let (x, f) = (io.input(0)?, io.input(1)?);
    need_rank(x, 4, "input")?;
    need_rank(f, 4, "filter")?;
    if f[3] != x[3] {
        return Err(format!(
            "filter {f:?} expects {} input channels, input has {}",
            f[3], x[3]
        ));
    }
    check_bias(io, f[0])?;
    let full_h = (x[1] - 1) * a.stride[0] + f[1];
    let full_w = (x[2] - 1) * a.stride[1] + f[2];
    let oh = full_h
        .checked_sub(a.pad.top + a.pad.bottom)
        .ok_or("cropping larger than the output")?;
    let ow = full_w
        .checked_sub(a.pad.left + a.pad.right)
        .ok_or("cropping larger than the output")?;
    Ok(vec![x[0], oh, ow, f[0]])
}

/// Multiply-adds of a TRANSPOSE_CONV: every input pixel scatters a `kh x kw x Co` window.
pub fn macs(io: &OpShapes) -> u64 {
    let f = io.input_or_empty(1);
    io.input_numel(0)
        * (f.first().copied().unwrap_or(0)
            * f.get(1).copied().unwrap_or(0)
            * f.get(2).copied().unwrap_or(0)) as u64
}
