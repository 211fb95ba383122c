//! Placement: which steps of a model run on the GPU and which must run on the CPU.

use heimdall_ir::Graph;

pub use crate::ops::has_gpu_kernel;

/// Where a step runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// A GPU dispatch (or several) recorded by [`crate::GpuModel::encode`].
    Gpu,
    /// An op with no GPU kernel ([`crate::ops::has_gpu_kernel`]: after the passes only a
    /// `Dequantize` or `Densify` of a computed tensor, which no supported model has): a CPU step
    /// with transfers around it.
    Cpu,
}

/// The placement of every op of the graph (one step per op, in graph order).
pub fn placement(graph: &Graph) -> Vec<Placement> {
    graph
        .ops
        .iter()
        .map(|op| {
            if has_gpu_kernel(&op.kind) {
                Placement::Gpu
            } else {
                Placement::Cpu
            }
        })
        .collect()
}
