//! Attributes of the ops that came with the ONNX importer: parameterised element-wise functions,
//! binary ops beyond ADD/SUB/MUL, reductions, resize modes and padding modes.

use serde::Serialize;

/// Element-wise unary functions with parameters (ONNX activations and math).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum MathFn {
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

impl MathFn {
    /// A short upper-case name.
    pub fn name(&self) -> &'static str {
        match self {
            MathFn::Clip { .. } => "CLIP",
            MathFn::LeakyRelu { .. } => "LEAKY_RELU",
            MathFn::HardSigmoid { .. } => "HARD_SIGMOID",
            MathFn::Elu { .. } => "ELU",
            MathFn::Erf => "ERF",
            MathFn::Sqrt => "SQRT",
            MathFn::Exp => "EXP",
            MathFn::Log => "LOG",
            MathFn::Abs => "ABS",
            MathFn::Neg => "NEG",
            MathFn::Reciprocal => "RECIPROCAL",
            MathFn::Floor => "FLOOR",
            MathFn::Ceil => "CEIL",
            MathFn::Softplus => "SOFTPLUS",
            MathFn::Softsign => "SOFTSIGN",
            MathFn::Identity => "IDENTITY",
        }
    }
}

/// Element-wise binary ops with broadcasting, beyond ADD/SUB/MUL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum BinaryFn {
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
}

/// How a reduction combines values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ReduceKind {
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

/// How an output coordinate maps to an input coordinate in a resize (ONNX
/// `coordinate_transformation_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum CoordMode {
    /// `(x + 0.5) / scale - 0.5`.
    HalfPixel,
    /// Like `HalfPixel`, but 0 where the output length is 1.
    PytorchHalfPixel,
    /// `x * (in - 1) / (out - 1)`.
    AlignCorners,
    /// `x / scale`.
    Asymmetric,
    /// `(x + 0.5) / scale`.
    TfHalfPixelForNn,
    /// Half-pixel, re-centred where the output length was rounded (ONNX opset 19).
    HalfPixelSymmetric,
}

/// How a nearest-neighbour resize rounds a fractional input coordinate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum NearestMode {
    /// Round half down (`ceil(x - 0.5)`).
    RoundPreferFloor,
    /// Round half up (`floor(x + 0.5)`).
    RoundPreferCeil,
    /// `floor(x)`.
    Floor,
    /// `ceil(x)`.
    Ceil,
}

/// Interpolation of a resize.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum ResizeMode {
    /// Nearest neighbour with the given rounding.
    Nearest(NearestMode),
    /// Bilinear.
    Linear,
    /// Bicubic (Keys) with coefficient `a`; `exclude_outside` drops (and renormalises) taps
    /// outside the input instead of repeating the edge.
    Cubic {
        /// The cubic coefficient (ONNX `cubic_coeff_a`, -0.75 by default).
        a: f32,
        /// ONNX `exclude_outside`.
        exclude_outside: bool,
    },
}

/// Attributes of a general resize of `x [1,H,W,C]` (ONNX `Resize`/`Upsample`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ResizeAttrs {
    /// Interpolation.
    pub mode: ResizeMode,
    /// Coordinate transformation.
    pub coord: CoordMode,
    /// `[scale_h, scale_w]` used by the coordinate transformation (output / input).
    pub scale: [f32; 2],
}

/// How padded positions are filled.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum PadMode {
    /// A constant value.
    Constant(f32),
    /// Mirror without repeating the edge (`abc` -> `cb|abc|ba`).
    Reflect,
    /// Repeat the edge value.
    Edge,
}
