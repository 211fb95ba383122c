//! The ops the CPU backend runs for a graph, once its fusions (`fuse.rs`: reflect and channel
//! pads; `fuse_tail.rs`: the adds and GELUs after convolutions; `fuse_expand.rs`: the 1x1
//! expansions before depthwise convolutions) rewired them.

use heimdall_ir::{Graph, Op};

use crate::fuse::ReflectPads;
use crate::fuse_expand::Expansions;
use crate::fuse_tail::Tails;

/// The ops the CPU backend runs for `graph`, one per op of the graph in its order, once its
/// own fusions rewired them: a fused reflect pad reads and writes nothing, the instance
/// normalisation or resize writing it writes the pad's output instead of its own, and a
/// convolution reading a pad fused into it reads the pad's input; a per-channel add (and
/// GELU) fused into the convolution before it reads and writes nothing, and the convolution
/// writes its output (`crate::fuse_tail`); a 1x1 expansion fused into the depthwise
/// convolution after it reads and writes nothing, and the depthwise convolution reads its
/// input (`crate::fuse_expand`).
///
/// A backend that hands a partly run model to the CPU (resuming at op `k` with the values ops
/// `0..k` computed elsewhere) must provide exactly the tensors these ops write before `k` and
/// read from `k` on (or that are graph outputs): the others have no storage in a
/// [`crate::CpuModel`] or are never read ([`crate::CpuModel::set_tensor`] refuses a tensor
/// without storage).
pub fn cpu_ops(graph: &Graph) -> Vec<Op> {
    let pads = ReflectPads::find(graph);
    let tails = Tails::find(graph, &pads);
    let expansions = Expansions::find(graph, &pads, &tails);
    (graph.ops.iter().enumerate())
        .map(|(k, op)| expansions.op(k, tails.op(k, pads.op(k, op)), graph))
        .collect()
}
