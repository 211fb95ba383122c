//! Static costs of ops: FLOPs (2 per multiply-add) and bytes moved, used by `inspect` and by the
//! analyzer to estimate steps that were never measured.

use crate::graph::Graph;
use crate::op::{Activation, Op, OpKind};

/// Static cost of one op.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpCost {
    /// Floating-point operations (a multiply-add counts 2).
    pub flops: u64,
    /// Bytes of constant weights the op reads, in their stored type.
    pub weight_bytes: u64,
    /// Bytes of activations read and written (f32).
    pub activation_bytes: u64,
}

/// Computes the static cost of `op` in `graph`.
pub fn op_cost(graph: &Graph, op: &Op) -> OpCost {
    let numel = |t: crate::TensorId| graph.tensor(t).numel() as u64;
    let out = op.outputs.first().map_or(0, |&o| numel(o));
    let mut weight_bytes = 0u64;
    let mut activation_bytes = 0u64;
    for t in op.reads() {
        let info = graph.tensor(t);
        match &info.constant {
            Some(c) => weight_bytes += c.stored_bytes() as u64,
            None => activation_bytes += 4 * info.numel() as u64,
        }
    }
    activation_bytes += op.outputs.iter().map(|&o| 4 * numel(o)).sum::<u64>();
    let input_shape = |i: usize| {
        op.inputs
            .get(i)
            .map(|t| graph.tensor(*t).shape.clone())
            .unwrap_or_default()
    };
    let macs: u64 = match &op.kind {
        OpKind::Conv2d(_) | OpKind::TransposeConv2d(_) => {
            let f = input_shape(1);
            let per_out = f.get(1..).map_or(0, |s| s.iter().product::<usize>()) as u64;
            if matches!(op.kind, OpKind::TransposeConv2d(_)) {
                // Every input pixel scatters a kh x kw x Co window.
                numel(op.inputs[0])
                    * (f.first().copied().unwrap_or(0)
                        * f.get(1).copied().unwrap_or(0)
                        * f.get(2).copied().unwrap_or(0)) as u64
            } else {
                out * per_out
            }
        }
        OpKind::DepthwiseConv2d { .. } => {
            let f = input_shape(1);
            out * (f.get(1).copied().unwrap_or(0) * f.get(2).copied().unwrap_or(0)) as u64
        }
        OpKind::FullyConnected => {
            let w = input_shape(1);
            out * w.get(1).copied().unwrap_or(0) as u64
        }
        OpKind::MaxPool2d(p) | OpKind::AvgPool2d(p) => out * (p.filter[0] * p.filter[1]) as u64 / 2,
        OpKind::Mean { .. } => op.inputs.first().map_or(0, |&t| numel(t)) / 2,
        OpKind::ResizeBilinear { .. } => out * 4,
        OpKind::Add | OpKind::Sub | OpKind::Mul | OpKind::Prelu | OpKind::Unary(_) => out / 2,
        OpKind::Math(_) | OpKind::Binary(_) | OpKind::Where => out / 2,
        OpKind::Reduce { .. } => op.inputs.first().map_or(0, |&t| numel(t)) / 2,
        // Two passes for the statistics, one for the normalisation.
        OpKind::InstanceNorm { .. } => 2 * out,
        OpKind::Softmax { .. } => 2 * out,
        OpKind::Resize(_) => out * 4,
        OpKind::MatMul => {
            let a = input_shape(0);
            out * a.last().copied().unwrap_or(0) as u64
        }
        _ => 0,
    };
    let epilogue = match op.epilogue.activation {
        Activation::None => 0,
        _ => out,
    } + if op.epilogue.residual.is_some() {
        out
    } else {
        0
    };
    OpCost {
        flops: 2 * macs + epilogue,
        weight_bytes,
        activation_bytes,
    }
}

/// Total FLOPs of convolution-like ops (conv, depthwise, transposed conv, fully connected), the
/// figure MODELS.md lists as "conv GFLOP".
pub fn conv_flops(graph: &Graph) -> u64 {
    graph
        .ops
        .iter()
        .filter(|op| {
            matches!(
                op.kind,
                OpKind::Conv2d(_)
                    | OpKind::DepthwiseConv2d { .. }
                    | OpKind::TransposeConv2d(_)
                    | OpKind::FullyConnected
            )
        })
        .map(|op| op_cost(graph, op).flops)
        .sum()
}
