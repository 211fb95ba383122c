//! Static costs of ops: FLOPs (2 per multiply-add) and bytes moved, used by `inspect` and by the
//! analyzer to estimate steps that were never measured.

use crate::graph::Graph;
use crate::op::{Activation, Op};

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
    let macs = op.kind.macs(&graph.op_shapes(op));
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
        .filter(|op| op.kind.is_conv_like())
        .map(|op| op_cost(graph, op).flops)
        .sum()
}
