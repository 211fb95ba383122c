//! Element-wise functions of one tensor: the TFLite activations (which fusion can move into a
//! producer's epilogue) and the ONNX math functions, some with parameters.

use serde::Serialize;

use crate::shape::OpShapes;

/// An element-wise function of one value.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum UnaryKind {
    /// `max(x, 0)`.
    Relu,
    /// `clamp(x, 0, 6)`.
    Relu6,
    /// `clamp(x, -1, 1)`.
    ReluN1To1,
    /// `1 / (1 + exp(-x))`.
    Logistic,
    /// `x * relu6(x + 3) / 6`.
    HardSwish,
    /// `tanh(x)`.
    Tanh,
    /// `clamp(x, min, max)`.
    Clip {
        /// Lower bound.
        min: f32,
        /// Upper bound.
        max: f32,
    },
    /// `x` if `x >= 0`, else `alpha * x`.
    LeakyRelu {
        /// Slope for negative inputs.
        alpha: f32,
    },
    /// `clamp(alpha * x + beta, 0, 1)`.
    HardSigmoid {
        /// Slope.
        alpha: f32,
        /// Offset.
        beta: f32,
    },
    /// `x` if `x >= 0`, else `alpha * (exp(x) - 1)`.
    Elu {
        /// Scale of the negative part.
        alpha: f32,
    },
    /// The Gauss error function.
    Erf,
    /// The exact GELU, `x * (1 + erf(x / sqrt 2)) / 2` (made by the passes from its elementary
    /// ops: [`crate::passes::fuse_gelu`]).
    Gelu,
    /// Square root.
    Sqrt,
    /// `e^x`.
    Exp,
    /// Natural logarithm.
    Log,
    /// `|x|`.
    Abs,
    /// `-x`.
    Neg,
    /// `1 / x`.
    Reciprocal,
    /// Largest integer not above `x`.
    Floor,
    /// Smallest integer not below `x`.
    Ceil,
    /// `ln(1 + e^x)`.
    Softplus,
    /// `x / (1 + |x|)`.
    Softsign,
    /// `x` (kept as an op, e.g. a graph output that is also an input).
    Identity,
}

impl UnaryKind {
    /// A short upper-case name.
    pub fn name(&self) -> &'static str {
        match self {
            UnaryKind::Relu => "RELU",
            UnaryKind::Relu6 => "RELU6",
            UnaryKind::ReluN1To1 => "RELU_N1_TO_1",
            UnaryKind::Logistic => "LOGISTIC",
            UnaryKind::HardSwish => "HARD_SWISH",
            UnaryKind::Tanh => "TANH",
            UnaryKind::Clip { .. } => "CLIP",
            UnaryKind::LeakyRelu { .. } => "LEAKY_RELU",
            UnaryKind::HardSigmoid { .. } => "HARD_SIGMOID",
            UnaryKind::Elu { .. } => "ELU",
            UnaryKind::Erf => "ERF",
            UnaryKind::Gelu => "GELU",
            UnaryKind::Sqrt => "SQRT",
            UnaryKind::Exp => "EXP",
            UnaryKind::Log => "LOG",
            UnaryKind::Abs => "ABS",
            UnaryKind::Neg => "NEG",
            UnaryKind::Reciprocal => "RECIPROCAL",
            UnaryKind::Floor => "FLOOR",
            UnaryKind::Ceil => "CEIL",
            UnaryKind::Softplus => "SOFTPLUS",
            UnaryKind::Softsign => "SOFTSIGN",
            UnaryKind::Identity => "IDENTITY",
        }
    }

    /// Whether this is one of the TFLite activations (ReLU, ReLU6, ReLU-1..1, logistic,
    /// hard-swish, tanh): the functions an epilogue ([`crate::Activation::Unary`]) applies, and
    /// so the ones fusion moves into the op producing their input.
    pub fn fusable(&self) -> bool {
        matches!(
            self,
            UnaryKind::Relu
                | UnaryKind::Relu6
                | UnaryKind::ReluN1To1
                | UnaryKind::Logistic
                | UnaryKind::HardSwish
                | UnaryKind::Tanh
        )
    }
}

/// Output shape of an element-wise function: the input's.
pub fn infer(io: &OpShapes) -> Result<Vec<usize>, String> {
    Ok(io.input(0)?.to_vec())
}

/// Multiply-adds of an element-wise function: half of one per value.
pub fn macs(io: &OpShapes) -> u64 {
    io.output_numel() / 2
}
