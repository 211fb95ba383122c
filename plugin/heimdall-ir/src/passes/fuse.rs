//! Fuses residual adds and activations into the op producing their input.

use crate::graph::Graph;
use crate::op::Activation;
use crate::ops::OpKind;
use crate::ops::binary::BinaryFn;
use crate::shape::broadcast;

/// `ADD(p, r)` where `p` is the single-use, non-output result of an op that accepts an epilogue
/// and has none yet, `r` has the same shape and is available before that op runs: the producer
/// gets `residual = r` and the `ADD`'s own activation, and writes the `ADD`'s output. Returns the
/// number of `ADD` ops removed.
pub fn fuse_residual(graph: &mut Graph) -> usize {
    let mut fused = 0;
    loop {
        let producers = graph.producers();
        let consumers = graph.consumers();
        let mut done = None;
        'ops: for (i, op) in graph.ops.iter().enumerate() {
            if op.kind != OpKind::Binary(BinaryFn::Add)
                || op.inputs.len() != 2
                || op.epilogue.residual.is_some()
            {
                continue;
            }
            let out_shape = &graph.tensor(op.outputs[0]).shape;
            for (a, b) in [(op.inputs[0], op.inputs[1]), (op.inputs[1], op.inputs[0])] {
                if a == b
                    || &graph.tensor(a).shape != out_shape
                    || &graph.tensor(b).shape != out_shape
                {
                    continue;
                }
                let Some(p) = producers[a.index()] else {
                    continue;
                };
                let prod = &graph.ops[p];
                let single_use = consumers[a.index()] == [i] && !graph.outputs.contains(&a);
                let b_ready = producers[b.index()].is_none_or(|bp| bp < p);
                if prod.kind.accepts_epilogue()
                    && prod.epilogue.is_identity()
                    && prod.outputs.len() == 1
                    && single_use
                    && b_ready
                {
                    done = Some((i, p, b));
                    break 'ops;
                }
            }
        }
        let Some((add, p, residual)) = done else {
            break;
        };
        let add_op = graph.ops.remove(add);
        let prod = &mut graph.ops[p];
        prod.epilogue.residual = Some(residual);
        prod.epilogue.activation = add_op.epilogue.activation;
        prod.outputs = add_op.outputs;
        fused += 1;
    }
    fused
}

/// An activation op (ReLU, ReLU6, ReLU-1..1, logistic, hard-swish, tanh, or PReLU with a constant
/// alpha) whose input is the single-use, non-output result of an op that accepts an epilogue and
/// has no activation yet, becomes that op's epilogue activation. Returns the number removed.
pub fn fuse_activation(graph: &mut Graph) -> usize {
    let mut fused = 0;
    loop {
        let producers = graph.producers();
        let consumers = graph.consumers();
        let mut done = None;
        for (i, op) in graph.ops.iter().enumerate() {
            let act = match &op.kind {
                OpKind::Unary(u) if u.fusable() => Activation::Unary(*u),
                OpKind::Binary(BinaryFn::Prelu) if op.inputs.len() == 2 => {
                    let alpha = op.inputs[1];
                    let x = &graph.tensor(op.inputs[0]).shape;
                    let alpha_len = graph.tensor(alpha).numel();
                    let per_channel = alpha_len == 1 || Some(&alpha_len) == x.last();
                    if graph.tensor(alpha).constant.is_none()
                        || !per_channel
                        || broadcast(x, &graph.tensor(alpha).shape).as_ref() != Some(x)
                    {
                        continue;
                    }
                    Activation::Prelu(alpha)
                }
                _ => continue,
            };
            if !op.epilogue.is_identity() {
                continue;
            }
            let x = op.inputs[0];
            let Some(p) = producers[x.index()] else {
                continue;
            };
            let prod = &graph.ops[p];
            if prod.kind.accepts_epilogue()
                && prod.epilogue.activation == Activation::None
                && prod.outputs.len() == 1
                && consumers[x.index()] == [i]
                && !graph.outputs.contains(&x)
            {
                done = Some((i, p, act));
                break;
            }
        }
        let Some((i, p, act)) = done else { break };
        let act_op = graph.ops.remove(i);
        let prod = &mut graph.ops[p];
        prod.epilogue.activation = act;
        prod.outputs = act_op.outputs;
        fused += 1;
    }
    fused
}
