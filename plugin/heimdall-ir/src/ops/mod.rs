//! The op set: [`OpKind`], one variant per op, and one file per op family holding its
//! attributes, its shape inference and its cost.
//!
//! This file is the IR's registration list: a family is named here (its module, its variants
//! and one arm in each method of [`OpKind`]) and nowhere else in the IR. The backends have the
//! same list in their own `ops/mod.rs` (see `docs/adding-an-op.md`).

pub mod binary;
pub mod concat;
pub mod conv;
pub mod densify;
pub mod depthwise;
pub mod dequantize;
pub mod fully_connected;
pub mod instance_norm;
pub mod landmarks_to_transform;
pub mod matmul;
pub mod pad;
pub mod pool;
pub mod reduce;
pub mod reshape;
pub mod resize;
pub mod select;
pub mod softmax;
pub mod space_depth;
pub mod strided_slice;
pub mod transform_landmarks;
pub mod transform_tensor_bilinear;
pub mod transpose;
pub mod transpose_conv;
pub mod unary;

use serde::Serialize;

use self::binary::BinaryFn;
use self::conv::ConvAttrs;
use self::landmarks_to_transform::Landmarks2TransformMatrixAttrs;
use self::pad::PadMode;
use self::pool::PoolAttrs;
use self::reduce::ReduceKind;
use self::resize::ResizeAttrs;
use self::space_depth::BlockOrder;
use self::strided_slice::StridedSliceAttrs;
use self::transform_landmarks::TransformLandmarksAttrs;
use self::transform_tensor_bilinear::TransformTensorBilinearAttrs;
use self::unary::UnaryKind;
use crate::shape::OpShapes;

/// The kind of an op, with its attributes. Input conventions are documented per variant (and
/// in each family's file).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum OpKind {
    /// 2-D convolution ([`conv`]). Inputs: `x [1,H,W,Ci]`, `filter [Co,kh,kw,Ci]`, optional
    /// `bias [Co]`.
    Conv2d(ConvAttrs),
    /// Depthwise convolution ([`depthwise`]). Inputs: `x`, `filter [1,kh,kw,Ci*multiplier]`,
    /// optional bias.
    DepthwiseConv2d {
        /// Window attributes.
        attrs: ConvAttrs,
        /// Output channels per input channel.
        multiplier: usize,
    },
    /// Transposed convolution ([`transpose_conv`]). Inputs: `x [1,H,W,Ci]`,
    /// `filter [Co,kh,kw,Ci]`, optional bias. `attrs.pad` is what is cropped from the full
    /// `(H-1)*s+kh` output.
    TransposeConv2d(ConvAttrs),
    /// Fully connected ([`fully_connected`]). Inputs: `x [..., I]`, `weights [O, I]`, optional
    /// `bias [O]`.
    FullyConnected,
    /// Max pooling, NHWC ([`pool`]).
    MaxPool2d(PoolAttrs),
    /// Average pooling, NHWC ([`pool`]).
    AvgPool2d(PoolAttrs),
    /// Reduction over axes ([`reduce`]): MEAN and the ONNX `Reduce*` ops.
    Reduce {
        /// How values combine.
        kind: ReduceKind,
        /// Reduced axes (sorted, unique).
        axes: Vec<usize>,
        /// Keep reduced axes as size 1.
        keep_dims: bool,
    },
    /// Element-wise function of one tensor ([`unary`]).
    Unary(UnaryKind),
    /// Element-wise function of two tensors with broadcasting ([`binary`]).
    Binary(BinaryFn),
    /// Element-wise select with broadcasting ([`select`]): inputs `cond`, `x`, `y`; `x` where
    /// `cond != 0`, else `y`.
    Where,
    /// Padding ([`pad`]); `pads[d] = [before, after]` per dimension of the input.
    Pad {
        /// Padding per dimension.
        pads: Vec<[usize; 2]>,
        /// How padded positions are filled.
        mode: PadMode,
    },
    /// Reshape ([`reshape`]): the output tensor's shape is the new shape.
    Reshape,
    /// Concatenation of all inputs along `axis` ([`concat`](mod@concat)).
    Concatenation {
        /// Axis (non-negative).
        axis: usize,
    },
    /// Strided slice ([`strided_slice`]).
    StridedSlice(StridedSliceAttrs),
    /// Permutes axes ([`transpose`]): output axis `i` is input axis `perm[i]`.
    Transpose {
        /// The permutation.
        perm: Vec<usize>,
    },
    /// Resize of `x [1,H,W,C]` to the output's H and W ([`resize`]).
    Resize(ResizeAttrs),
    /// Depth to space of `x [1,H,W,C]` ([`space_depth`]).
    DepthToSpace {
        /// Block size.
        block: usize,
        /// Order of the block's channels.
        order: BlockOrder,
    },
    /// Space to depth of `x [1,H,W,C]` ([`space_depth`]): output channel `(i*b + j)*C + c`.
    SpaceToDepth {
        /// Block size.
        block: usize,
    },
    /// Matrix product `a [..., M, K] x b [..., K, N]` with broadcast batch dimensions
    /// ([`matmul`]).
    MatMul,
    /// Softmax (or log-softmax) along one axis ([`softmax`]).
    Softmax {
        /// Axis (non-negative).
        axis: usize,
        /// Log-softmax.
        log: bool,
    },
    /// Instance normalisation over H and W of `x [1,H,W,C]` ([`instance_norm`]), with
    /// optional `scale [C]` (input 1) and `bias [C]` (input 2).
    InstanceNorm {
        /// Added to the variance.
        epsilon: f32,
    },
    /// Converts an fp16 constant to f32 ([`dequantize`]), folded away at load by the passes.
    Dequantize,
    /// Expands a sparse constant to dense ([`densify`]), folded away at load by the passes.
    Densify,
    /// MediaPipe custom op `Landmarks2TransformMatrix` ([`landmarks_to_transform`]).
    Landmarks2TransformMatrix(Landmarks2TransformMatrixAttrs),
    /// MediaPipe custom op `TransformTensorBilinear` ([`transform_tensor_bilinear`]).
    TransformTensorBilinear(TransformTensorBilinearAttrs),
    /// MediaPipe custom op `TransformLandmarks` ([`transform_landmarks`]).
    TransformLandmarks(TransformLandmarksAttrs),
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
            OpKind::Reduce { kind, .. } => kind.name(),
            OpKind::Unary(f) => f.name(),
            OpKind::Binary(f) => f.name(),
            OpKind::Where => "SELECT",
            OpKind::Pad { mode, .. } => mode.op_name(),
            OpKind::Reshape => "RESHAPE",
            OpKind::Concatenation { .. } => "CONCATENATION",
            OpKind::StridedSlice(_) => "STRIDED_SLICE",
            OpKind::Transpose { .. } => "TRANSPOSE",
            OpKind::Resize(a) => a.name(),
            OpKind::DepthToSpace {
                order: BlockOrder::Dcr,
                ..
            } => "DEPTH_TO_SPACE",
            OpKind::DepthToSpace {
                order: BlockOrder::Crd,
                ..
            } => "DEPTH_TO_SPACE_CRD",
            OpKind::SpaceToDepth { .. } => "SPACE_TO_DEPTH",
            OpKind::MatMul => "MATMUL",
            OpKind::Softmax { log: false, .. } => "SOFTMAX",
            OpKind::Softmax { log: true, .. } => "LOG_SOFTMAX",
            OpKind::InstanceNorm { .. } => "INSTANCE_NORM",
            OpKind::Dequantize => "DEQUANTIZE",
            OpKind::Densify => "DENSIFY",
            OpKind::Landmarks2TransformMatrix(_) => "Landmarks2TransformMatrix",
            OpKind::TransformTensorBilinear(_) => "TransformTensorBilinear",
            OpKind::TransformLandmarks(_) => "TransformLandmarks",
        }
    }

    /// Output shapes (one per output) implied by the input shapes and the attributes; `io`
    /// also carries the declared output shapes, which some ops take theirs from.
    pub fn infer(&self, io: &OpShapes) -> Result<Vec<Vec<usize>>, String> {
        let shape = match self {
            OpKind::Conv2d(a) => conv::infer(a, io),
            OpKind::DepthwiseConv2d { attrs, multiplier } => {
                depthwise::infer(attrs, *multiplier, io)
            }
            OpKind::TransposeConv2d(a) => transpose_conv::infer(a, io),
            OpKind::FullyConnected => fully_connected::infer(io),
            OpKind::MaxPool2d(p) | OpKind::AvgPool2d(p) => pool::infer(p, io),
            OpKind::Reduce {
                axes, keep_dims, ..
            } => reduce::infer(axes, *keep_dims, io),
            OpKind::Unary(_) => unary::infer(io),
            OpKind::Binary(_) => binary::infer(io),
            OpKind::Where => select::infer(io),
            OpKind::Pad { pads, mode } => pad::infer(pads, mode, io),
            OpKind::Reshape => reshape::infer(io),
            OpKind::Concatenation { axis } => concat::infer(*axis, io),
            OpKind::StridedSlice(a) => strided_slice::infer(a, io),
            OpKind::Transpose { perm } => transpose::infer(perm, io),
            OpKind::Resize(a) => resize::infer(a, io),
            OpKind::DepthToSpace { block, .. } => space_depth::infer(*block, false, io),
            OpKind::SpaceToDepth { block } => space_depth::infer(*block, true, io),
            OpKind::MatMul => matmul::infer(io),
            OpKind::Softmax { axis, .. } => softmax::infer(*axis, io),
            OpKind::InstanceNorm { .. } => instance_norm::infer(io),
            OpKind::Dequantize => dequantize::infer(io),
            OpKind::Densify => densify::infer(io),
            OpKind::Landmarks2TransformMatrix(a) => {
                landmarks_to_transform::infer(a, &io.leading(1)?)
            }
            OpKind::TransformTensorBilinear(a) => {
                transform_tensor_bilinear::infer(a, &io.leading(2)?)
            }
            OpKind::TransformLandmarks(a) => transform_landmarks::infer(a, &io.leading(2)?),
        }?;
        Ok(vec![shape])
    }

    /// Multiply-adds of the op without its epilogue (a comparison or an addition counts as
    /// half of one), for [`crate::cost`].
    pub fn macs(&self, io: &OpShapes) -> u64 {
        match self {
            OpKind::Conv2d(_) => conv::macs(io),
            OpKind::DepthwiseConv2d { .. } => depthwise::macs(io),
            OpKind::TransposeConv2d(_) => transpose_conv::macs(io),
            OpKind::FullyConnected => fully_connected::macs(io),
            OpKind::MaxPool2d(p) | OpKind::AvgPool2d(p) => pool::macs(p, io),
            OpKind::Reduce { .. } => reduce::macs(io),
            OpKind::Unary(_) => unary::macs(io),
            OpKind::Binary(_) => binary::macs(io),
            OpKind::Where => select::macs(io),
            OpKind::Resize(_) => resize::macs(io),
            OpKind::MatMul => matmul::macs(io),
            OpKind::Softmax { .. } => softmax::macs(io),
            OpKind::InstanceNorm { .. } => instance_norm::macs(io),
            // Data movement, and the weight decoding folded away at load.
            OpKind::Pad { .. }
            | OpKind::Reshape
            | OpKind::Concatenation { .. }
            | OpKind::StridedSlice(_)
            | OpKind::Transpose { .. }
            | OpKind::DepthToSpace { .. }
            | OpKind::SpaceToDepth { .. }
            | OpKind::Dequantize
            | OpKind::Densify
            | OpKind::Landmarks2TransformMatrix(_)
            | OpKind::TransformTensorBilinear(_)
            | OpKind::TransformLandmarks(_) => 0,
        }
    }

    /// Whether a fused epilogue (residual add and activation) may be attached to this op.
    pub fn accepts_epilogue(&self) -> bool {
        match self {
            OpKind::Conv2d(_)
            | OpKind::DepthwiseConv2d { .. }
            | OpKind::TransposeConv2d(_)
            | OpKind::FullyConnected
            | OpKind::InstanceNorm { .. } => true,
            OpKind::Binary(f) => f.accepts_epilogue(),
            _ => false,
        }
    }

    /// Whether the op is a convolution-like op (conv, depthwise, transposed conv, fully
    /// connected): the ops whose FLOPs MODELS.md lists as "conv GFLOP".
    pub fn is_conv_like(&self) -> bool {
        matches!(
            self,
            OpKind::Conv2d(_)
                | OpKind::DepthwiseConv2d { .. }
                | OpKind::TransposeConv2d(_)
                | OpKind::FullyConnected
        )
    }
}
