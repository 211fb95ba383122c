//! Reductions over a set of axes: MEAN (TFLite `MEAN`, ONNX `ReduceMean`) and the other ONNX
//! `Reduce*` ops.

use serde::Serialize;

use crate::shape::OpShapes;

/// How a reduction combines values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ReduceKind {
    /// Arithmetic mean.
    Mean,
    /// Sum.
    Sum,
    /// Largest value.
    Max,
    /// Smallest value.
    Min,
    /// Product.
    Prod,
    /// Sum of squares.
    SumSquare,
    /// Sum of absolute values.
    L1,
    /// Square root of the sum of squares.
    L2,
    /// `ln(sum(x))`.
    LogSum,
    /// `ln(sum(exp(x)))`.
    LogSumExp,
}

impl ReduceKind {
    /// A short upper-case name.
    pub fn name(&self) -> &'static str {
        match self {
            ReduceKind::Mean => "MEAN",
            ReduceKind::Sum => "REDUCE_SUM",
            ReduceKind::Max => "REDUCE_MAX",
            ReduceKind::Min => "REDUCE_MIN",
            ReduceKind::Prod => "REDUCE_PROD",
            ReduceKind::SumSquare => "REDUCE_SUM_SQUARE",
            ReduceKind::L1 => "REDUCE_L1",
            ReduceKind::L2 => "REDUCE_L2",
            ReduceKind::LogSum => "REDUCE_LOG_SUM",
            ReduceKind::LogSumExp => "REDUCE_LOG_SUM_EXP",
        }
    }
}

/// Output shape of a reduction over `axes` (sorted, unique), keeping them as size 1 or not.
pub fn infer(axes: &[usize], keep_dims: bool, io: &OpShapes) -> Result<Vec<usize>, String> {
    shape(io.input(0)?, axes, keep_dims)
}

/// The shape of `x` reduced over `axes`, or an error when an axis is out of range.
pub fn shape(x: &[usize], axes: &[usize], keep_dims: bool) -> Result<Vec<usize>, String> {
    if axes.iter().any(|&a| a >= x.len()) {
        return Err(format!("axes {axes:?} out of range for {x:?}"));
    }
    Ok(x.iter()
        .enumerate()
        .filter_map(|(d, &n)| match (axes.contains(&d), keep_dims) {
            (false, _) => Some(n),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect())
}

/// Multiply-adds of a reduction: half of one per input value.
pub fn macs(io: &OpShapes) -> u64 {
    io.input_numel(0) / 2
}
