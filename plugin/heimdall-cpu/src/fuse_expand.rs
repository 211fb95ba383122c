//! The inverted residual block's 1x1 expansion fused into the depthwise convolution after it
//! (a CPU fusion, as `crate::fuse`'s: one step per op of the graph, the shared IR untouched).
//!
//! A 1x1 stride-1 unpadded `CONV_2D` whose output only a `DEPTHWISE_CONV_2D` reads (as its
//! input, nowhere else) becomes a step that does nothing; the depthwise convolution reads the
//! expansion's input and makes the expanded rows its output rows read as it goes
//! ([`crate::ops::expand_dw`]), with the separate ops' operations in their order, so the
//! output has their bits. The expanded tensor has no storage; the expansion's input lives
//! until the depthwise convolution has run (a run that stops between the two resumes at the
//! depthwise convolution, which reads it).
//!
//! Only where the expanded tensor is large: at least [`MIN_VALUES`] values (below that it
//! stays in the second-level cache between the two ops anyway), and at least
//! [`ROWS_PER_REPEAT`] rows for each row a cut between two threads' parts makes twice (a
//! 3x3 stride-2 window shares one row with the next output row's, a 3x3 stride-1 window two,
//! a 5x5 stride-1 window four). On hand_landmark_lite that is three pairs: 112x112x64 into a
//! 3x3 stride-2 window, 56x56x96 into a 3x3 and 28x28x144 into a 3x3 stride-2 one; not the
//! 5x5 windows at 56x56 (stride 2) and 28x28, nor the blocks at 14x14 and 7x7.

use heimdall_ir::{Activation, Graph, Op, OpKind, Pad2d};

use crate::fuse::ReflectPads;
use crate::fuse_tail::Tails;
use crate::kernels::Act;

/// Fewest values of an expanded tensor worth fusing (128 KiB of `f32`).
pub(crate) const MIN_VALUES: usize = 1 << 15;

/// Fewest expanded rows per row a cut repeats.
pub(crate) const ROWS_PER_REPEAT: usize = 24;

/// The 1x1 expansions of a graph fused into the depthwise convolutions after them.
#[derive(Clone, Debug, Default)]
pub(crate) struct Expansions {
    /// Per op: an expansion whose step does nothing.
    fused: Vec<bool>,
    /// Per op: for a depthwise convolution, the expansion it took over.
    taken: Vec<Option<usize>>,
}

impl Expansions {
    /// Every fusable pair of `graph` (whose pads and tails `pads` and `tails` fuse): a
    /// `CONV_2D` of an `[1, H, W, C]` tensor with a constant `1 x 1` filter (and bias), stride
    /// 1, no padding, neither fused nor taking a tail, no residual and no activation or one of
    /// [`Act::of`]; whose output (not a graph output, large: see the module) only a
    /// `DEPTHWISE_CONV_2D` reads, as its input 0 and nowhere else (not its epilogue), with
    /// constant weights, a channel multiplier of 1, neither fused nor taking a tail.
    pub(crate) fn find(graph: &Graph, pads: &ReflectPads, tails: &Tails) -> Expansions {
        let n = graph.ops.len();
        let mut found = Expansions {
            fused: vec![false; n],
            taken: vec![None; n],
        };
        let consumers = graph.consumers();
        let free = |k: usize| {
            !pads.is_fused(k)
                && pads.source(k).is_none()
                && pads.padded_output(k).is_none()
                && pads.channel_padded(k).is_none()
                && !tails.is_fused(k)
                && !tails.takes(k)
        };
        let constant_weights = |op: &Op| {
            op.inputs[1..]
                .iter()
                .all(|&t| (graph.tensor(t).constant.as_ref()).is_some_and(|c| c.sparsity.is_none()))
        };
        for (k, op) in graph.ops.iter().enumerate() {
            let (OpKind::Conv2d(a), [e], Some(&x)) = (&op.kind, &op.outputs[..], op.inputs.first())
            else {
                continue;
            };
            let act_ok = match op.epilogue.activation {
                Activation::None => true,
                Activation::Unary(u) => Act::of(u).is_some(),
                Activation::Prelu(_) => false,
            };
            let xs = &graph.tensor(x).shape;
            let es = &graph.tensor(*e).shape;
            let pointwise = op.inputs.len() >= 2
                && graph.tensor(op.inputs[1]).shape.get(1..3) == Some(&[1, 1][..])
                && a.stride == [1, 1]
                && a.pad == Pad2d::default()
                && xs.len() == 4
                && es.len() == 4
                && xs[0] == 1
                && xs[1..3] == es[1..3];
            if !free(k)
                || !act_ok
                || !pointwise
                || op.epilogue.residual.is_some()
                || !constant_weights(op)
                || graph.outputs.contains(e)
                || es.iter().product::<usize>() < MIN_VALUES
            {
                continue;
            }
            let [j] = consumers[e.index()][..] else {
                continue;
            };
            let d = &graph.ops[j];
            let OpKind::DepthwiseConv2d { attrs, multiplier } = &d.kind else {
                continue;
            };
            let k_h = d
                .inputs
                .get(1)
                .and_then(|&f| graph.tensor(f).shape.get(1).copied())
                .unwrap_or(0);
            let reach = (k_h.max(1) - 1) * attrs.dilation[0] + 1;
            let repeats = reach.saturating_sub(attrs.stride[0]).max(1);
            if j > k
                && k_h > 0
                && free(j)
                && *multiplier == 1
                && constant_weights(d)
                && d.inputs[0] == *e
                && !d.inputs[1..].contains(e)
                && !d.epilogue.tensors().any(|t| t == *e)
                && es[1] >= ROWS_PER_REPEAT * repeats
            {
                found.fused[k] = true;
                found.taken[j] = Some(k);
            }
        }
        found
    }

    /// Whether op `k` is a fused expansion (its step does nothing).
    pub(crate) fn is_fused(&self, k: usize) -> bool {
        self.fused.get(k).copied().unwrap_or(false)
    }

    /// For a depthwise convolution that took an expansion over: that op's index.
    pub(crate) fn expansion(&self, k: usize) -> Option<usize> {
        self.taken.get(k).copied().flatten()
    }

    /// The op the CPU runs for op `k` of `graph` (`op`, as the pads and tails rewired it): a
    /// fused expansion reads and writes nothing, the depthwise convolution that took it over
    /// reads its input.
    pub(crate) fn op(&self, k: usize, op: Op, graph: &Graph) -> Op {
        let mut op = op;
        if self.is_fused(k) {
            op.inputs.clear();
            op.outputs.clear();
            op.epilogue = heimdall_ir::Epilogue::default();
        } else if let Some(e) = self.expansion(k) {
            op.inputs[0] = graph.ops[e].inputs[0];
        }
        op
    }
}
