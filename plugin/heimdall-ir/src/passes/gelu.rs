//! Fuses the exact GELU written out in elementary ops into one `GELU` op.
//!
//! Exporters without a GELU op (paddle2onnx, opsets before 20) write `x * 0.5 * (1 + erf(x /
//! sqrt 2))` as five element-wise ops: five passes over the tensor, and five kernels, where one
//! does. PP-OCRv6_det_small has 13 of them.

use crate::graph::Graph;
use crate::op::Op;
use crate::ops::OpKind;
use crate::ops::binary::BinaryFn;
use crate::ops::unary::UnaryKind;
use crate::tensor::TensorId;

/// Whether `t` is a constant holding the single value `v` (to 1e-6 relative).
fn is_scalar(graph: &Graph, t: TensorId, v: f32) -> bool {
    let info = graph.tensor(t);
    info.numel() == 1
        && info
            .constant
            .as_ref()
            .is_some_and(|c| c.values.len() == 1 && (c.values[0] - v).abs() <= 1e-6 * v.abs())
}

/// The other input of binary op `op` of kind `f` if one input is `t`.
fn other(op: &Op, f: BinaryFn, t: TensorId) -> Option<TensorId> {
    if op.kind != OpKind::Binary(f) || op.inputs.len() != 2 || !op.epilogue.is_identity() {
        return None;
    }
    match (op.inputs[0] == t, op.inputs[1] == t) {
        (true, false) => Some(op.inputs[1]),
        (false, true) => Some(op.inputs[0]),
        _ => None,
    }
}

/// A match: the ops to remove (the last one is replaced by the GELU) and the GELU's input.
struct Match {
    ops: Vec<usize>,
    x: TensorId,
}

/// Matches the chain that starts with op `d` (`x / sqrt 2` or `x * (1 / sqrt 2)`):
/// `e = erf(d)`, `p = e + 1`, then `(x * p) * 0.5` or `x * (p * 0.5)` (any operand order). Every
/// intermediate is used once, by the next op, and is not a graph output.
fn match_at(graph: &Graph, consumers: &[Vec<usize>], d: usize) -> Option<Match> {
    let op = &graph.ops[d];
    if op.inputs.len() != 2 || !op.epilogue.is_identity() {
        return None;
    }
    let x = op.inputs[0];
    let scaled = match op.kind {
        OpKind::Binary(BinaryFn::Div) => is_scalar(graph, op.inputs[1], std::f32::consts::SQRT_2),
        OpKind::Binary(BinaryFn::Mul) => {
            is_scalar(graph, op.inputs[1], std::f32::consts::FRAC_1_SQRT_2)
        }
        _ => false,
    };
    if !scaled {
        return None;
    }
    // The single consumer of an intermediate tensor that is not a graph output.
    let next = |t: TensorId| match consumers[t.index()][..] {
        [j] if !graph.outputs.contains(&t) => Some(j),
        _ => None,
    };
    let e = next(op.outputs[0])?;
    let erf = &graph.ops[e];
    if erf.kind != OpKind::Unary(UnaryKind::Erf) || !erf.epilogue.is_identity() {
        return None;
    }
    let a = next(erf.outputs[0])?;
    let one = other(&graph.ops[a], BinaryFn::Add, erf.outputs[0])?;
    if !is_scalar(graph, one, 1.0) {
        return None;
    }
    let p = graph.ops[a].outputs[0];
    let m = next(p)?;
    let last = next(graph.ops[m].outputs[0])?;
    let mop = &graph.ops[m];
    let ok = match other(mop, BinaryFn::Mul, p) {
        // (x * p) * 0.5
        Some(t) if t == x => other(&graph.ops[last], BinaryFn::Mul, mop.outputs[0])
            .is_some_and(|h| is_scalar(graph, h, 0.5)),
        // x * (p * 0.5)
        Some(h) if is_scalar(graph, h, 0.5) => {
            other(&graph.ops[last], BinaryFn::Mul, mop.outputs[0]) == Some(x)
        }
        _ => false,
    };
    ok.then(|| Match {
        ops: vec![d, e, a, m, last],
        x,
    })
}

/// Replaces every `x * 0.5 * (1 + erf(x / sqrt 2))` written as `DIV` (or `MUL` by `1/sqrt 2`),
/// `ERF`, `ADD 1`, `MUL x`, `MUL 0.5` (in either order of the last two, operands in any order)
/// by one `GELU` of `x`, where the intermediates are used only by the chain and are not graph
/// outputs. The result differs from the unfused graph only by rounding. Returns the number of
/// GELUs made.
pub fn fuse_gelu(graph: &mut Graph) -> usize {
    let mut fused = 0;
    loop {
        let consumers = graph.consumers();
        let Some(found) = (0..graph.ops.len()).find_map(|d| match_at(graph, &consumers, d)) else {
            break;
        };
        let last = *found.ops.last().expect("a match has five ops");
        let out = graph.ops[last].outputs.clone();
        let source = graph.ops[found.ops[0]].source;
        let mut gelu = Op::new(OpKind::Unary(UnaryKind::Gelu), vec![found.x], out);
        gelu.source = source;
        graph.ops[last] = gelu;
        let mut remove = found.ops[..found.ops.len() - 1].to_vec();
        remove.sort_unstable_by(|a, b| b.cmp(a));
        for i in remove {
            graph.ops.remove(i);
        }
        fused += 1;
    }
    fused
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::test_graph::{empty, tensor};

    /// `x -> RELU -> GELU chain -> out`; `half_first`: `x * (p * 0.5)` instead of
    /// `(x * p) * 0.5`; `scale`: the constant `x` is divided by.
    fn graph(half_first: bool, scale: f32) -> Graph {
        let mut g = empty();
        let shape = [1, 2, 2, 8];
        let input = tensor(&mut g, &shape, None);
        let x = tensor(&mut g, &shape, None);
        let c = tensor(&mut g, &[], Some(vec![scale]));
        let one = tensor(&mut g, &[1], Some(vec![1.0]));
        let half = tensor(&mut g, &[], Some(vec![0.5]));
        let [d, e, p, q, out] = [0; 5].map(|_| tensor(&mut g, &shape, None));
        g.inputs = vec![input];
        g.outputs = vec![out];
        let bin = |f, a, b, y| Op::new(OpKind::Binary(f), vec![a, b], vec![y]);
        g.ops.push(Op::new(
            OpKind::Unary(UnaryKind::Relu),
            vec![input],
            vec![x],
        ));
        g.ops.push(bin(BinaryFn::Div, x, c, d));
        g.ops
            .push(Op::new(OpKind::Unary(UnaryKind::Erf), vec![d], vec![e]));
        g.ops.push(bin(BinaryFn::Add, one, e, p));
        if half_first {
            g.ops.push(bin(BinaryFn::Mul, p, half, q));
            g.ops.push(bin(BinaryFn::Mul, x, q, out));
        } else {
            g.ops.push(bin(BinaryFn::Mul, p, x, q));
            g.ops.push(bin(BinaryFn::Mul, q, half, out));
        }
        g.validate().expect("valid test graph");
        g
    }

    #[test]
    fn both_orders_become_one_gelu() {
        for half_first in [false, true] {
            let mut g = graph(half_first, std::f32::consts::SQRT_2);
            assert_eq!(fuse_gelu(&mut g), 1, "half_first {half_first}");
            g.validate().expect("still valid");
            assert_eq!(g.ops.len(), 2);
            assert_eq!(g.ops[1].kind, OpKind::Unary(UnaryKind::Gelu));
            assert_eq!(g.ops[1].inputs, vec![TensorId(1)]);
            assert_eq!(g.ops[1].outputs, g.outputs);
        }
    }

    #[test]
    fn other_constants_and_shared_intermediates_stay() {
        // Not sqrt 2: not a GELU.
        let mut g = graph(false, 2.0);
        assert_eq!(fuse_gelu(&mut g), 0);
        // The `1 + erf` sum is also a graph output: it must stay computed.
        let mut g = graph(false, std::f32::consts::SQRT_2);
        g.outputs.push(TensorId(7));
        assert_eq!(fuse_gelu(&mut g), 0);
    }
}
