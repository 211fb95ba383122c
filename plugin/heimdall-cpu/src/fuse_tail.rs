//! The per-channel `ADD` of a constant after a convolution, and a `GELU` after that add, fused
//! into the convolution (a CPU fusion, as `crate::fuse`'s: one step per op of the graph, the
//! shared IR untouched).
//!
//! PP-OCRv6's ONNX export keeps each folded batch normalisation's shift apart from the
//! convolution: a `CONV_2D`, `DEPTHWISE_CONV_2D` or `TRANSPOSE_CONV` without bias, then an
//! `ADD` of a `[C]` constant, which carries the block's residual and activation (the IR's
//! passes fuse them into the add), and in the feed-forward blocks a `GELU` after it. Each is a pass over the whole
//! tensor; fused, the convolution applies them to each block of its output while it is in
//! cache ([`crate::kernels::Tail`]), with the separate ops' operations in their order, so the
//! output has their bits (not folded into the convolution's bias, which the products start
//! from: that would round differently). The add's and the GELU's steps then do nothing, and the
//! convolution writes the last fused op's output; the tensors between them have no storage.

use heimdall_ir::{Activation, BinaryFn, Epilogue, Graph, Op, OpKind, TensorId, UnaryKind};

use crate::fuse::ReflectPads;
use crate::kernels::Tail;

/// What a convolution took over: the add's constant, whether a GELU follows, the tensor it
/// writes and the epilogue it applies (the add's).
#[derive(Clone, Copy, Debug)]
struct Taken {
    shift: TensorId,
    gelu: bool,
    output: TensorId,
    epilogue: Epilogue,
}

/// The adds and GELUs of a graph fused into the convolutions before them.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tails {
    /// Per op: an add or GELU whose step does nothing.
    fused: Vec<bool>,
    /// Per op: for a convolution, what it took over.
    taken: Vec<Option<Taken>>,
}

impl Tails {
    /// Every fusable tail of `graph` (whose reflect pads `pads` fuses): a `CONV_2D`,
    /// `DEPTHWISE_CONV_2D` or `TRANSPOSE_CONV` with constant weights, no epilogue and no fused reflect pad, whose
    /// output (not a graph output) only an `ADD` reads, as one operand, the other a constant of
    /// one value per output channel (shape `[.., 1, C]`), the add's output of the
    /// convolution's shape and its residual (if any) written before the convolution runs; and
    /// the `GELU` reading that add's output, if it is its only reader, not a graph output, and
    /// the add has no activation.
    pub(crate) fn find(graph: &Graph, pads: &ReflectPads) -> Tails {
        let n = graph.ops.len();
        let mut tails = Tails {
            fused: vec![false; n],
            taken: vec![None; n],
        };
        let consumers = graph.consumers();
        let producers = graph.producers();
        let single_reader = |t: TensorId| match consumers[t.index()][..] {
            [j] if !graph.outputs.contains(&t) => Some(j),
            _ => None,
        };
        for (p, op) in graph.ops.iter().enumerate() {
            let conv = matches!(
                op.kind,
                OpKind::Conv2d(_) | OpKind::DepthwiseConv2d { .. } | OpKind::TransposeConv2d(_)
            );
            let [y] = op.outputs[..] else { continue };
            if !conv
                || !op.epilogue.is_identity()
                || pads.source(p).is_some()
                || op.inputs[1..]
                    .iter()
                    .any(|&t| graph.tensor(t).constant.is_none())
            {
                continue;
            }
            let Some(j) = single_reader(y) else { continue };
            let Some(shift) = channel_add(graph, &graph.ops[j], y) else {
                continue;
            };
            let add = &graph.ops[j];
            let residual_ready = add
                .epilogue
                .residual
                .is_none_or(|r| r != y && producers[r.index()].is_none_or(|q| q < p));
            if pads.channel_padded(j).is_some() || !residual_ready {
                continue;
            }
            let z = add.outputs[0];
            let gelu = (add.epilogue.activation == Activation::None)
                .then(|| single_reader(z))
                .flatten()
                .filter(|&g| {
                    let g = &graph.ops[g];
                    g.kind == OpKind::Unary(UnaryKind::Gelu)
                        && g.inputs == [z]
                        && g.outputs.len() == 1
                        && g.epilogue.is_identity()
                });
            tails.fused[j] = true;
            if let Some(g) = gelu {
                tails.fused[g] = true;
            }
            tails.taken[p] = Some(Taken {
                shift,
                gelu: gelu.is_some(),
                output: gelu.map_or(z, |g| graph.ops[g].outputs[0]),
                epilogue: add.epilogue,
            });
        }
        tails
    }

    /// Whether op `k` is a fused add or GELU (its step does nothing).
    pub(crate) fn is_fused(&self, k: usize) -> bool {
        self.fused.get(k).copied().unwrap_or(false)
    }

    /// Whether op `k` is a convolution that took a tail over.
    pub(crate) fn takes(&self, k: usize) -> bool {
        matches!(self.taken.get(k), Some(Some(_)))
    }

    /// For a convolution that took a tail over: the tail it applies.
    pub(crate) fn tail(&self, k: usize, graph: &Graph) -> Option<Tail> {
        let t = self.taken.get(k).copied().flatten()?;
        let values = &graph.tensor(t.shift).constant.as_ref()?.values;
        Some(Tail {
            shift: values.clone(),
            gelu: t.gelu,
        })
    }

    /// The op the CPU runs for op `k` (`op`, as the reflect pads rewired it): a fused add or
    /// GELU reads and writes nothing, a convolution that took a tail over writes its last op's
    /// output with the add's epilogue.
    pub(crate) fn op(&self, k: usize, op: Op) -> Op {
        let mut op = op;
        if self.is_fused(k) {
            op.inputs.clear();
            op.outputs.clear();
            op.epilogue = Epilogue::default();
        } else if let Some(t) = self.taken.get(k).copied().flatten() {
            op.outputs = vec![t.output];
            op.epilogue = t.epilogue;
        }
        op
    }
}

/// The constant `op` adds to `y` if it is an `ADD` of `y` and a dense constant of one value
/// per channel of `y` (`[.., 1, C]`, rank at most `y`'s), writing one tensor of `y`'s shape.
fn channel_add(graph: &Graph, op: &Op, y: TensorId) -> Option<TensorId> {
    let [u, v] = op.inputs[..] else { return None };
    if op.kind != OpKind::Binary(BinaryFn::Add) || (u == y) == (v == y) || op.outputs.len() != 1 {
        return None;
    }
    let k = if u == y { v } else { u };
    let (ys, ks) = (&graph.tensor(y).shape, &graph.tensor(k).shape);
    let dense = graph
        .tensor(k)
        .constant
        .as_ref()
        .is_some_and(|c| c.sparsity.is_none());
    let per_channel =
        ks.len() <= ys.len() && ks.last() == ys.last() && ks.iter().rev().skip(1).all(|&d| d == 1);
    (dense && per_channel && graph.tensor(op.outputs[0]).shape == *ys).then_some(k)
}
