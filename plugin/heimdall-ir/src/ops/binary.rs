//! Element-wise functions of two tensors with NumPy broadcasting: TFLite's ADD, SUB, MUL
//! (which accept a fused epilogue) and PRELU, and ONNX's division, power, extrema and
//! comparisons.

use serde::Serialize;

use crate::shape::{OpShapes, broadcast};

/// An element-wise function of two values `a` (input 0) and `b` (input 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum BinaryFn {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// Parametric ReLU: `a` if `a >= 0`, else `b * a` (`b` is the alpha tensor).
    Prelu,
    /// `a / b`.
    Div,
    /// `a ^ b`.
    Pow,
    /// `max(a, b)`.
    Max,
    /// `min(a, b)`.
    Min,
    /// `1.0` where `a < b`, else `0.0`.
    Less,
    /// `1.0` where `a > b`, else `0.0`.
    Greater,
    /// `1.0` where `a == b`, else `0.0`.
    Equal,
    /// `1.0` where `a <= b`, else `0.0`.
    LessOrEqual,
    /// `1.0` where `a >= b`, else `0.0`.
    GreaterOrEqual,
}

impl BinaryFn {
    /// A short upper-case name.
    pub fn name(&self) -> &'static str {
        match self {
            BinaryFn::Add => "ADD",
            BinaryFn::Sub => "SUB",
            BinaryFn::Mul => "MUL",
            BinaryFn::Prelu => "PRELU",
            BinaryFn::Div => "DIV",
            BinaryFn::Pow => "POW",
            BinaryFn::Max => "MAXIMUM",
            BinaryFn::Min => "MINIMUM",
            BinaryFn::Less => "LESS",
            BinaryFn::Greater => "GREATER",
            BinaryFn::Equal => "EQUAL",
            BinaryFn::LessOrEqual => "LESS_EQUAL",
            BinaryFn::GreaterOrEqual => "GREATER_EQUAL",
        }
    }

    /// Whether a fused epilogue (residual add and activation) may be attached: the arithmetic
    /// of TFLite's ADD, SUB and MUL.
    pub fn accepts_epilogue(&self) -> bool {
        matches!(self, BinaryFn::Add | BinaryFn::Sub | BinaryFn::Mul)
    }
}

/// Output shape of a broadcast binary op.
pub fn infer(io: &OpShapes) -> Result<Vec<usize>, String> {
    shape(io.input(0)?, io.input(1)?)
}

/// The broadcast shape of `a` and `b`, or an error naming them.
pub fn shape(a: &[usize], b: &[usize]) -> Result<Vec<usize>, String> {
    broadcast(a, b).ok_or_else(|| format!("shapes {a:?} and {b:?} do not broadcast"))
}

/// Multiply-adds of a binary op: half of one per output value.
pub fn macs(io: &OpShapes) -> u64 {
    io.output_numel() / 2
}
