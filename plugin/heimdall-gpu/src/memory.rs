//! Activation memory plan: every non-constant tensor gets a slot (one GPU buffer each, since a
//! buffer cannot be bound read-only and read-write in one dispatch); tensors whose lifetimes do
//! not overlap share a slot.

use heimdall_ir::Graph;

/// Where an aliased tensor lives: inside the slot of tensor `root`, `offset` bytes in (a reshape
/// that keeps the bytes at offset 0; an input of a free concatenation at its channel slices).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Alias {
    /// The tensor owning the slot (itself not an alias).
    pub root: usize,
    /// Byte offset of the aliased tensor within the root's slot.
    pub offset: u64,
}

/// Slot assignment of the activations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryPlan {
    /// Slot of each tensor (`None` for constants and tensors no op touches).
    pub slot_of: Vec<Option<usize>>,
    /// The byte range `(offset, size)` of each aliased tensor within its slot (`None` for the
    /// tensors owning their slot, which are bound whole).
    pub view_of: Vec<Option<(u64, u64)>>,
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

/// Like [`plan`], with aliases: `alias[t] = Some(a)` places tensor `t` inside the slot of tensor
/// `a.root` at byte `a.offset` (see `GpuModel::compile`). The root's lifetime is extended to
/// cover every alias's (it is born with its first-written alias: the first producer of a free
/// concatenation's inputs) and its slot to hold every alias's byte range. `a.root` must itself
/// not be an alias, and must be planned (not a constant).
pub fn plan_with_aliases(graph: &Graph, bytes: &[u64], alias: &[Option<Alias>]) -> MemoryPlan {
    plan_persistent(graph, bytes, alias, &[])
}

/// Like [`plan_with_aliases`], where tensors with `persistent[t]` keep a slot of their own for
/// the model's whole life (the convolution cache's outputs, which later runs partly keep).
pub fn plan_persistent(
    graph: &Graph,
    bytes: &[u64],
    alias: &[Option<Alias>],
    persistent: &[bool],
) -> MemoryPlan {
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
    // Bytes each root's slot must hold: its own, and every alias's range.
    let mut need: Vec<u64> = bytes.to_vec();
    for i in 0..n {
        if let Some(a) = alias_of(i)
            && first[i].is_some()
        {
            let r = a.root;
            last[r] = last[r].max(last[i]);
            let fi = first[i].unwrap_or(0);
            first[r] = Some(first[r].map_or(fi, |f| f.min(fi)));
            need[r] = need[r].max(a.offset + bytes[i]);
        }
    }
    for i in (0..n).filter(|&i| persistent.get(i).copied().unwrap_or(false)) {
        let r = alias_of(i).map_or(i, |a| a.root);
        if first[r].is_some() {
            first[r] = Some(0);
            last[r] = end;
        }
    }
    let mut order: Vec<usize> = (0..n)
        .filter(|&i| {
            first[i].is_some() && graph.tensors[i].constant.is_none() && alias_of(i).is_none()
        })
        .collect();
    order.sort_by_key(|&i| (first[i], i));
    let mut slot_of = vec![None; n];
    let mut view_of = vec![None; n];
    let mut slot_bytes: Vec<u64> = Vec::new();
    let mut busy_until: Vec<usize> = Vec::new();
    let mut total_bytes = 0;
    for i in order {
        let (f, size) = (first[i].unwrap_or(0), need[i].next_multiple_of(16).max(16));
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
        if let Some(a) = alias_of(i)
            && first[i].is_some()
        {
            slot_of[i] = slot_of[a.root];
            view_of[i] = Some((a.offset, bytes[i]));
            total_bytes += bytes[i];
        }
    }
    MemoryPlan {
        slot_of,
        view_of,
        slot_bytes,
        total_bytes,
    }
}

/// A cached model's two memory plans: `cached`, where the convolution cache's outputs keep
/// their slots, and `plain`, what the model runs on while the cache is off (no slot kept but the
/// model's inputs and outputs). Both give every graph input and output a slot of its own, so the
/// two plans can share those buffers: `shared[s]` is the `cached` slot that `plain` slot `s`
/// uses (its size grown in `cached` to fit both). `None` when the inputs and outputs cannot be
/// matched one to one (two of them in one slot in one plan only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TwinPlans {
    /// The plan with the cache's persistent slots.
    pub cached: MemoryPlan,
    /// The plan with none.
    pub plain: MemoryPlan,
    /// For each `plain` slot, the `cached` slot whose buffer it reuses.
    pub shared: Vec<Option<usize>>,
}

/// Plans [`TwinPlans`] for `graph` (see [`plan_persistent`] for `alias` and `persistent`).
pub fn plan_twins(
    graph: &Graph,
    bytes: &[u64],
    alias: &[Option<Alias>],
    persistent: &[bool],
) -> Option<TwinPlans> {
    let n = graph.tensors.len();
    let mut io = vec![false; n];
    for t in graph.inputs.iter().chain(&graph.outputs) {
        io[t.index()] = true;
    }
    let with_cache: Vec<bool> = (0..n)
        .map(|i| io[i] || persistent.get(i).copied().unwrap_or(false))
        .collect();
    let mut cached = plan_persistent(graph, bytes, alias, &with_cache);
    let plain = plan_persistent(graph, bytes, alias, &io);
    let mut shared: Vec<Option<usize>> = vec![None; plain.slot_bytes.len()];
    let mut taken: Vec<Option<usize>> = vec![None; cached.slot_bytes.len()];
    for t in graph.inputs.iter().chain(&graph.outputs) {
        let (Some(a), Some(b)) = (cached.slot_of[t.index()], plain.slot_of[t.index()]) else {
            continue;
        };
        if shared[b].is_some_and(|x| x != a) || taken[a].is_some_and(|x| x != b) {
            return None;
        }
        shared[b] = Some(a);
        taken[a] = Some(b);
        cached.slot_bytes[a] = cached.slot_bytes[a].max(plain.slot_bytes[b]);
    }
    Some(TwinPlans {
        cached,
        plain,
        shared,
    })
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
        alias[2] = Some(Alias { root: 1, offset: 0 });
        let p = plan_with_aliases(&g, &[32; 5], &alias);
        assert_eq!(p.slot_of[2], p.slot_of[1]);
        assert_ne!(p.slot_of[3], p.slot_of[1]);
        assert_ne!(p.slot_of[3], p.slot_of[2]);
        assert_eq!(p.total_bytes, 160);
        assert_eq!(p.view_of[2], Some((0, 32)));
        assert_eq!(p.view_of[1], None);
    }

    /// x -> u -> a and x -> v -> b, c = concat(a, b) (both in c's slot), d = relu(c):
    /// tensor k+1 is written by op k.
    fn concat_graph() -> Graph {
        let shapes = [4, 4, 4, 4, 4, 8, 8];
        let tensors = shapes
            .iter()
            .enumerate()
            .map(|(i, &c)| TensorInfo {
                name: format!("t{i}"),
                shape: vec![1, 1, 2, c],
                dtype: DType::F32,
                constant: None,
            })
            .collect();
        let relu = |x: u32, y: u32| {
            Op::new(
                OpKind::Unary(UnaryKind::Relu),
                vec![TensorId(x)],
                vec![TensorId(y)],
            )
        };
        Graph {
            name: "concat".into(),
            tensors,
            ops: vec![
                relu(0, 1),
                relu(1, 2),
                relu(0, 3),
                relu(3, 4),
                Op::new(
                    OpKind::Concatenation { axis: 3 },
                    vec![TensorId(2), TensorId(4)],
                    vec![TensorId(5)],
                ),
                relu(5, 6),
            ],
            inputs: vec![TensorId(0)],
            outputs: vec![TensorId(6)],
        }
    }

    #[test]
    fn concat_inputs_live_in_the_outputs_slot_from_their_first_producer() {
        let g = concat_graph();
        let bytes = [32, 32, 32, 32, 32, 64, 64];
        let mut alias = vec![None; 7];
        alias[2] = Some(Alias { root: 5, offset: 0 });
        alias[4] = Some(Alias {
            root: 5,
            offset: 32,
        });
        let p = plan_with_aliases(&g, &bytes, &alias);
        let c = p.slot_of[5].unwrap();
        assert_eq!(p.slot_of[2], Some(c));
        assert_eq!(p.slot_of[4], Some(c));
        assert_eq!(p.view_of[2], Some((0, 32)));
        assert_eq!(p.view_of[4], Some((32, 32)));
        assert_eq!(p.view_of[5], None);
        assert!(p.slot_bytes[c] >= 64);
        // c is born when a is written (op 1): x (read by op 2), u (read by op 1), v (alive
        // over ops 2-3) and d (written while c is read) all overlap it.
        for t in [0, 1, 3, 6] {
            assert_ne!(p.slot_of[t], Some(c), "tensor {t} shares the concat's slot");
        }
        // Every tensor counted once in the sum, aliases included.
        assert_eq!(p.total_bytes, bytes.iter().sum::<u64>());
        assert!(p.peak_bytes() < p.total_bytes);
        // Without the aliases c is born at its own op (4) and reuses v's slot (v is dead by
        // then): the aliases are what keep the slot busy from op 1.
        let q = plan(&g, &bytes);
        assert!(q.view_of.iter().all(Option::is_none));
        assert_eq!(q.slot_of[5], q.slot_of[3]);
    }

    #[test]
    fn an_alias_range_past_the_roots_bytes_grows_its_slot() {
        let g = concat_graph();
        let bytes = [32, 32, 32, 32, 32, 64, 64];
        let mut alias = vec![None; 7];
        alias[4] = Some(Alias {
            root: 5,
            offset: 56,
        });
        let p = plan_with_aliases(&g, &bytes, &alias);
        let c = p.slot_of[5].unwrap();
        assert_eq!(p.slot_bytes[c], 96);
        assert_eq!(p.view_of[4], Some((56, 32)));
        // b is written at op 3, before c's own op: the slot is busy from then, so neither v
        // (read by op 3) nor a (read by op 4) shares it; x (dead after op 2) may.
        assert_ne!(p.slot_of[3], Some(c));
        assert_ne!(p.slot_of[2], Some(c));
    }

    #[test]
    fn twin_plans_share_only_the_inputs_and_outputs() {
        let g = concat_graph();
        let n = g.tensors.len();
        let bytes: Vec<u64> = (0..n as u64).map(|i| 16 * (i + 1)).collect();
        let mut persistent = vec![false; n];
        let kept = g.ops[0].outputs[0].index();
        persistent[kept] = true;
        let t = plan_twins(&g, &bytes, &vec![None; n], &persistent).expect("twins");
        let kept_slot = t.cached.slot_of[kept].expect("slot");
        // The kept tensor's slot is its own in the cached plan, and the plain plan never uses
        // that buffer.
        for (i, s) in t.cached.slot_of.iter().enumerate() {
            if i != kept {
                assert_ne!(*s, Some(kept_slot), "tensor {i} shares the kept slot");
            }
        }
        assert!(!t.shared.contains(&Some(kept_slot)));
        // Every input and output: the same buffer in both plans, big enough for both.
        for x in g.inputs.iter().chain(&g.outputs) {
            let (a, b) = (t.cached.slot_of[x.index()], t.plain.slot_of[x.index()]);
            let (a, b) = (a.expect("cached slot"), b.expect("plain slot"));
            assert_eq!(t.shared[b], Some(a));
            assert!(t.cached.slot_bytes[a] >= t.plain.slot_bytes[b]);
        }
        // Nothing else is shared.
        let io = g.inputs.len() + g.outputs.len();
        assert_eq!(t.shared.iter().flatten().count(), io);
    }
}
