//! The storage precision of every op (its outputs and weights) and of every tensor of a
//! compiled model.

use heimdall_ir::{Graph, OpKind, ReduceKind};

use crate::options::GpuOptions;
use crate::precision::Precision;

/// Storage precision of every op (its outputs and weights): the model's, or an override.
pub(crate) fn op_precisions(graph: &Graph, options: &GpuOptions, f16: bool) -> Vec<Precision> {
    let resolve = |p: Precision| match p {
        Precision::F16 if !f16 => Precision::PackedF16,
        p => p,
    };
    (0..graph.ops.len())
        .map(|k| {
            let p = options
                .overrides
                .iter()
                .rev()
                .find(|(r, _)| r.contains(&k))
                .map_or(options.precision, |(_, p)| *p);
            resolve(p)
        })
        .collect()
}

/// Storage precision of every tensor: its producer's (graph inputs: f32 if an f32 op reads
/// them, else the model's), except f32 for
/// - the outputs of average pools and means (overflow-prone sums in f16),
/// - the 4×4 matrices of the MediaPipe custom ops (outputs of `Landmarks2TransformMatrix`, matrix
///   inputs of `TransformTensorBilinear` and `TransformLandmarks`): their translation column is
///   in source pixels (about 100 in face_landmark_with_attention), where an f16 rounding moves
///   every sample and landmark by up to 1/32 pixel; 64 bytes each,
/// - graph outputs, and the tensors read by the ops that produce them: output heads turn small
///   activations into large logits (pose_landmark_full's segmentation reaches -1710), so an f16
///   rounding of their inputs is amplified straight into the result.
pub(crate) fn tensor_precisions(
    graph: &Graph,
    model: Precision,
    ops: &[Precision],
) -> Vec<Precision> {
    let mut out = vec![model; graph.tensors.len()];
    // Graph inputs: f32 if any op reading them is f32, else the model's precision.
    for (op, &p) in graph.ops.iter().zip(ops) {
        for t in op.reads() {
            if p == Precision::F32 && graph.inputs.contains(&t) {
                out[t.index()] = Precision::F32;
            }
        }
    }
    for (op, &p) in graph.ops.iter().zip(ops) {
        for o in &op.outputs {
            out[o.index()] = p;
        }
    }
    for op in &graph.ops {
        if matches!(
            op.kind,
            OpKind::AvgPool2d(_)
                | OpKind::Reduce {
                    kind: ReduceKind::Mean,
                    ..
                }
        ) {
            for o in &op.outputs {
                out[o.index()] = Precision::F32;
            }
        }
    }
    for op in &graph.ops {
        let matrices = match op.kind {
            OpKind::Landmarks2TransformMatrix(_) => op.outputs.as_slice(),
            OpKind::TransformTensorBilinear(_) | OpKind::TransformLandmarks(_) => {
                op.inputs.get(1..2).unwrap_or_default()
            }
            _ => &[],
        };
        for m in matrices {
            if graph.tensor(*m).constant.is_none() {
                out[m.index()] = Precision::F32;
            }
        }
    }
    for op in &graph.ops {
        if op.outputs.iter().any(|o| graph.outputs.contains(o)) {
            for t in op.reads() {
                if graph.tensor(t).constant.is_none() {
                    out[t.index()] = Precision::F32;
                }
            }
        }
    }
    for o in &graph.outputs {
        out[o.index()] = Precision::F32;
    }
    out
}
