//! The CPU kernels, one file per op family (the same families as `heimdall_ir::ops`): each file
//! holds its kernels as functions on slices and prepares them for an op.
//!
//! This file is the CPU backend's registration list: a family is named here (its module and
//! its arm in [`prepare`]) and nowhere else in the crate.

pub(crate) mod binary;
pub(crate) mod concat;
pub(crate) mod conv;
pub(crate) mod densify;
pub(crate) mod depthwise;
pub(crate) mod dequantize;
pub(crate) mod expand_dw;
pub(crate) mod fully_connected;
pub(crate) mod instance_norm;
pub(crate) mod landmarks_to_transform;
pub(crate) mod matmul;
pub(crate) mod pad;
pub(crate) mod pool;
pub(crate) mod reduce;
pub(crate) mod reshape;
pub(crate) mod resize;
pub(crate) mod select;
pub(crate) mod softmax;
pub(crate) mod space_depth;
pub(crate) mod strided_slice;
pub(crate) mod transform_landmarks;
pub(crate) mod transform_tensor_bilinear;
pub(crate) mod transpose;
pub(crate) mod transpose_conv;
pub(crate) mod unary;

use heimdall_ir::OpKind;

use crate::step::{PrepareCx, Prepared};

/// Prepares the kernel of `cx`'s op: weights packed, geometry resolved.
pub(crate) fn prepare(cx: &PrepareCx) -> Result<Prepared, String> {
    if cx.reflect_pad.is_some() && !matches!(cx.op.kind, OpKind::Conv2d(_)) {
        return Err("only a convolution can read through a fused reflect pad".into());
    }
    if cx.pad_output.is_some()
        && !matches!(cx.op.kind, OpKind::InstanceNorm { .. } | OpKind::Resize(_))
    {
        return Err(
            "only an instance normalisation or a resize can write a fused reflect pad".into(),
        );
    }
    if cx.tail.is_some()
        && !matches!(
            cx.op.kind,
            OpKind::Conv2d(_) | OpKind::DepthwiseConv2d { .. } | OpKind::TransposeConv2d(_)
        )
    {
        return Err("only a convolution can take a fused tail".into());
    }
    if cx.channel_padded.is_some() && cx.op.kind != OpKind::Binary(heimdall_ir::BinaryFn::Add) {
        return Err("only an add can read through a fused channel pad".into());
    }
    if let Some((pw, pw_f16)) = cx.expansion {
        return expand_dw::prepare(cx, pw, pw_f16);
    }
    match &cx.op.kind {
        OpKind::Conv2d(a) => conv::prepare(cx, a),
        OpKind::DepthwiseConv2d { attrs, .. } => depthwise::prepare(cx, attrs),
        OpKind::TransposeConv2d(a) => transpose_conv::prepare(cx, a),
        OpKind::FullyConnected => fully_connected::prepare(cx),
        OpKind::MaxPool2d(p) => pool::prepare(cx, p, true),
        OpKind::AvgPool2d(p) => pool::prepare(cx, p, false),
        OpKind::Reduce { kind, axes, .. } => reduce::prepare(cx, *kind, axes),
        OpKind::Unary(f) => unary::prepare(cx, *f),
        OpKind::Binary(f) => binary::prepare(cx, *f),
        OpKind::Where => select::prepare(cx),
        OpKind::Pad { pads, mode } => pad::prepare(cx, pads, *mode),
        OpKind::Reshape => reshape::prepare(cx),
        OpKind::Concatenation { axis } => concat::prepare(cx, *axis),
        OpKind::StridedSlice(a) => strided_slice::prepare(cx, a),
        OpKind::Transpose { perm } => transpose::prepare(cx, perm),
        OpKind::Resize(a) => resize::prepare(cx, a),
        OpKind::DepthToSpace { block, order } => space_depth::prepare(cx, *block, Some(*order)),
        OpKind::SpaceToDepth { block } => space_depth::prepare(cx, *block, None),
        OpKind::MatMul => matmul::prepare(cx),
        OpKind::Softmax { axis, log } => softmax::prepare(cx, *axis, *log),
        OpKind::InstanceNorm { epsilon } => instance_norm::prepare(cx, *epsilon),
        OpKind::Dequantize => dequantize::prepare(cx),
        OpKind::Densify => densify::prepare(cx),
        OpKind::Landmarks2TransformMatrix(a) => landmarks_to_transform::prepare(cx, a),
        OpKind::TransformTensorBilinear(a) => transform_tensor_bilinear::prepare(cx, a),
        OpKind::TransformLandmarks(a) => transform_landmarks::prepare(cx, a),
    }
}
