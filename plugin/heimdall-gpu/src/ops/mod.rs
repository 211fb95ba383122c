//! The GPU kernels, one file per op family (the same families as `heimdall_ir::ops`), each
//! beside its WGSL in `shaders/`: a family turns an op into [`Dispatch`]es and lists the
//! variants it can compose ([`catalogue`], validated by naga in the shader tests). Shaders that
//! several families share have their builders in `crate::kernels`.
//!
//! This file is the GPU backend's registration list: a family is named here (its module, its
//! arm in [`build`] and its catalogue) and nowhere else in the crate.

pub mod binary;
pub mod concat;
pub mod conv;
pub(crate) mod conv1x1_params;
pub mod conv1x1_tiled;
pub mod conv_coop;
pub mod depthwise;
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

use heimdall_ir::OpKind;

use crate::dispatch::{Dispatch, OpContext};
use crate::kernels::{elementwise, gather, nary};
use crate::precision::Precision;
use crate::wgsl::KernelSource;

/// Whether an op kind has a GPU kernel; the others (only the weight decoding the passes fold
/// away, which no supported model keeps) run as CPU steps.
pub fn has_gpu_kernel(kind: &OpKind) -> bool {
    !matches!(kind, OpKind::Dequantize | OpKind::Densify)
}

/// Builds the dispatches of one op (the op must have a GPU kernel, see [`has_gpu_kernel`]).
pub fn build(ctx: &mut OpContext) -> Result<Vec<Dispatch>, String> {
    match &ctx.op.kind {
        OpKind::Conv2d(a) => conv::build(ctx, a),
        OpKind::DepthwiseConv2d { attrs, multiplier } => depthwise::build(ctx, attrs, *multiplier),
        OpKind::TransposeConv2d(a) => transpose_conv::build(ctx, a),
        OpKind::FullyConnected => fully_connected::build(ctx),
        OpKind::MaxPool2d(p) => pool::build(ctx, p, pool::PoolKind::Max),
        OpKind::AvgPool2d(p) => pool::build(ctx, p, pool::PoolKind::Average),
        OpKind::Reduce { kind, axes, .. } => reduce::build(ctx, *kind, axes),
        OpKind::Unary(f) => unary::build(ctx, *f),
        OpKind::Binary(f) => binary::build(ctx, *f),
        OpKind::Where => select::build(ctx),
        OpKind::Pad { pads, mode } => pad::build(ctx, pads, *mode),
        OpKind::Reshape => reshape::build(ctx),
        OpKind::Concatenation { axis } => concat::build(ctx, *axis),
        OpKind::StridedSlice(a) => strided_slice::build(ctx, a),
        OpKind::Transpose { perm } => transpose::build(ctx, perm),
        OpKind::Resize(a) => resize::build(ctx, a),
        OpKind::DepthToSpace { block, order } => {
            space_depth::build_depth_to_space(ctx, *block, *order)
        }
        OpKind::SpaceToDepth { block } => space_depth::build_space_to_depth(ctx, *block),
        OpKind::MatMul => matmul::build(ctx),
        OpKind::Softmax { axis, log } => softmax::build(ctx, *axis, *log),
        OpKind::InstanceNorm { epsilon } => instance_norm::build(ctx, *epsilon),
        OpKind::Landmarks2TransformMatrix(a) => landmarks_to_transform::build(ctx, a),
        OpKind::TransformTensorBilinear(_) => transform_tensor_bilinear::build(ctx),
        OpKind::TransformLandmarks(_) => transform_landmarks::build(ctx),
        OpKind::Dequantize | OpKind::Densify => {
            Err(format!("{} has no GPU kernel", ctx.op.kind.name()))
        }
    }
}

/// Every kernel variant the backend composes, in every precision, with representative
/// constants and epilogues: what the shader tests validate with naga (no GPU needed).
pub fn catalogue() -> Vec<KernelSource> {
    let mut out = Vec::new();
    for p in Precision::ALL {
        let families: &[fn(Precision) -> Vec<KernelSource>] = &[
            elementwise::catalogue,
            nary::catalogue,
            gather::catalogue,
            conv::catalogue,
            conv1x1_tiled::catalogue,
            conv_coop::catalogue,
            depthwise::catalogue,
            transpose_conv::catalogue,
            fully_connected::catalogue,
            pool::catalogue,
            reduce::catalogue,
            pad::catalogue,
            resize::catalogue,
            space_depth::catalogue,
            transpose::catalogue,
            matmul::catalogue,
            softmax::catalogue,
            instance_norm::catalogue,
            landmarks_to_transform::catalogue,
            transform_tensor_bilinear::catalogue,
            transform_landmarks::catalogue,
        ];
        // The reshape, concat, strided slice, unary, binary and select families compose the
        // shared kernels only.
        for catalogue in families {
            out.extend(catalogue(p));
        }
    }
    out
}
