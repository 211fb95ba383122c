//! Folds the per-channel scale (and shift) that follows a plain instance normalisation into its
//! own scale and bias inputs.
//!
//! Conditional instance normalisation (multistyle26: the scale and shift are computed from the
//! style weights) arrives as `INSTANCE_NORM(x)` then `MUL` by a `[C]` vector then `ADD` of one:
//! two extra passes over the whole tensor per layer. `INSTANCE_NORM` takes run-time `scale` and
//! `bias` inputs and a fused epilogue in both backends, so the `MUL` and the `ADD` after it can
//! become them, the `ADD`'s own epilogue (the ReLU after it, a residual add, the final logistic)
//! moving to the normalisation.

use crate::graph::Graph;
use crate::ops::OpKind;
use crate::ops::binary::BinaryFn;
use crate::tensor::TensorId;

/// Whether `v` is a per-channel vector of the `[.., C]` tensor `y`: `C` values, every dimension
/// but the last 1, and a last dimension of `C`.
fn per_channel(graph: &Graph, v: TensorId, y: TensorId) -> bool {
    let (vs, ys) = (&graph.tensor(v).shape, &graph.tensor(y).shape);
    let c = ys.last().copied().unwrap_or(0);
    vs.len() <= ys.len() && vs.last() == Some(&c) && vs[..vs.len() - 1].iter().all(|&d| d == 1)
}

/// One fold: `(norm op, consumer op, the vector)` where the consumer is a `kind` binary op of the
/// norm's single-use, non-output result and a per-channel vector ready before the norm runs, and
/// the norm has exactly `inputs` inputs and no epilogue. The consumer has no epilogue either,
/// unless `keep_epilogue`: then the tensors its epilogue reads must be ready before the norm
/// runs too (the norm will read them).
fn find(
    graph: &Graph,
    kind: BinaryFn,
    inputs: usize,
    keep_epilogue: bool,
) -> Option<(usize, usize, TensorId)> {
    let producers = graph.producers();
    let consumers = graph.consumers();
    graph.ops.iter().enumerate().find_map(|(n, norm)| {
        if !matches!(norm.kind, OpKind::InstanceNorm { .. })
            || norm.inputs.len() != inputs
            || !norm.epilogue.is_identity()
            || norm.outputs.len() != 1
        {
            return None;
        }
        let y = norm.outputs[0];
        let [j] = consumers[y.index()][..] else {
            return None;
        };
        let op = &graph.ops[j];
        let ready = |t: TensorId| t != y && producers[t.index()].is_none_or(|p| p < n);
        if op.kind != OpKind::Binary(kind)
            || op.inputs.len() != 2
            || !(op.epilogue.is_identity() || keep_epilogue && op.epilogue.tensors().all(ready))
            || graph.outputs.contains(&y)
        {
            return None;
        }
        let v = if op.inputs[0] == y {
            op.inputs[1]
        } else {
            op.inputs[0]
        };
        (ready(v) && per_channel(graph, v, y)).then_some((n, j, v))
    })
}

/// Folds `MUL(INSTANCE_NORM(x), g)` into `INSTANCE_NORM(x, g)` and then
/// `ADD(INSTANCE_NORM(x, g), h)` with epilogue `e` into `INSTANCE_NORM(x, g, h)` with epilogue
/// `e`, where the normalisation had no scale, bias or epilogue, its result is used by that one op
/// only and is not a graph output, the `MUL` has no epilogue, and `g`/`h` (and the tensors `e`
/// reads: a residual, PReLU slopes) are available before the normalisation runs, `g`/`h`
/// per-channel vectors (`[.., C]` with `C` values). `e(ADD(n, h))` and the normalisation's
/// `e(n + h)` add and activate in the same order; the result differs from the unfused graph
/// only by the scale's rounding: `(x - m) * (inv * g)` instead of `((x - m) * inv) * g`.
/// Returns the number of ops removed.
pub fn fold_norm_affine(graph: &mut Graph) -> usize {
    let mut folded = 0;
    for (kind, inputs, keep_epilogue) in [(BinaryFn::Mul, 1, false), (BinaryFn::Add, 2, true)] {
        while let Some((n, j, v)) = find(graph, kind, inputs, keep_epilogue) {
            let op = graph.ops.remove(j);
            let norm = &mut graph.ops[n];
            norm.inputs.push(v);
            norm.outputs = op.outputs;
            norm.epilogue = op.epilogue;
            folded += 1;
        }
    }
    folded
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::Op;
    use crate::passes::test_graph::{empty, tensor};

    /// `x -> INSTANCE_NORM -> MUL g -> ADD h (activation act) -> out`, `g` computed by a `MUL`
    /// of the graph's second input before the normalisation.
    fn graph(g_shape: &[usize], relu_on_add: bool) -> Graph {
        let mut g = empty();
        let x = tensor(&mut g, &[1, 4, 4, 3], None);
        let s = tensor(&mut g, g_shape, None);
        let two = tensor(&mut g, &[1], Some(vec![2.0]));
        let gv = tensor(&mut g, g_shape, None);
        let h = tensor(&mut g, &[3], Some(vec![0.5, 0.0, -1.0]));
        let (y, z, out) = (
            tensor(&mut g, &[1, 4, 4, 3], None),
            tensor(&mut g, &[1, 4, 4, 3], None),
            tensor(&mut g, &[1, 4, 4, 3], None),
        );
        g.inputs = vec![x, s];
        g.outputs = vec![out];
        g.ops.push(Op::new(
            OpKind::Binary(BinaryFn::Mul),
            vec![s, two],
            vec![gv],
        ));
        g.ops.push(Op::new(
            OpKind::InstanceNorm { epsilon: 1e-5 },
            vec![x],
            vec![y],
        ));
        g.ops
            .push(Op::new(OpKind::Binary(BinaryFn::Mul), vec![gv, y], vec![z]));
        let mut add = Op::new(OpKind::Binary(BinaryFn::Add), vec![z, h], vec![out]);
        if relu_on_add {
            add.epilogue.activation =
                crate::op::Activation::Unary(crate::ops::unary::UnaryKind::Relu);
        }
        g.ops.push(add);
        g.validate().expect("valid test graph");
        g
    }

    #[test]
    fn scale_and_shift_become_inputs() {
        let mut g = graph(&[3], false);
        assert_eq!(fold_norm_affine(&mut g), 2);
        g.validate().expect("still valid");
        assert_eq!(g.ops.len(), 2);
        let norm = &g.ops[1];
        assert!(matches!(norm.kind, OpKind::InstanceNorm { .. }));
        assert_eq!(norm.inputs, vec![TensorId(0), TensorId(3), TensorId(4)]);
        assert_eq!(norm.outputs, g.outputs);
    }

    #[test]
    fn an_add_with_an_activation_takes_it_along() {
        let mut g = graph(&[1, 1, 1, 3], true);
        assert_eq!(fold_norm_affine(&mut g), 2);
        g.validate().expect("still valid");
        assert_eq!(g.ops.len(), 2);
        let norm = &g.ops[1];
        assert_eq!(norm.inputs.len(), 3);
        assert_eq!(
            norm.epilogue.activation,
            crate::op::Activation::Unary(crate::ops::unary::UnaryKind::Relu)
        );
        assert_eq!(norm.outputs, g.outputs);
    }

    /// The residual add of a residual block (fused into the shift's `ADD` by `fuse_residual`)
    /// moves to the normalisation when the residual is ready before it, and keeps the `ADD`
    /// where it is not.
    #[test]
    fn an_add_with_a_residual_folds_only_when_the_residual_is_ready() {
        for early in [true, false] {
            let mut g = graph(&[3], false);
            let r = tensor(&mut g, &[1, 4, 4, 3], None);
            let two = TensorId(2);
            let x = g.inputs[0];
            let at = if early { 0 } else { 2 };
            g.ops.insert(
                at,
                Op::new(OpKind::Binary(BinaryFn::Mul), vec![x, two], vec![r]),
            );
            let add = g.ops.len() - 1;
            g.ops[add].epilogue.residual = Some(r);
            g.validate().expect("valid test graph");
            let before = g.ops.len();
            let folded = fold_norm_affine(&mut g);
            g.validate().expect("still valid");
            assert_eq!(folded, if early { 2 } else { 1 }, "early {early}");
            assert_eq!(g.ops.len(), before - folded);
            let norm = g
                .ops
                .iter()
                .find(|o| matches!(o.kind, OpKind::InstanceNorm { .. }))
                .expect("norm");
            if early {
                assert_eq!(norm.epilogue.residual, Some(r));
                assert_eq!(norm.outputs, g.outputs);
            } else {
                assert!(norm.epilogue.is_identity());
                assert_eq!(g.ops.last().expect("add").epilogue.residual, Some(r));
            }
        }
    }

    #[test]
    fn other_shapes_and_late_vectors_stay() {
        // A vector over H (not per channel) is not a scale.
        let mut g = graph(&[4, 1, 1], false);
        // Broadcasting [4,1,1] against [1,4,4,3] is valid; the fold must refuse it.
        assert_eq!(fold_norm_affine(&mut g), 0);
        // A scale computed after the normalisation cannot become its input.
        let mut g = graph(&[3], false);
        g.ops.swap(0, 1);
        assert_eq!(fold_norm_affine(&mut g), 0);
    }
}
