//! The CPU backend's reflect pad fusions (`PAD_REFLECT` into the instance normalisation before
//! it, or into the convolutions after it) against an independent reference: the same graph with
//! every padded tensor also a graph output, which keeps every pad a step of its own (the unfused
//! path). The fused kernels compute the same values in the same order, so the outputs must agree
//! bit for bit, run whole, run as ranges cut anywhere, on one or two threads, and with the
//! convolution cache on.

mod common;

use common::{Builder, assert_cached_bits, assert_cuts, model, reference_output, run};
use heimdall_ir::{
    Activation, ConvAttrs, CoordMode, Epilogue, Graph, NearestMode, OpKind, Pad2d, PadMode,
    ResizeAttrs, ResizeMode, ResizeScale, TensorId, UnaryKind,
};
use heimdall_testkit::XorShift;

/// Deterministic values in [-1, 1).
fn data(seed: u64, n: usize) -> Vec<f32> {
    XorShift::values(seed, n)
}

impl Builder {
    /// `PAD_REFLECT` of `x [1, h, w, c]` by `p` rows and columns on every side.
    fn pad(&mut self, x: TensorId, p: usize) -> TensorId {
        let [_, h, w, c] = self.shape(x);
        self.op(
            OpKind::Pad {
                pads: vec![[0, 0], [p, p], [p, p], [0, 0]],
                mode: PadMode::Reflect,
            },
            vec![x],
            &[1, h + 2 * p, w + 2 * p, c],
            Epilogue::default(),
        )
    }

    /// An unpadded `k x k` convolution of stride `s` to `oc` channels, with a bias.
    fn conv(&mut self, x: TensorId, k: usize, s: usize, oc: usize, seed: u64) -> TensorId {
        let [_, h, w, c] = self.shape(x);
        let f = self.tensor(&[oc, k, k, c], Some(data(seed, oc * k * k * c)));
        let b = self.tensor(&[oc], Some(data(seed + 1, oc)));
        let attrs = ConvAttrs {
            stride: [s, s],
            dilation: [1, 1],
            pad: Pad2d::default(),
        };
        let shape = [1, (h - k) / s + 1, (w - k) / s + 1, oc];
        self.op(
            OpKind::Conv2d(attrs),
            vec![x, f, b],
            &shape,
            Epilogue::default(),
        )
    }

    /// An instance normalisation with constant scale and bias and epilogue `ep`.
    fn norm(&mut self, x: TensorId, ep: Epilogue, seed: u64) -> TensorId {
        let shape = self.shape(x);
        let c = shape[3];
        let s = self.tensor(&[c], Some(data(seed, c)));
        let b = self.tensor(&[c], Some(data(seed + 1, c)));
        self.op(
            OpKind::InstanceNorm { epsilon: 1e-5 },
            vec![x, s, b],
            &shape,
            ep,
        )
    }
}

/// multistyle26 in small: an image padded into a 5x5 convolution, normalisations writing the
/// pads of a stride-2 and a stride-1 convolution (ReLU epilogues), a residual normalisation whose
/// output a pad and a later residual both read (its convolution takes the pad), a pad after an
/// elementwise op (its convolution takes it), and a nearest 2x upsampling writing the pad after
/// it. With `keep_pads`, every padded tensor is a graph output too.
fn graph(keep_pads: bool) -> Graph {
    let mut b = Builder::default();
    let relu = Epilogue {
        residual: None,
        activation: Activation::Unary(UnaryKind::Relu),
    };
    let image = b.tensor(&[1, 21, 19, 3], None);
    let mut pads = vec![b.pad(image, 2)];
    let x = b.conv(pads[0], 5, 1, 8, 1);
    let x = b.norm(x, relu, 3);
    pads.push(b.pad(x, 1));
    let x = b.conv(pads[1], 3, 2, 8, 5);
    let block_in = b.norm(x, relu, 7);
    pads.push(b.pad(block_in, 1));
    let x = b.conv(pads[2], 3, 1, 8, 9);
    let x = b.norm(x, relu, 11);
    pads.push(b.pad(x, 1));
    let x = b.conv(pads[3], 3, 1, 8, 13);
    let res = Epilogue {
        residual: Some(block_in),
        activation: Activation::None,
    };
    let x = b.norm(x, res, 15);
    let x = b.op(
        OpKind::Unary(UnaryKind::Relu),
        vec![x],
        &b.shape(x),
        Epilogue::default(),
    );
    pads.push(b.pad(x, 2));
    let x = b.conv(pads[4], 5, 1, 4, 17);
    let [_, h, w, c] = b.shape(x);
    let up = ResizeAttrs {
        mode: ResizeMode::Nearest(NearestMode::Floor),
        coord: CoordMode::Asymmetric,
        scale: ResizeScale::Given([2.0, 2.0]),
    };
    let x = b.op(
        OpKind::Resize(up),
        vec![x],
        &[1, 2 * h, 2 * w, c],
        Epilogue::default(),
    );
    pads.push(b.pad(x, 1));
    let y = b.conv(pads[5], 3, 1, 4, 19);
    let mut outputs = vec![y];
    if keep_pads {
        outputs.extend(&pads);
    }
    b.finish("reflect", image, outputs)
}

#[test]
fn fused_pads_give_the_unfused_bits() {
    let (fused, reference) = (graph(false), graph(true));
    let input = data(99, 21 * 19 * 3);
    let want = reference_output(&reference, &input);
    for threads in [1, 2] {
        let mut m = model(&fused, threads);
        assert_eq!(run(&mut m, &input, None), want, "{threads} threads");
        // The normalisations before the second and fourth pads and the resize before the last
        // write the padded tensors, not their own outputs; the other pads write nothing, their
        // convolutions read the pads' inputs.
        let stored = |t: TensorId| m.tensor(t).is_some();
        let pad_inputs = reference.outputs[1..].iter().map(|&p| {
            let op = reference
                .ops
                .iter()
                .find(|o| o.outputs == [p])
                .expect("pad");
            op.inputs[0]
        });
        let pads: Vec<bool> = reference.outputs[1..].iter().map(|&p| stored(p)).collect();
        let sources: Vec<bool> = pad_inputs.map(stored).collect();
        assert_eq!(pads, [false, true, false, true, false, true]);
        assert_eq!(sources, [true, false, true, false, true, false]);
        assert_cuts(&mut m, &input, &want, threads);
    }
}

#[test]
fn fused_pads_under_the_convolution_cache() {
    let (fused, reference) = (graph(false), graph(true));
    assert_cached_bits(&fused, &reference, 21 * 19 * 3);
}
