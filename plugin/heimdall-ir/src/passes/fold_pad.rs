//! Folds explicit spatial zero padding into the convolutions that consume it.

use super::rewrite::{identity_rename, rebuild};
use crate::graph::Graph;
use crate::ops::OpKind;

/// A zero `PAD` of a 4-D tensor that pads only height and width, whose output feeds only regular or
/// depthwise convolutions (as their data input) and is no graph output, becomes extra padding of
/// those convolutions. Returns the number of `PAD` ops removed.
pub fn fold_pad(graph: &mut Graph) -> usize {
    let consumers = graph.consumers();
    let mut rename = identity_rename(graph);
    let mut ops: Vec<Option<crate::Op>> = graph.ops.iter().cloned().map(Some).collect();
    let mut folded = 0;
    for i in 0..ops.len() {
        let Some(op) = ops[i].clone() else { continue };
        let OpKind::Pad { pads, mode } = &op.kind else {
            continue;
        };
        if !mode.is_zero() {
            continue;
        }
        let out = op.outputs[0];
        if pads.len() != 4 || pads[0] != [0, 0] || pads[3] != [0, 0] || graph.outputs.contains(&out)
        {
            continue;
        }
        let users = &consumers[out.index()];
        let all_convs = !users.is_empty()
            && users.iter().all(|&u| {
                ops[u].as_ref().is_some_and(|c| {
                    matches!(c.kind, OpKind::Conv2d(_) | OpKind::DepthwiseConv2d { .. })
                        && c.inputs[0] == out
                        && !c.inputs[1..].contains(&out)
                        && !c.epilogue.tensors().any(|t| t == out)
                })
            });
        if !all_convs {
            continue;
        }
        for &u in users {
            let c = ops[u].as_mut().expect("checked above");
            let attrs = match &mut c.kind {
                OpKind::Conv2d(a) => a,
                OpKind::DepthwiseConv2d { attrs, .. } => attrs,
                _ => unreachable!("checked above"),
            };
            attrs.pad.top += pads[1][0];
            attrs.pad.bottom += pads[1][1];
            attrs.pad.left += pads[2][0];
            attrs.pad.right += pads[2][1];
        }
        rename[out.index()] = op.inputs[0];
        ops[i] = None;
        folded += 1;
    }
    rebuild(graph, ops, &rename);
    folded
}
