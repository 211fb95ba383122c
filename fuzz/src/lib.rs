//! What the fuzz targets share: a loaded graph is compiled and run on the CPU backend when it
//! fits a budget (so that a mutant the loader accepts reaches the kernels), and it must never
//! panic: the loader, the passes and the CPU backend answer hostile input with typed errors.

use heimdall_cpu::{CpuModel, CpuOptions};
use heimdall_ir::Graph;
use heimdall_ir::cost::op_cost;

/// Largest activation footprint (elements of all non-constant tensors) of a graph that is run:
/// 2^22 f32 = 16 MiB. The importers cap a file at 2^28 (1 GiB), which `-rss_limit_mb` would flag.
pub const ELEMENT_BUDGET: usize = 1 << 22;

/// Largest static cost of a graph that is run, in FLOPs (keeps one case under ~0.1 s).
pub const FLOP_BUDGET: u64 = 200_000_000;

/// Largest number of ops of a graph that is run.
pub const OP_BUDGET: usize = 2048;

/// Whether `graph` fits the run budget.
pub fn within_budget(graph: &Graph) -> bool {
    let activations = graph
        .tensors
        .iter()
        .filter(|t| t.constant.is_none())
        .map(|t| t.numel())
        .fold(0usize, usize::saturating_add);
    let flops = graph
        .ops
        .iter()
        .map(|op| op_cost(graph, op).flops)
        .fold(0u64, u64::saturating_add);
    activations <= ELEMENT_BUDGET && flops <= FLOP_BUDGET && graph.ops.len() <= OP_BUDGET
}

/// Compiles `graph` on the CPU backend and runs it once on a constant input, when it fits the
/// budget. Typed errors are fine; a panic is the finding.
pub fn run_cpu(graph: &Graph) {
    if !within_budget(graph) {
        return;
    }
    let Ok(mut model) = CpuModel::compile(graph, CpuOptions { threads: 1 }) else {
        return;
    };
    for (i, &t) in graph.inputs.iter().enumerate() {
        let data = vec![0.5f32; graph.tensor(t).numel()];
        if model.set_input(i, &data).is_err() {
            return;
        }
    }
    if model.run().is_ok() {
        for i in 0..graph.outputs.len() {
            let _ = model.output(i);
        }
    }
}
