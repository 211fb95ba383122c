//! Placement: which steps of a model run on the GPU and which must run on the CPU.

use heimdall_ir::{Graph, OpKind};

/// Where a step runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// A GPU dispatch (or several) recorded by [`crate::GpuModel::encode`].
    Gpu,
    /// An op with no GPU kernel (after the passes only a `Dequantize` or `Densify` of a computed
    /// tensor, which no supported model has): a CPU step with transfers around it.
    Cpu,
}

/// Whether an op kind has a GPU kernel (a positive list: ops added to the IR later default to
/// the CPU until a kernel exists).
pub fn has_gpu_kernel(kind: &OpKind) -> bool {
    matches!(
        kind,
        OpKind::Conv2d(_)
            | OpKind::DepthwiseConv2d { .. }
            | OpKind::TransposeConv2d(_)
            | OpKind::FullyConnected
            | OpKind::MaxPool2d(_)
            | OpKind::AvgPool2d(_)
            | OpKind::Unary(_)
            | OpKind::Binary(_)
            | OpKind::Pad { .. }
            | OpKind::Reshape
            | OpKind::Concatenation { .. }
            | OpKind::DepthToSpace { .. }
            | OpKind::StridedSlice(_)
            // The ONNX-only op kinds.
            | OpKind::Transpose { .. }
            | OpKind::InstanceNorm { .. }
            | OpKind::Resize(_)
            | OpKind::Softmax { .. }
            | OpKind::MatMul
            | OpKind::Reduce { .. }
            | OpKind::SpaceToDepth { .. }
            | OpKind::Where
            // The MediaPipe custom ops of face_landmark_with_attention.
            | OpKind::Landmarks2TransformMatrix(_)
            | OpKind::TransformTensorBilinear(_)
            | OpKind::TransformLandmarks(_)
    )
}

/// The placement of every op of the graph (one step per op, in graph order).
pub fn placement(graph: &Graph) -> Vec<Placement> {
    graph
        .ops
        .iter()
        .map(|op| {
            if has_gpu_kernel(&op.kind) {
                Placement::Gpu
            } else {
                Placement::Cpu
            }
        })
        .collect()
}
