//! Activation memory plan: every non-constant tensor gets a slot (one GPU buffer each, since a
//! buffer cannot be bound read-only and read-write in one dispatch); tensors whose lifetimes do
//! not overlap share a slot.

use heimdall_ir::Graph;

/// Slot assignment of the activations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryPlan {
    /// Slot of each tensor (`None` for constants and tensors no op touches).
    pub slot_of: Vec<Option<usize>>,
    /// Size in bytes of each slot (the largest tensor it holds, 16-byte aligned).
    pub slot_bytes: Vec<u64>,
    /// Sum of all planned tensors' bytes (what no reuse would need).
    pub total_bytes: u64,
}

impl MemoryPlan {
    /// Bytes of all slots together (peak activation memory).
    pub fn peak_bytes(&self) -> u64 {
        self.slot_bytes.iter().sum()
    }
}

/// Plans slots for `graph` given each tensor's size in bytes. A tensor lives from the op that
/// defines it (graph inputs: before the first op) to its last reader (graph outputs: forever);
/// ops are processed in order and each new tensor takes the best-fitting free slot, growing the
/// largest free one when none is big enough.
pub fn plan(graph: &Graph, bytes: &[u64]) -> MemoryPlan {
    plan_with_aliases(graph, bytes, &vec![None; graph.tensors.len()])
}

/// Like [`plan`], with aliases: `alias[t] = Some(r)` makes tensor `t` share the slot of tensor
/// `r` (a reshape that keeps the bytes, see `GpuModel::compile`), whose lifetime is extended to
/// cover `t`'s. `r` must itself not be an alias, and must be planned (not a constant).
pub fn plan_with_aliases(graph: &Graph, bytes: &[u64], alias: &[Option<usize>]) -> MemoryPlan {
    let n = graph.tensors.len();
    let end = graph.ops.len() + 1;
    let mut first: Vec<Option<usize>> = vec![None; n];
    let mut last = vec![0usize; n];
    for &i in &graph.inputs {
        first[i.index()] = Some(0);
    }
    for (k, op) in graph.ops.iter().enumerate() {
        let t = k + 1;
        for r in op.reads() {
            last[r.index()] = last[r.index()].max(t);
        }
        for o in &op.outputs {
            first[o.index()].get_or_insert(t);
            last[o.index()] = last[o.index()].max(t);
        }
    }
    for &o in &graph.outputs {
        last[o.index()] = end;
    }
    let alias_of = |i: usize| alias.get(i).copied().flatten();
    for i in 0..n {
        if let Some(r) = alias_of(i) {
            last[r] = last[r].max(last[i]);
        }
    }
    let mut order: Vec<usize> = (0..n)
        .filter(|&i| {
            first[i].is_some() && graph.tensors[i].constant.is_none() && alias_of(i).is_none()
        })
        .collect();
    order.sort_by_key(|&i| (first[i], i));
    let mut slot_of = vec![None; n];
    let mut slot_bytes: Vec<u64> = Vec::new();
    let mut busy_until: Vec<usize> = Vec::new();
    let mut total_bytes = 0;
    for i in order {
        let (f, size) = (first[i].unwrap_or(0), bytes[i].next_multiple_of(16).max(16));
        total_bytes += bytes[i];
        let free = (0..slot_bytes.len()).filter(|&s| busy_until[s] < f);
        let fit = free
            .clone()
            .filter(|&s| slot_bytes[s] >= size)
            .min_by_key(|&s| slot_bytes[s]);
        let slot = match fit.or_else(|| free.max_by_key(|&s| slot_bytes[s])) {
            Some(s) => {
                slot_bytes[s] = slot_bytes[s].max(size);
                s
            }
            None => {
                slot_bytes.push(size);
                busy_until.push(0);
                slot_bytes.len() - 1
            }
        };
        busy_until[slot] = last[i];
        slot_of[i] = Some(slot);
    }
    for i in 0..n {
        if let Some(r) = alias_of(i)
            && first[i].is_some()
        {
            slot_of[i] = slot_of[r];
            total_bytes += bytes[i];
        }
    }
    MemoryPlan {
        slot_of,
        slot_bytes,
        total_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heimdall_ir::{DType, Op, OpKind, TensorId, TensorInfo, UnaryKind};

    #[test]
    fn chain_uses_two_slots_and_never_shares_an_ops_input_and_output() {
        let tensors = (0..5)
            .map(|i| TensorInfo {
                name: format!("t{i}"),
                shape: vec![8],
                dtype: DType::F32,
                constant: None,
            })
            .collect();
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
        let p = plan(&g, &[32; 5]);
        assert_eq!(p.total_bytes, 160);
        assert_eq!(p.slot_bytes.len(), 2);
        assert_eq!(p.peak_bytes(), 64);
        for k in 0..4 {
            assert_ne!(p.slot_of[k], p.slot_of[k + 1]);
        }
        // Tensor 2 an alias of tensor 1: they share a slot, and tensor 1 stays alive until
        // tensor 2's reader (op 2), so tensor 3 (written by op 2) cannot take that slot.
        let mut alias = vec![None; 5];
        alias[2] = Some(1);
        let p = plan_with_aliases(&g, &[32; 5], &alias);
        assert_eq!(p.slot_of[2], p.slot_of[1]);
        assert_ne!(p.slot_of[3], p.slot_of[1]);
        assert_ne!(p.slot_of[3], p.slot_of[2]);
        assert_eq!(p.total_bytes, 160);
    }
}
