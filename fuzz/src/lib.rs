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

/// The GPU target: mutants compiled and run on the GPU backend, within the CPU targets' budget
/// (the bundled models fit it, so their mutants reach the kernels); it prints how many cases
/// loaded, compiled and ran at each power of two.
#[cfg(feature = "gpu")]
pub mod gpu {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex, OnceLock};

    use heimdall_gpu::{GpuContext, GpuModel, GpuOptions, Precision};
    use heimdall_ir::Graph;

    /// Cases that loaded, that fit the budget, that compiled (either precision), that ran.
    static COUNTS: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];

    /// Counts `what` (an index of [`COUNTS`]); prints the counts when the loaded cases reach a
    /// power of two.
    pub fn count(what: usize) {
        let n = COUNTS[what].fetch_add(1, Ordering::Relaxed) + 1;
        if what == 0 && n.is_power_of_two() {
            let c: Vec<u64> = COUNTS.iter().map(|c| c.load(Ordering::Relaxed)).collect();
            eprintln!(
                "gpu target: {} loaded, {} within the budget, {} compiled, {} ran",
                c[0], c[1], c[2], c[3]
            );
        }
    }

    /// The device every case runs on, and the wgpu errors it reported outside error scopes.
    struct Device {
        ctx: GpuContext,
        errors: Arc<Mutex<Vec<String>>>,
    }

    fn device() -> &'static Device {
        static DEVICE: OnceLock<Device> = OnceLock::new();
        DEVICE.get_or_init(|| {
            let ctx = GpuContext::create().unwrap_or_else(|e| {
                panic!("{e}: the GPU target needs a Vulkan driver (lavapipe: mesa-vulkan-drivers)")
            });
            eprintln!("gpu target on {}", ctx.describe());
            let errors = Arc::new(Mutex::new(Vec::new()));
            let log = errors.clone();
            ctx.device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
                log.lock().unwrap().push(e.to_string());
            }));
            Device { ctx, errors }
        })
    }

    /// Compiles `graph` for the GPU backend (f32, then f16 storage) and runs it once on a
    /// constant input, when it fits the budget. Typed errors are fine; a panic, or a wgpu
    /// error for a model the backend accepted (an invalid dispatch, a binding out of range),
    /// is the finding.
    pub fn run_gpu(graph: &Graph) {
        count(0);
        if !crate::within_budget(graph) {
            return;
        }
        count(1);
        let d = device();
        for precision in [Precision::F32, Precision::F16] {
            let Ok(model) = GpuModel::compile(&d.ctx, graph, GpuOptions::new(precision)) else {
                continue;
            };
            count(2);
            let inputs: Vec<Vec<f32>> = graph
                .inputs
                .iter()
                .map(|&t| vec![0.5f32; graph.tensor(t).numel()])
                .collect();
            let refs: Vec<&[f32]> = inputs.iter().map(Vec::as_slice).collect();
            if model.run(&refs).is_ok() {
                count(3);
            }
            drop(model);
            let errors = std::mem::take(&mut *d.errors.lock().unwrap());
            assert!(
                errors.is_empty(),
                "wgpu errors for a model the GPU backend compiled ({precision:?}): {errors:#?}"
            );
        }
    }
}
