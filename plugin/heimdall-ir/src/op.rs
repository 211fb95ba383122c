//! Ops, their attributes and fused epilogues.

use serde::Serialize;

use crate::math::{BinaryFn, MathFn, PadMode, ReduceKind, ResizeAttrs};
use crate::mediapipe::{
    Landmarks2TransformMatrixAttrs, TransformLandmarksAttrs, TransformTensorBilinearAttrs,
};
use crate::tensor::TensorId;

/// Explicit spatial padding of a window op, in elements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Pad2d {
    /// Rows above.
    pub top: usize,
    /// Rows below.
    pub bottom: usize,
    /// Columns left.
    pub left: usize,
    /// Columns right.
    pub right: usize,
}

/// Attributes of a convolution (regular, depthwise or transposed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ConvAttrs {
    /// `[stride_h, stride_w]`.
    pub stride: [usize; 2],
    /// `[dilation_h, dilation_w]`.
    pub dilation: [usize; 2],
    /// Zero padding of the input (for transposed convs: cropping of the full output).
    pub pad: Pad2d,
}

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

/// A strided slice with begin/end/stride already resolved per input axis (masks applied).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StridedSliceAttrs {
    /// First index per axis.
    pub begin: Vec<i64>,
    /// Step per axis (non-zero, may be negative).
    pub stride: Vec<i64>,
    /// Number of elements taken per axis.
    pub count: Vec<usize>,
}

/// Element-wise unary functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
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
}

/// Activation applied in an op's epilogue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum Activation {
    /// Identity.
    #[default]
    None,
    /// A unary function.
    Unary(UnaryKind),
    /// Parametric ReLU with the given (constant) alpha tensor, broadcast over the output.
    Prelu(TensorId),
}

/// What an op applies to its result before storing it: `activation(result + residual)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Epilogue {
    /// A tensor of the output's shape added before the activation (a fused residual `ADD`).
    pub residual: Option<TensorId>,
    /// The activation.
    pub activation: Activation,
}

impl Epilogue {
    /// Whether the epilogue does nothing.
    pub fn is_identity(&self) -> bool {
        self.residual.is_none() && self.activation == Activation::None
    }

    /// Tensors the epilogue reads.
    pub fn tensors(&self) -> impl Iterator<Item = TensorId> {
        let alpha = match self.activation {
            Activation::Prelu(t) => Some(t),
            _ => None,
        };
        self.residual.into_iter().chain(alpha)
    }
}

/// The kind of an op, with its attributes. Input conventions are documented per variant.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum OpKind {
    /// 2-D convolution. Inputs: `x [1,H,W,Ci]`, `filter [Co,kh,kw,Ci]`, optional `bias [Co]`.
    Conv2d(ConvAttrs),
    /// Depthwise convolution. Inputs: `x`, `filter [1,kh,kw,Ci*multiplier]`, optional bias.
    DepthwiseConv2d {
        /// Window attributes.
        attrs: ConvAttrs,
        /// Output channels per input channel.
        multiplier: usize,
    },
    /// Transposed convolution. Inputs: `x [1,H,W,Ci]`, `filter [Co,kh,kw,Ci]`, optional bias.
    /// `attrs.pad` is what is cropped from the full `(H-1)*s+kh` output.
    TransposeConv2d(ConvAttrs),
    /// Fully connected. Inputs: `x [..., I]`, `weights [O, I]`, optional `bias [O]`.
    FullyConnected,
    /// Max pooling (NHWC).
    MaxPool2d(PoolAttrs),
    /// Average pooling (NHWC).
    AvgPool2d(PoolAttrs),
    /// Mean over the given axes.
    Mean {
        /// Reduced axes (sorted, unique).
        axes: Vec<usize>,
        /// Keep reduced axes as size 1.
        keep_dims: bool,
    },
    /// Element-wise `a + b` with broadcasting.
    Add,
    /// Element-wise `a - b` with broadcasting.
    Sub,
    /// Element-wise `a * b` with broadcasting.
    Mul,
    /// Parametric ReLU. Inputs: `x`, `alpha` (broadcast to x).
    Prelu,
    /// Element-wise unary function.
    Unary(UnaryKind),
    /// Zero padding; `pads[d] = [before, after]` per dimension of the input.
    Pad {
        /// Padding per dimension.
        pads: Vec<[usize; 2]>,
    },
    /// Reshape (the output tensor's shape is the new shape).
    Reshape,
    /// Concatenation of all inputs along `axis`.
    Concatenation {
        /// Axis (non-negative).
        axis: usize,
    },
    /// Bilinear resize of `x [1,H,W,C]` to the output's H and W.
    ResizeBilinear {
        /// TFLite `align_corners`.
        align_corners: bool,
        /// TFLite `half_pixel_centers`.
        half_pixel_centers: bool,
    },
    /// Depth to space (DCR order, as TFLite).
    DepthToSpace {
        /// Block size.
        block: usize,
    },
    /// Strided slice.
    StridedSlice(StridedSliceAttrs),
    /// Converts an fp16 constant to f32 (`DEQUANTIZE`), folded away at load by the passes.
    Dequantize,
    /// Expands a sparse constant to dense (`DENSIFY`), folded away at load by the passes.
    Densify,
    /// MediaPipe custom op `Landmarks2TransformMatrix`.
    Landmarks2TransformMatrix(Landmarks2TransformMatrixAttrs),
    /// MediaPipe custom op `TransformTensorBilinear`.
    TransformTensorBilinear(TransformTensorBilinearAttrs),
    /// MediaPipe custom op `TransformLandmarks`.
    TransformLandmarks(TransformLandmarksAttrs),
    /// Permutes axes: output axis `i` is input axis `perm[i]`.
    Transpose {
        /// The permutation.
        perm: Vec<usize>,
    },
    /// Element-wise function with parameters.
    Math(MathFn),
    /// Element-wise binary op with broadcasting (division, power, max, min).
    Binary(BinaryFn),
    /// Instance normalisation over H and W of `x [1,H,W,C]`:
    /// `(x - mean) / sqrt(var + epsilon)`, times optional `scale [C]` (input 1), plus optional
    /// `bias [C]` (input 2); scale and bias may be computed at run time.
    InstanceNorm {
        /// Added to the variance.
        epsilon: f32,
    },
    /// Resize of `x [1,H,W,C]` to the output's H and W (nearest or bilinear, any coordinate mode).
    Resize(ResizeAttrs),
    /// Padding with a fill mode; `pads[d] = [before, after]` per dimension of the input.
    PadWith {
        /// Padding per dimension.
        pads: Vec<[usize; 2]>,
        /// How padded positions are filled.
        mode: PadMode,
    },
    /// Softmax (or log-softmax) along one axis.
    Softmax {
        /// Axis (non-negative).
        axis: usize,
        /// Log-softmax.
        log: bool,
    },
    /// Matrix product `a [..., M, K] x b [..., K, N]` with broadcast batch dimensions.
    MatMul,
    /// Reduction over the given axes.
    Reduce {
        /// How values combine.
        kind: ReduceKind,
        /// Reduced axes (sorted, unique).
        axes: Vec<usize>,
        /// Keep reduced axes as size 1.
        keep_dims: bool,
    },
    /// Space to depth of `x [1,H,W,C]` (output channel `(i*b + j)*C + c`).
    SpaceToDepth {
        /// Block size.
        block: usize,
    },
    /// Depth to space in CRD order (input channel `c*b*b + i*b + j`), ONNX `mode="CRD"`.
    DepthToSpaceCrd {
        /// Block size.
        block: usize,
    },
    /// Element-wise select with broadcasting: inputs `cond`, `x`, `y`; `x` where `cond != 0`,
    /// else `y`.
    Where,
}

impl OpKind {
    /// A short upper-case name (TFLite style).
    pub fn name(&self) -> &'static str {
        match self {
            OpKind::Conv2d(_) => "CONV_2D",
            OpKind::DepthwiseConv2d { .. } => "DEPTHWISE_CONV_2D",
            OpKind::TransposeConv2d(_) => "TRANSPOSE_CONV",
            OpKind::FullyConnected => "FULLY_CONNECTED",
            OpKind::MaxPool2d(_) => "MAX_POOL_2D",
            OpKind::AvgPool2d(_) => "AVERAGE_POOL_2D",
            OpKind::Mean { .. } => "MEAN",
            OpKind::Add => "ADD",
            OpKind::Sub => "SUB",
            OpKind::Mul => "MUL",
            OpKind::Prelu => "PRELU",
            OpKind::Unary(UnaryKind::Relu) => "RELU",
            OpKind::Unary(UnaryKind::Relu6) => "RELU6",
            OpKind::Unary(UnaryKind::ReluN1To1) => "RELU_N1_TO_1",
            OpKind::Unary(UnaryKind::Logistic) => "LOGISTIC",
            OpKind::Unary(UnaryKind::HardSwish) => "HARD_SWISH",
            OpKind::Unary(UnaryKind::Tanh) => "TANH",
            OpKind::Pad { .. } => "PAD",
            OpKind::Reshape => "RESHAPE",
            OpKind::Concatenation { .. } => "CONCATENATION",
            OpKind::ResizeBilinear { .. } => "RESIZE_BILINEAR",
            OpKind::DepthToSpace { .. } => "DEPTH_TO_SPACE",
            OpKind::StridedSlice(_) => "STRIDED_SLICE",
            OpKind::Dequantize => "DEQUANTIZE",
            OpKind::Densify => "DENSIFY",
            OpKind::Landmarks2TransformMatrix(_) => "Landmarks2TransformMatrix",
            OpKind::TransformTensorBilinear(_) => "TransformTensorBilinear",
            OpKind::TransformLandmarks(_) => "TransformLandmarks",
            OpKind::Transpose { .. } => "TRANSPOSE",
            OpKind::Math(f) => f.name(),
            OpKind::Binary(f) => f.name(),
            OpKind::InstanceNorm { .. } => "INSTANCE_NORM",
            OpKind::Resize(_) => "RESIZE",
            OpKind::PadWith { .. } => "PAD_WITH",
            OpKind::Softmax { log: false, .. } => "SOFTMAX",
            OpKind::Softmax { log: true, .. } => "LOG_SOFTMAX",
            OpKind::MatMul => "MATMUL",
            OpKind::Reduce { kind, .. } => kind.name(),
            OpKind::SpaceToDepth { .. } => "SPACE_TO_DEPTH",
            OpKind::DepthToSpaceCrd { .. } => "DEPTH_TO_SPACE_CRD",
            OpKind::Where => "SELECT",
        }
    }

    /// Whether a fused epilogue (residual add and activation) may be attached to this op.
    pub fn accepts_epilogue(&self) -> bool {
        matches!(
            self,
            OpKind::Conv2d(_)
                | OpKind::DepthwiseConv2d { .. }
                | OpKind::TransposeConv2d(_)
                | OpKind::FullyConnected
                | OpKind::Add
                | OpKind::Sub
                | OpKind::Mul
        )
    }
}

/// One op of the graph.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Op {
    /// Kind and attributes.
    pub kind: OpKind,
    /// Input tensors (see [`OpKind`] for the conventions).
    pub inputs: Vec<TensorId>,
    /// Output tensors.
    pub outputs: Vec<TensorId>,
    /// Fused epilogue (identity unless a pass fused something).
    pub epilogue: Epilogue,
    /// Index of the op in the model file it came from (before passes), for messages.
    pub source: Option<usize>,
}

impl Op {
    /// A new op with an identity epilogue.
    pub fn new(kind: OpKind, inputs: Vec<TensorId>, outputs: Vec<TensorId>) -> Self {
        Op {
            kind,
            inputs,
            outputs,
            epilogue: Epilogue::default(),
            source: None,
        }
    }

    /// Every tensor the op reads: its inputs and those of its epilogue.
    pub fn reads(&self) -> impl Iterator<Item = TensorId> + '_ {
        self.inputs.iter().copied().chain(self.epilogue.tensors())
    }
}
