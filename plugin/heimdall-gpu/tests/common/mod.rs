//! Shared helpers of the GPU tests: the lavapipe (or any) device with an uncaptured-error log,
//! a tiny graph builder, and the one GPU-vs-CPU harness of the kernel tests ([`Case`], in
//! `case.rs`).
#![allow(dead_code)]

mod case;
mod graphs;
// Each test file uses some of these.
#[allow(unused_imports)]
pub use case::{Case, Domain, F16Reference, Inputs, Measure, Prepared};
#[allow(unused_imports)]
pub use graphs::{broadcast_from, epilogue, operand, pad2d, shape_of};

use std::sync::{Arc, Mutex, OnceLock};

use heimdall_cpu::{CpuModel, CpuOptions};
use heimdall_gpu::context::Tuning;
use heimdall_gpu::{GpuContext, GpuModel, GpuOptions, Precision};
use heimdall_ir::{DType, Epilogue, Graph, Op, OpKind, TensorId, TensorInfo};

/// The shared device and every wgpu error it reported outside error scopes.
pub struct Gpu {
    pub ctx: GpuContext,
    pub errors: Arc<Mutex<Vec<String>>>,
}

/// The test device, or `None` when `HEIMDALL_SKIP_GPU=1`. Without an adapter the tests FAIL:
/// CI installs lavapipe (`mesa-vulkan-drivers`).
pub fn gpu() -> Option<&'static Gpu> {
    static GPU: OnceLock<Option<Gpu>> = OnceLock::new();
    GPU.get_or_init(|| {
        if std::env::var("HEIMDALL_SKIP_GPU").is_ok_and(|v| v == "1") {
            heimdall_testkit::skip(
                env!("CARGO_CRATE_NAME"),
                "HEIMDALL_SKIP_GPU=1: its GPU tests",
            );
            return None;
        }
        let ctx = GpuContext::create().unwrap_or_else(|e| {
            panic!("{e}: install a Vulkan driver (mesa-vulkan-drivers) or set HEIMDALL_SKIP_GPU=1")
        });
        eprintln!("GPU tests on {}", ctx.describe());
        Some(with_error_log(ctx))
    })
    .as_ref()
}

/// A second test device held to a typical phone's limits and features
/// ([`heimdall_gpu::DeviceProfile::MobileTypical`]: every kernel of the backend fits them) on
/// the same adapter, or `None` when
/// `HEIMDALL_SKIP_GPU=1`.
pub fn gpu_mobile() -> Option<&'static Gpu> {
    static GPU: OnceLock<Option<Gpu>> = OnceLock::new();
    GPU.get_or_init(|| {
        gpu()?;
        let profile = heimdall_gpu::DeviceProfile::MobileTypical;
        let ctx = pollster::block_on(GpuContext::create_with(profile))
            .unwrap_or_else(|e| panic!("mobile limits: {e}"));
        eprintln!("GPU tests under mobile limits on {}", ctx.describe());
        Some(with_error_log(ctx))
    })
    .as_ref()
}

/// `ctx` with every uncaptured wgpu error logged.
fn with_error_log(ctx: GpuContext) -> Gpu {
    let errors = Arc::new(Mutex::new(Vec::new()));
    let log = errors.clone();
    ctx.device
        .on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            log.lock().unwrap().push(e.to_string());
        }));
    Gpu { ctx, errors }
}

impl Gpu {
    /// Fails if wgpu reported any error so far.
    pub fn assert_no_errors(&self) {
        let errors = self.errors.lock().unwrap();
        assert!(errors.is_empty(), "wgpu reported errors: {errors:#?}");
    }

    /// The precisions to test: f16 only where the device has it (else it falls back to packed).
    pub fn precisions(&self) -> Vec<Precision> {
        Precision::ALL.to_vec()
    }
}

/// Tolerance of the kernel tests per precision: the L2 error vs the CPU backend relative to the larger of the result's norm and the norm of the same computation on absolute values.
pub fn kernel_tolerance(p: Precision) -> f64 {
    match p {
        Precision::F32 => 1e-5,
        _ => 3e-3,
    }
}

/// Deterministic values in [-1, 1).
pub fn data(seed: u64, n: usize) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(0x2545_F491_4F6C_DD1D);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// Builds small graphs for kernel tests.
#[derive(Default)]
pub struct GraphBuilder {
    tensors: Vec<TensorInfo>,
    ops: Vec<Op>,
    inputs: Vec<TensorId>,
}

impl GraphBuilder {
    fn add(&mut self, shape: &[usize], constant: Option<Vec<f32>>) -> TensorId {
        self.tensors.push(TensorInfo {
            name: format!("t{}", self.tensors.len()),
            shape: shape.to_vec(),
            dtype: DType::F32,
            constant: constant.map(heimdall_ir::Constant::dense),
        });
        TensorId(self.tensors.len() as u32 - 1)
    }

    /// A graph input.
    pub fn input(&mut self, shape: &[usize]) -> TensorId {
        let t = self.add(shape, None);
        self.inputs.push(t);
        t
    }

    /// A constant with deterministic values (never the values of an input of the same seed).
    pub fn constant(&mut self, shape: &[usize], seed: u64) -> TensorId {
        let n = shape.iter().product();
        self.add(shape, Some(data(seed ^ 0x00C0_FFEE, n)))
    }

    /// An op producing a new tensor of `shape`.
    pub fn op(
        &mut self,
        kind: OpKind,
        inputs: Vec<TensorId>,
        shape: &[usize],
        epilogue: Epilogue,
    ) -> TensorId {
        let out = self.add(shape, None);
        let mut op = Op::new(kind, inputs, vec![out]);
        op.epilogue = epilogue;
        self.ops.push(op);
        out
    }

    /// The graph with the given outputs.
    pub fn finish(self, outputs: Vec<TensorId>) -> Graph {
        Graph {
            name: "test".into(),
            tensors: self.tensors,
            ops: self.ops,
            inputs: self.inputs,
            outputs,
        }
    }
}

/// Runs the graph on the CPU backend.
pub fn run_cpu(graph: &Graph, inputs: &[Vec<f32>]) -> Vec<Vec<f32>> {
    let mut m = CpuModel::compile(graph, CpuOptions { threads: 1 }).expect("cpu compile");
    for (i, x) in inputs.iter().enumerate() {
        m.set_input(i, x).expect("cpu input");
    }
    m.run().expect("cpu run");
    (0..graph.outputs.len())
        .map(|i| m.output(i).unwrap().to_vec())
        .collect()
}

thread_local! {
    static TUNING: std::cell::Cell<Option<Tuning>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with every GPU model of this thread compiled with `tuning` (to force a kernel
/// variant the device would not pick, such as the split-reduction 1x1 convolution).
pub fn with_tuning<R>(tuning: Tuning, f: impl FnOnce() -> R) -> R {
    TUNING.with(|t| t.set(Some(tuning)));
    let r = f();
    TUNING.with(|t| t.set(None));
    r
}

/// Compiles `graph` on the test device (with the tuning of [`with_tuning`], if any) and runs it.
pub fn run_gpu(
    gpu: &Gpu,
    graph: &Graph,
    inputs: &[Vec<f32>],
    precision: Precision,
) -> Vec<Vec<f32>> {
    let mut options = GpuOptions::new(precision);
    options.tuning = TUNING.with(|t| t.get());
    let m = GpuModel::compile(&gpu.ctx, graph, options)
        .unwrap_or_else(|e| panic!("gpu compile ({precision:?}): {e}"));
    let refs: Vec<&[f32]> = inputs.iter().map(Vec::as_slice).collect();
    let out = m
        .run(&refs)
        .unwrap_or_else(|e| panic!("gpu run ({precision:?}): {e}"));
    gpu.assert_no_errors();
    out
}

/// Random inputs for every graph input.
pub fn inputs_for(graph: &Graph, seed: u64) -> Vec<Vec<f32>> {
    graph
        .inputs
        .iter()
        .enumerate()
        .map(|(i, &t)| data(seed + 1000 * i as u64, graph.tensor(t).numel()))
        .collect()
}

/// [`Case::new`] checked: the GPU against the CPU in every precision on seeded inputs in
/// [-1, 1), errors relative to the computation's scale ([`Measure::Scaled`]); an error message on
/// failure.
pub fn check_against_cpu(graph: &Graph, seed: u64) -> Result<(), String> {
    Case::new("case", graph.clone(), seed).check().map(|_| ())
}

/// Like [`check_against_cpu`] with `shift` added to every input value ([`Domain::Shifted`]):
/// reductions (means) of zero-mean data are near zero, where any change of summation order is a
/// large relative error.
pub fn check_against_cpu_shifted(graph: &Graph, seed: u64, shift: f32) -> Result<(), String> {
    Case::new("case", graph.clone(), seed)
        .domains(&[Domain::Shifted(shift)])
        .check()
        .map(|_| ())
}

/// Cases per property test (`HEIMDALL_KERNEL_CASES` overrides `default`; each case runs three
/// precisions).
pub fn kernel_cases(default: u32) -> u32 {
    std::env::var("HEIMDALL_KERNEL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `g` with two copies (`Reshape` to the same shape) after each output, so that the ops before
/// them read and write the model's storage precision (graph outputs, and the inputs of the ops
/// producing them, are always f32).
pub fn with_trailer(mut g: Graph) -> Graph {
    let outputs = std::mem::take(&mut g.outputs);
    for t in outputs {
        let mut last = t;
        for k in 0..2 {
            let info = g.tensor(last).clone();
            g.tensors.push(TensorInfo {
                name: format!("{}_copy{k}", info.name),
                constant: None,
                ..info
            });
            let next = TensorId(g.tensors.len() as u32 - 1);
            g.ops.push(Op::new(OpKind::Reshape, vec![last], vec![next]));
            last = next;
        }
        g.outputs.push(last);
    }
    g
}
