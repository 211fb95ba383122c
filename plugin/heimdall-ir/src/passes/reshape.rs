//! Drops reshapes that change nothing their consumers can see.

use super::rewrite::{identity_rename, rebuild};
use crate::graph::Graph;
use crate::ops::OpKind;

/// A reshape is dropped (its consumers read its input instead) when its output is no graph
/// output and either the shapes are equal, or every consumer flattens its input anyway (fully
/// connected, another reshape), or the shapes differ only by leading unit dimensions and every
/// consumer is element-wise. Returns the number removed.
pub fn drop_reshapes(graph: &mut Graph) -> usize {
    let consumers = graph.consumers();
    let mut rename = identity_rename(graph);
    let mut ops: Vec<Option<crate::Op>> = graph.ops.iter().cloned().map(Some).collect();
    let mut dropped = 0;
    for i in 0..ops.len() {
        let Some(op) = &ops[i] else { continue };
        if op.kind != OpKind::Reshape {
            continue;
        }
        let (x, out) = (rename[op.inputs[0].index()], op.outputs[0]);
        if graph.outputs.contains(&out) {
            continue;
        }
        let (xs, os) = (&graph.tensor(x).shape, &graph.tensor(out).shape);
        let users = &consumers[out.index()];
        let strip = |s: &[usize]| {
            s.iter()
                .copied()
                .skip_while(|&d| d == 1)
                .collect::<Vec<_>>()
        };
        let user_is =
            |f: &dyn Fn(&crate::Op) -> bool| users.iter().all(|&u| ops[u].as_ref().is_some_and(f));
        let flattening = user_is(&|c| {
            matches!(c.kind, OpKind::FullyConnected | OpKind::Reshape)
                && c.inputs[0] == out
                && !c.inputs[1..].contains(&out)
        });
        let elementwise = strip(xs) == strip(os)
            && user_is(&|c| {
                let elementwise = match c.kind {
                    OpKind::Binary(f) => f.accepts_epilogue(),
                    OpKind::Unary(u) => u.fusable(),
                    _ => false,
                };
                elementwise && c.epilogue.residual != Some(out)
            });
        if xs == os || flattening || elementwise {
            rename[out.index()] = x;
            ops[i] = None;
            dropped += 1;
        }
    }
    rebuild(graph, ops, &rename);
    dropped
}
