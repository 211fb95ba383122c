//! MAX_POOL_2D and AVERAGE_POOL_2D over `x [1,H,W,C]` (NHWC); padded positions are skipped.

use serde::Serialize;

use super::conv::Pad2d;
use crate::shape::{OpShapes, need_rank, window_out};

/// Attributes of a pooling window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PoolAttrs {
    /// `[filter_h, filter_w]`.
    pub filter: [usize; 2],
    /// `[stride_h, stride_w]`.
    pub stride: [usize; 2],
    /// Padding; padded positions are skipped (not counted in averages).
    pub pad: Pad2d,
}

/// Output shape of a pool.
pub fn infer(p: &PoolAttrs, io: &OpShapes) -> Result<Vec<usize>, String> {
    let x = io.input(0)?;
    need_rank(x, 4, "input")?;
    let oh = window_out(x[1], p.filter[0], p.stride[0], 1, p.pad.top + p.pad.bottom)
        .ok_or("window larger than the input")?;
    let ow = window_out(x[2], p.filter[1], p.stride[1], 1, p.pad.left + p.pad.right)
        .ok_or("window larger than the input")?;
    Ok(vec![x[0], oh, ow, x[3]])
}

/// Multiply-adds of a pool, counting a comparison or an addition as half of one.
pub fn macs(p: &PoolAttrs, io: &OpShapes) -> u64 {
    io.output_numel() * (p.filter[0] * p.filter[1]) as u64 / 2
}
