//! The CPU backend's channel pad fusion (a zero `PAD` of the channels read only by `ADD`s
//! becomes part of the adds, as in BlazeFace's residual branches) against an independent
//! reference: the same graph with every padded tensor also a graph output, which keeps every pad
//! a step of its own (the unfused path). The fused add computes the same values in the same
//! order, so the outputs must agree bit for bit, run whole, run as ranges cut anywhere, on one
//! to three threads, and with the convolution cache on.

use heimdall_cpu::{ConvCacheConfig, CpuModel, CpuOptions};
use heimdall_ir::{
    Activation, BinaryFn, ConvAttrs, DType, Epilogue, Graph, Op, OpKind, Pad2d, PadMode, PoolAttrs,
    TensorId, TensorInfo, UnaryKind,
};
use heimdall_testkit::XorShift;

/// Builds graphs tensor by tensor.
#[derive(Default)]
struct Builder {
    tensors: Vec<TensorInfo>,
    ops: Vec<Op>,
}

const RELU: Epilogue = Epilogue {
    residual: None,
    activation: Activation::Unary(UnaryKind::Relu),
};

impl Builder {
    fn tensor(&mut self, shape: &[usize], values: Option<Vec<f32>>) -> TensorId {
        self.tensors.push(TensorInfo {
            name: format!("t{}", self.tensors.len()),
            shape: shape.to_vec(),
            dtype: DType::F32,
            constant: values.map(heimdall_ir::Constant::dense),
        });
        TensorId(self.tensors.len() as u32 - 1)
    }

    fn op(
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

    fn shape(&self, t: TensorId) -> [usize; 4] {
        self.tensors[t.index()].shape[..]
            .try_into()
            .expect("rank 4")
    }

    /// A `k x k` convolution of stride `s` (SAME for k = 3 at even sizes: bottom/right 1) to
    /// `oc` channels, with a bias.
    fn conv(
        &mut self,
        x: TensorId,
        k: usize,
        s: usize,
        oc: usize,
        seed: u64,
        ep: Epilogue,
    ) -> TensorId {
        let [_, h, w, c] = self.shape(x);
        let f = self.tensor(&[oc, k, k, c], Some(XorShift::values(seed, oc * k * k * c)));
        let b = self.tensor(&[oc], Some(XorShift::values(seed + 1, oc)));
        let p = usize::from(k == 3);
        let attrs = ConvAttrs {
            stride: [s, s],
            dilation: [1, 1],
            pad: Pad2d {
                top: 0,
                left: 0,
                bottom: p,
                right: p,
            },
        };
        let shape = [1, (h + p - k) / s + 1, (w + p - k) / s + 1, oc];
        self.op(OpKind::Conv2d(attrs), vec![x, f, b], &shape, ep)
    }

    /// Zero `PAD` of `x`'s channels by `after` at their end.
    fn pad_channels(&mut self, x: TensorId, after: usize) -> TensorId {
        let [_, h, w, c] = self.shape(x);
        let kind = OpKind::Pad {
            pads: vec![[0, 0], [0, 0], [0, 0], [0, after]],
            mode: PadMode::ZERO,
        };
        self.op(kind, vec![x], &[1, h, w, c + after], Epilogue::default())
    }

    fn add(&mut self, a: TensorId, b: TensorId, ep: Epilogue) -> TensorId {
        let shape = self.shape(a);
        self.op(OpKind::Binary(BinaryFn::Add), vec![a, b], &shape, ep)
    }
}

/// BlazeFace's blocks in small: a stride-1 block (convolution + padded input, ReLU), a stride-2
/// block (the padded max pool of its input as the add's first operand), and a pad read by two
/// adds. With `keep_pads`, every padded tensor is a graph output too.
fn graph(keep_pads: bool) -> (Graph, Vec<TensorId>) {
    let mut b = Builder::default();
    let image = b.tensor(&[1, 22, 18, 3], None);
    let x0 = b.conv(image, 1, 1, 8, 1, RELU);
    let a = b.conv(x0, 1, 1, 12, 3, Epilogue::default());
    let mut pads = vec![b.pad_channels(x0, 4)];
    let y1 = b.add(a, pads[0], RELU);
    let [_, h, w, c] = b.shape(y1);
    let pool = PoolAttrs {
        filter: [2, 2],
        stride: [2, 2],
        pad: Pad2d::default(),
    };
    let m = b.op(
        OpKind::MaxPool2d(pool),
        vec![y1],
        &[1, h / 2, w / 2, c],
        Epilogue::default(),
    );
    let d = b.conv(y1, 3, 2, 16, 5, Epilogue::default());
    pads.push(b.pad_channels(m, 4));
    let y2 = b.add(pads[1], d, Epilogue::default());
    pads.push(b.pad_channels(y2, 8));
    let a3 = b.conv(y2, 1, 1, 24, 7, Epilogue::default());
    let b3 = b.conv(y2, 1, 1, 24, 9, Epilogue::default());
    let s1 = b.add(a3, pads[2], Epilogue::default());
    let s2 = b.add(pads[2], b3, RELU);
    let y = b.add(s1, s2, Epilogue::default());
    let mut outputs = vec![y];
    if keep_pads {
        outputs.extend(&pads);
    }
    let g = Graph {
        name: "channel_pads".into(),
        tensors: b.tensors,
        ops: b.ops,
        inputs: vec![image],
        outputs,
    };
    g.validate().expect("valid graph");
    (g, pads)
}

fn model(g: &Graph, threads: usize) -> CpuModel {
    CpuModel::compile(g, CpuOptions { threads }).expect("compile")
}

/// Output 0 after running every op on `input`, as two ranges cut before op `cut` if given.
fn run(m: &mut CpuModel, input: &[f32], cut: Option<usize>) -> Vec<f32> {
    m.set_input(0, input).expect("input");
    let n = m.num_ops();
    let cut = cut.unwrap_or(n);
    m.run_range(0..cut).expect("run");
    m.run_range(cut..n).expect("run");
    m.output(0).expect("output").to_vec()
}

#[test]
fn fused_channel_pads_give_the_unfused_bits() {
    let ((fused, pads), (reference, _)) = (graph(false), graph(true));
    let input = XorShift::values(99, 22 * 18 * 3);
    let n = fused.ops.len();
    let want = run(&mut model(&reference, 1), &input, None);
    assert!(want.iter().all(|v| v.is_finite()) && want.iter().any(|&v| v != 0.0));
    for threads in [1, 2, 3] {
        let mut m = model(&fused, threads);
        assert_eq!(run(&mut m, &input, None), want, "{threads} threads");
        // The pads have no storage (nothing writes them); the reference keeps them.
        assert!(pads.iter().all(|&p| m.tensor(p).is_none()), "pads stored");
        let r = model(&reference, threads);
        assert!(
            pads.iter().all(|&p| r.tensor(p).is_some()),
            "reference pads fused"
        );
        for cut in 1..n {
            let got = run(&mut m, &input, Some(cut));
            assert_eq!(got, want, "{threads} threads, cut at {cut}");
        }
    }
}

#[test]
fn fused_channel_pads_under_the_convolution_cache() {
    let ((fused, _), (reference, _)) = (graph(false), graph(true));
    let mut m = model(&fused, 2);
    m.enable_conv_cache(ConvCacheConfig::default())
        .expect("cache");
    let mut r = model(&reference, 2);
    let first = XorShift::values(5, 22 * 18 * 3);
    let mut second = first.clone();
    second[..30].iter_mut().for_each(|v| *v = -*v);
    for input in [&first, &first, &second, &second] {
        let want = run(&mut r, input, None);
        assert_eq!(run(&mut m, input, None), want);
    }
}
