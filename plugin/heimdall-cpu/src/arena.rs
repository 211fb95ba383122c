//! Activation memory plan: one arena, offsets assigned by liveness so that tensors whose
//! lifetimes do not overlap share memory (greedy by size, as TFLite's arena planner).

use heimdall_ir::{Graph, Op};

/// Where each non-constant tensor lives in the arena.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArenaPlan {
    /// Offset (in f32 elements) of each tensor in the arena; `None` for constants and for
    /// tensors no op touches.
    pub offsets: Vec<Option<usize>>,
    /// Arena length in f32 elements.
    pub len: usize,
    /// Sum of the sizes of all planned tensors, in f32 elements (what no reuse would need).
    pub total: usize,
}

/// Alignment of every tensor in the arena, in elements (64 bytes).
const ALIGN: usize = 16;

/// Plans the arena for `graph`: a tensor is live from the op that defines it (graph inputs:
/// before the first op) to its last reader (graph outputs: to the end).
pub fn plan_arena(graph: &Graph) -> ArenaPlan {
    plan_ops(graph, &graph.ops)
}

/// Plans the arena for `ops` in place of `graph`'s own (one per op of the graph, over its
/// tensors): the ops the CPU runs once its own fusions rewired them (`crate::fuse`).
pub(crate) fn plan_ops(graph: &Graph, ops: &[Op]) -> ArenaPlan {
    let n = graph.tensors.len();
    let mut first: Vec<Option<usize>> = vec![None; n];
    let mut last: Vec<usize> = vec![0; n];
    for &i in &graph.inputs {
        first[i.index()] = Some(0);
    }
    for (k, op) in ops.iter().enumerate() {
        // Op k occupies time slot k + 1; inputs are defined at slot 0.
        let t = k + 1;
        for r in op.reads() {
            last[r.index()] = last[r.index()].max(t);
        }
        for o in &op.outputs {
            first[o.index()].get_or_insert(t);
            last[o.index()] = last[o.index()].max(t);
        }
    }
    let end = ops.len() + 1;
    for &o in &graph.outputs {
        last[o.index()] = end;
    }
    for &i in &graph.inputs {
        last[i.index()] = last[i.index()].max(1);
    }
    let mut order: Vec<usize> = (0..n)
        .filter(|&i| first[i].is_some() && graph.tensors[i].constant.is_none())
        .collect();
    let size = |i: usize| graph.tensors[i].numel().next_multiple_of(ALIGN).max(ALIGN);
    order.sort_by_key(|&i| (std::cmp::Reverse(size(i)), first[i], i));
    let mut offsets = vec![None; n];
    let mut placed: Vec<(usize, usize, usize, usize)> = Vec::new(); // (offset, len, first, last)
    let mut total = 0;
    let mut len = 0;
    for i in order {
        let (f, l, s) = (first[i].unwrap_or(0), last[i], size(i));
        total += graph.tensors[i].numel();
        let mut busy: Vec<(usize, usize)> = placed
            .iter()
            .filter(|p| p.2 <= l && f <= p.3)
            .map(|p| (p.0, p.0 + p.1))
            .collect();
        busy.sort_unstable();
        let mut offset = 0;
        for (a, b) in busy {
            if offset + s <= a {
                break;
            }
            offset = offset.max(b);
        }
        placed.push((offset, s, f, l));
        offsets[i] = Some(offset);
        len = len.max(offset + s);
    }
    ArenaPlan {
        offsets,
        len,
        total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heimdall_ir::{Op, OpKind, TensorId, TensorInfo, UnaryKind};

    fn t(name: &str, n: usize) -> TensorInfo {
        TensorInfo {
            name: name.into(),
            shape: vec![n],
            dtype: heimdall_ir::DType::F32,
            constant: None,
        }
    }

    #[test]
    fn chain_reuses_memory_and_never_overlaps_live_tensors() {
        // x -> a -> b -> c -> y, each 32 elements: at most two are live at once.
        let tensors = ["x", "a", "b", "c", "y"].iter().map(|n| t(n, 32)).collect();
        let ops = (0..4)
            .map(|i| {
                Op::new(
                    OpKind::Unary(UnaryKind::Relu),
                    vec![TensorId(i)],
                    vec![TensorId(i + 1)],
                )
            })
            .collect();
        let g = Graph {
            name: "chain".into(),
            tensors,
            ops,
            inputs: vec![TensorId(0)],
            outputs: vec![TensorId(4)],
        };
        let p = plan_arena(&g);
        assert_eq!(p.total, 160);
        assert_eq!(p.len, 64, "two 32-element slots suffice for a chain");
        for k in 0..4 {
            assert_ne!(
                p.offsets[k],
                p.offsets[k + 1],
                "an op's input and output must not share memory"
            );
        }
    }
}
