//! Block rearrangements of `x [1,H,W,C]` between space and depth: DEPTH_TO_SPACE (TFLite's
//! DCR order, ONNX's DCR or CRD mode) and SPACE_TO_DEPTH.

use serde::Serialize;

use crate::shape::OpShapes;

/// Which input channel a depth-to-space output pixel `(i, j)` of its `b x b` block and output
/// channel `c` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum BlockOrder {
    /// Depth-column-row: channel `(i*b + j)*C + c` (TFLite; ONNX `mode="DCR"`).
    Dcr,
    /// Column-row-depth: channel `c*b*b + i*b + j` (ONNX `mode="CRD"`).
    Crd,
}

/// Output shape of a depth-to-space (`to_depth = false`) or space-to-depth (`true`).
pub fn infer(block: usize, to_depth: bool, io: &OpShapes) -> Result<Vec<usize>, String> {
    let x = io.input(0)?;
    if x.len() != 4 || block == 0 {
        return Err(format!(
            "input {x:?} must have rank 4 and block {block} >= 1"
        ));
    }
    let bb = block * block;
    if to_depth {
        if !x[1].is_multiple_of(block) || !x[2].is_multiple_of(block) {
            return Err(format!("{x:?} not divisible by block {block}"));
        }
        Ok(vec![x[0], x[1] / block, x[2] / block, x[3] * bb])
    } else {
        if !x[3].is_multiple_of(bb) {
            return Err(format!("{} channels not divisible by block {block}²", x[3]));
        }
        Ok(vec![x[0], x[1] * block, x[2] * block, x[3] / bb])
    }
}
