//! Shared machinery of the hostile-input tests (`hostile.rs`, `onnx_hostile.rs`): every mutant
//! that loads is compiled and run on the CPU backend within a stated budget, and a sample of
//! them on the GPU backend; outcomes are tallied by kind and printed.
//!
//! Included with `mod common; #[path = "common/mutants.rs"] mod mutants;` (it uses
//! `common::random_inputs`).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, OnceLock};

use heimdall::Error;
use heimdall_cpu::{CpuModel, CpuOptions};
use heimdall_gpu::{GpuContext, GpuModel, GpuOptions, Precision};
use heimdall_ir::Graph;
use heimdall_ir::cost::op_cost;

/// Largest activation footprint (elements of all non-constant tensors) of a mutant that is
/// compiled and run: 2^24 f32 = 64 MiB. The importers cap a file at 2^28 (1 GiB); the originals
/// need at most a few million. Mutants above it are counted, not run.
pub const ELEMENT_BUDGET: usize = 1 << 24;

/// Largest static cost of a mutant that is run: 4 GFLOP (the originals need at most ~0.7).
pub const FLOP_BUDGET: u64 = 4_000_000_000;

/// Largest number of ops of a mutant that is run.
pub const OP_BUDGET: usize = 4096;

/// Number of cases per model: `HEIMDALL_FUZZ_CASES`, else `default`.
pub fn cases(default: usize) -> usize {
    env_usize("HEIMDALL_FUZZ_CASES").unwrap_or(default)
}

/// How many loaded mutants (per test) also run on the GPU: `HEIMDALL_FUZZ_GPU_CASES`, else
/// `default`; 0 with `HEIMDALL_SKIP_GPU=1`.
pub fn gpu_cases(default: usize) -> usize {
    if skip_gpu() {
        return 0;
    }
    env_usize("HEIMDALL_FUZZ_GPU_CASES").unwrap_or(default)
}

fn env_usize(name: &str) -> Option<usize> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

fn skip_gpu() -> bool {
    std::env::var("HEIMDALL_SKIP_GPU").is_ok_and(|v| v == "1")
}

/// The test device and the uncaptured wgpu errors it logged.
pub type TestGpu = (GpuContext, Arc<Mutex<Vec<String>>>);

/// The test device with every uncaptured wgpu error logged, or `None` when
/// `HEIMDALL_SKIP_GPU=1`. Without an adapter the test fails (CI installs lavapipe).
pub fn gpu() -> Option<&'static TestGpu> {
    static GPU: OnceLock<Option<TestGpu>> = OnceLock::new();
    GPU.get_or_init(|| {
        if skip_gpu() {
            eprintln!("HEIMDALL_SKIP_GPU=1: no mutant runs on the GPU");
            return None;
        }
        let ctx = GpuContext::create().unwrap_or_else(|e| {
            panic!("{e}: install a Vulkan driver (mesa-vulkan-drivers) or set HEIMDALL_SKIP_GPU=1")
        });
        let errors = Arc::new(Mutex::new(Vec::new()));
        let log = errors.clone();
        ctx.device
            .on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
                log.lock().unwrap().push(e.to_string());
            }));
        Some((ctx, errors))
    })
    .as_ref()
}

/// The error's kind: its variant and, for importer errors, the importer's variant
/// (`Import::Tensor`, `Onnx::Node`, `Passes`, `Cpu::Op`, ...).
pub fn error_kind(e: &Error) -> String {
    fn variant(debug: String) -> String {
        debug
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .next()
            .unwrap_or("")
            .to_string()
    }
    match e {
        Error::Import { error, .. } => format!("Import::{}", variant(format!("{error:?}"))),
        Error::Onnx { error, .. } => format!("Onnx::{}", variant(format!("{error:?}"))),
        Error::Passes { .. } => "Passes".into(),
        Error::Cpu(error) => format!("Cpu::{}", variant(format!("{error:?}"))),
        other => variant(format!("{other:?}")),
    }
}

/// The tally of one hostile-input test.
#[derive(Debug, Default)]
pub struct Tally {
    /// Mutants tried.
    pub total: usize,
    /// Mutants that loaded (import, validation, passes).
    pub loaded: usize,
    /// Loaded mutants over [`ELEMENT_BUDGET`], [`FLOP_BUDGET`] or [`OP_BUDGET`], not run.
    pub over_budget: usize,
    /// Loaded mutants the CPU backend compiled and ran.
    pub ran_cpu: usize,
    /// Loaded mutants the CPU backend refused with a typed error.
    pub cpu_refused: usize,
    /// Loaded mutants the GPU backend compiled and ran.
    pub ran_gpu: usize,
    /// Loaded mutants the GPU backend refused with a typed error.
    pub gpu_refused: usize,
    /// Typed errors of loading and of the CPU backend, by kind.
    pub errors: BTreeMap<String, usize>,
    /// Typed errors of the GPU backend, by kind.
    pub gpu_errors: BTreeMap<String, usize>,
}

impl Tally {
    /// Records a load error.
    pub fn load_error(&mut self, e: &Error) {
        assert!(!e.to_string().is_empty(), "an error without a message");
        *self.errors.entry(error_kind(e)).or_default() += 1;
    }

    /// Prints the counts under `title`.
    pub fn print(&self, title: &str) {
        println!(
            "{title}: {} mutated models, {} loaded, {} over the run budget, {} ran on the CPU \
             ({} refused), {} ran on the GPU ({} refused), 0 panics",
            self.total,
            self.loaded,
            self.over_budget,
            self.ran_cpu,
            self.cpu_refused,
            self.ran_gpu,
            self.gpu_refused
        );
        println!("{title}: typed errors by kind: {:?}", self.errors);
        if !self.gpu_errors.is_empty() {
            println!("{title}: GPU typed errors by kind: {:?}", self.gpu_errors);
        }
    }
}

/// Whether a loaded graph fits the run budget.
pub fn within_budget(graph: &Graph) -> bool {
    let activations: usize = graph
        .tensors
        .iter()
        .filter(|t| t.constant.is_none())
        .map(|t| t.numel())
        .fold(0usize, usize::saturating_add);
    let flops: u64 = graph
        .ops
        .iter()
        .map(|op| op_cost(graph, op).flops)
        .fold(0u64, u64::saturating_add);
    activations <= ELEMENT_BUDGET && flops <= FLOP_BUDGET && graph.ops.len() <= OP_BUDGET
}

/// Compiles and runs a loaded mutant on the CPU backend (and on the GPU when `on_gpu`), within
/// the budget. Panics (failing the test) if either backend panics; typed errors are tallied.
pub fn exercise(graph: &Graph, what: &str, on_gpu: bool, tally: &mut Tally) {
    tally.loaded += 1;
    if !within_budget(graph) {
        tally.over_budget += 1;
        return;
    }
    let data = crate::common::random_inputs(graph, tally.total as u64);
    let cpu = catch_unwind(AssertUnwindSafe(
        || -> Result<(), heimdall_cpu::CpuError> {
            let mut m = CpuModel::compile(graph, CpuOptions { threads: 1 })?;
            for (i, x) in data.iter().enumerate() {
                m.set_input(i, x)?;
            }
            m.run()?;
            for i in 0..graph.outputs.len() {
                m.output(i)?;
            }
            Ok(())
        },
    ));
    match cpu {
        Ok(Ok(())) => tally.ran_cpu += 1,
        Ok(Err(e)) => {
            tally.cpu_refused += 1;
            tally.load_error(&Error::Cpu(e));
        }
        Err(_) => panic!("{what}: the CPU backend panicked on a loaded mutant"),
    }
    if !on_gpu {
        return;
    }
    let Some((ctx, log)) = gpu() else {
        return;
    };
    let gpu = catch_unwind(AssertUnwindSafe(|| {
        let m = GpuModel::compile(ctx, graph, GpuOptions::new(Precision::F32))?;
        let refs: Vec<&[f32]> = data.iter().map(Vec::as_slice).collect();
        m.run(&refs)
    }));
    match gpu {
        Ok(Ok(_)) => tally.ran_gpu += 1,
        Ok(Err(e)) => {
            tally.gpu_refused += 1;
            let kind = format!("{e:?}");
            let kind = kind.split(['(', ' ', '{']).next().unwrap_or("").to_string();
            *tally.gpu_errors.entry(kind).or_default() += 1;
        }
        Err(_) => panic!("{what}: the GPU backend panicked on a loaded mutant"),
    }
    let errors = std::mem::take(&mut *log.lock().unwrap());
    assert!(
        errors.is_empty(),
        "{what}: wgpu reported errors outside the backend's error scopes: {errors:#?}"
    );
}
