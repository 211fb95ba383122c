//! Rewriting helpers shared by the passes: renaming tensors and dropping ops.

use crate::graph::Graph;
use crate::op::{Activation, Op};
use crate::tensor::TensorId;

/// Removes the ops marked `None` and renames tensors read by the remaining ops.
pub(crate) fn rebuild(graph: &mut Graph, ops: Vec<Option<Op>>, rename: &[TensorId]) {
    let r = |t: &mut TensorId| *t = rename[t.index()];
    graph.ops = ops
        .into_iter()
        .flatten()
        .map(|mut op| {
            op.inputs.iter_mut().for_each(r);
            if let Some(t) = op.epilogue.residual.as_mut() {
                r(t);
            }
            if let Activation::Prelu(t) = &mut op.epilogue.activation {
                r(t);
            }
            op
        })
        .collect();
}

/// Identity renaming table.
pub(crate) fn identity_rename(graph: &Graph) -> Vec<TensorId> {
    (0..graph.tensors.len() as u32).map(TensorId).collect()
}
