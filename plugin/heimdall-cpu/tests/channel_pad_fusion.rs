//! The CPU backend's channel pad fusion (a zero `PAD` of the channels read only by `ADD`s
//! becomes part of the adds, as in BlazeFace's residual branches) against an independent
//! reference: the same graph with every padded tensor also a graph output, which keeps every pad
//! a step of its own (the unfused path). The fused add computes the same values in the same
//! order, so the outputs must agree bit for bit, run whole, run as ranges cut anywhere, on one
//! to three threads, and with the convolution cache on.

mod common;

use common::{Builder, RELU, assert_cached_bits, assert_fused_bits};
use heimdall_ir::{
    BinaryFn, ConvAttrs, Epilogue, Graph, OpKind, Pad2d, PadMode, PoolAttrs, TensorId,
};
use heimdall_testkit::XorShift;

impl Builder {
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
    let g = b.finish("channel_pads", image, outputs);
    (g, pads)
}

#[test]
fn fused_channel_pads_give_the_unfused_bits() {
    let ((fused, pads), (reference, _)) = (graph(false), graph(true));
    let input = XorShift::values(99, 22 * 18 * 3);
    // The pads have no storage (nothing writes them); the reference keeps them.
    assert_fused_bits(&fused, &reference, &pads, &input);
}

#[test]
fn fused_channel_pads_under_the_convolution_cache() {
    let ((fused, _), (reference, _)) = (graph(false), graph(true));
    assert_cached_bits(&fused, &reference, 22 * 18 * 3);
}
