//! What the CPU fusion tests share: a fused graph against the same graph with the fused tensors
//! kept as outputs (so nothing is fused), run whole, cut before every op, on several threads and
//! under the convolution cache.

#![allow(dead_code)] // each test file uses its part

use heimdall_cpu::{ConvCacheConfig, CpuModel, CpuOptions};
use heimdall_ir::{
    Activation, DType, Epilogue, Graph, Op, OpKind, TensorId, TensorInfo, UnaryKind,
};

/// A ReLU epilogue.
pub const RELU: Epilogue = Epilogue {
    residual: None,
    activation: Activation::Unary(UnaryKind::Relu),
};

/// Builds graphs tensor by tensor (each test file adds the ops it needs).
#[derive(Default)]
pub struct Builder {
    /// The tensors so far.
    pub tensors: Vec<TensorInfo>,
    /// The ops so far.
    pub ops: Vec<Op>,
}

impl Builder {
    /// A new f32 tensor of `shape`, constant when `values` are given.
    pub fn tensor(&mut self, shape: &[usize], values: Option<Vec<f32>>) -> TensorId {
        self.tensors.push(TensorInfo {
            name: format!("t{}", self.tensors.len()),
            shape: shape.to_vec(),
            dtype: DType::F32,
            constant: values.map(heimdall_ir::Constant::dense),
        });
        TensorId(self.tensors.len() as u32 - 1)
    }

    /// An op of `kind` on `inputs` writing a new tensor of `shape`, with epilogue `ep`.
    pub fn op(
        &mut self,
        kind: OpKind,
        inputs: Vec<TensorId>,
        shape: &[usize],
        ep: Epilogue,
    ) -> TensorId {
        let out = self.tensor(shape, None);
        let mut op = Op::new(kind, inputs, vec![out]);
        op.epilogue = ep;
        self.ops.push(op);
        out
    }

    /// The shape of rank-4 tensor `t`.
    pub fn shape(&self, t: TensorId) -> [usize; 4] {
        self.tensors[t.index()].shape[..]
            .try_into()
            .expect("rank 4")
    }

    /// The graph `name` of input `input` and `outputs`, checked.
    pub fn finish(self, name: &str, input: TensorId, outputs: Vec<TensorId>) -> Graph {
        let g = Graph {
            name: name.into(),
            tensors: self.tensors,
            ops: self.ops,
            inputs: vec![input],
            outputs,
        };
        g.validate().expect("valid graph");
        g
    }
}

/// `g` compiled for `threads` threads.
pub fn model(g: &Graph, threads: usize) -> CpuModel {
    CpuModel::compile(g, CpuOptions { threads }).expect("compile")
}

/// Output 0 after running every op on `input`, as two ranges cut before op `cut` if given.
pub fn run(m: &mut CpuModel, input: &[f32], cut: Option<usize>) -> Vec<f32> {
    m.set_input(0, input).expect("input");
    let n = m.num_ops();
    let cut = cut.unwrap_or(n);
    m.run_range(0..cut).expect("run");
    m.run_range(cut..n).expect("run");
    m.output(0).expect("output").to_vec()
}

/// The reference's output 0 on one thread: finite and not all zero.
pub fn reference_output(reference: &Graph, input: &[f32]) -> Vec<f32> {
    let want = run(&mut model(reference, 1), input, None);
    assert!(want.iter().all(|v| v.is_finite()) && want.iter().any(|&v| v != 0.0));
    want
}

/// `fused` gives `reference`'s output 0 bit for bit on `input`, whole and cut before every op,
/// on 1, 2 and 3 threads; the tensors in `hidden` have no storage in `fused`'s model (the fusion
/// removed them) and have it in the reference's.
pub fn assert_fused_bits(fused: &Graph, reference: &Graph, hidden: &[TensorId], input: &[f32]) {
    let want = reference_output(reference, input);
    for threads in [1, 2, 3] {
        let mut m = model(fused, threads);
        assert_eq!(run(&mut m, input, None), want, "{threads} threads");
        assert!(hidden.iter().all(|&t| m.tensor(t).is_none()), "stored");
        let r = model(reference, threads);
        assert!(
            hidden.iter().all(|&t| r.tensor(t).is_some()),
            "reference fused"
        );
        assert_cuts(&mut m, input, &want, threads);
    }
}

/// `m` gives `want` on `input` cut before every op.
pub fn assert_cuts(m: &mut CpuModel, input: &[f32], want: &[f32], threads: usize) {
    for cut in 1..m.num_ops() {
        let got = run(m, input, Some(cut));
        assert_eq!(got, want, "{threads} threads, cut at {cut}");
    }
}

/// Under the convolution cache (2 threads) `fused` gives `reference`'s bits on an input of
/// `len` values, the same input again, a changed one and that again.
pub fn assert_cached_bits(fused: &Graph, reference: &Graph, len: usize) {
    let mut m = model(fused, 2);
    m.enable_conv_cache(ConvCacheConfig::default())
        .expect("cache");
    let mut r = model(reference, 2);
    let first = heimdall_testkit::XorShift::values(5, len);
    let mut second = first.clone();
    second[..30].iter_mut().for_each(|v| *v = -*v);
    for input in [&first, &first, &second, &second] {
        let want = run(&mut r, input, None);
        assert_eq!(run(&mut m, input, None), want);
    }
}
