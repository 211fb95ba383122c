//! The CPU backend's tail fusion (the per-channel `ADD` of a constant after a convolution, and
//! a `GELU` after it, applied by the convolution: PP-OCRv6's blocks) against an independent
//! reference: the same graph with every tensor between a convolution and its tail also a graph
//! output, which keeps the adds and GELUs steps of their own (the unfused path). The fused
//! convolution applies the same operations in the same order, so the outputs must agree bit for
//! bit, run whole, run as ranges cut anywhere, on one to three threads, and with the
//! convolution cache on.

mod common;

use common::{Builder, RELU, assert_cached_bits, assert_fused_bits};
use heimdall_ir::{
    Activation, BinaryFn, ConvAttrs, Epilogue, Graph, OpKind, Pad2d, TensorId, UnaryKind,
};
use heimdall_testkit::XorShift;

impl Builder {
    /// A `k x k` stride-1 convolution (padding `k / 2`) to `oc` channels, with a bias or not,
    /// or a depthwise one (`oc` ignored).
    fn conv(
        &mut self,
        x: TensorId,
        k: usize,
        oc: usize,
        bias: bool,
        depthwise: bool,
        seed: u64,
    ) -> TensorId {
        let [_, h, w, c] = self.shape(x);
        let attrs = ConvAttrs::unit_stride(k / 2);
        let (kind, oc, filter) = if depthwise {
            let kind = OpKind::DepthwiseConv2d {
                attrs,
                multiplier: 1,
            };
            (kind, c, vec![1, k, k, c])
        } else {
            (OpKind::Conv2d(attrs), oc, vec![oc, k, k, c])
        };
        let n = filter.iter().product();
        let mut inputs = vec![x, self.tensor(&filter, Some(XorShift::values(seed, n)))];
        if bias {
            inputs.push(self.tensor(&[oc], Some(XorShift::values(seed + 1, oc))));
        }
        self.op(kind, inputs, &[1, h, w, oc], Epilogue::default())
    }

    /// `x + k` (`k` first when `swap`), `k` a constant of `x`'s channels shaped `shape_k`.
    fn add_channels(
        &mut self,
        x: TensorId,
        rank4: bool,
        swap: bool,
        ep: Epilogue,
        seed: u64,
    ) -> TensorId {
        let shape = self.shape(x);
        let c = shape[3];
        let ks: &[usize] = if rank4 { &[1, 1, 1, c] } else { &[c] };
        let k = self.tensor(ks, Some(XorShift::values(seed, c)));
        let inputs = if swap { vec![k, x] } else { vec![x, k] };
        self.op(OpKind::Binary(BinaryFn::Add), inputs, &shape, ep)
    }

    /// A 2x2 stride-2 transposed convolution to `oc` channels, without bias.
    fn transpose_conv(&mut self, x: TensorId, oc: usize, seed: u64) -> TensorId {
        let [_, h, w, c] = self.shape(x);
        let attrs = ConvAttrs {
            stride: [2, 2],
            dilation: [1, 1],
            pad: Pad2d::default(),
        };
        let f = self.tensor(&[oc, 2, 2, c], Some(XorShift::values(seed, oc * 4 * c)));
        let shape = [1, 2 * h, 2 * w, oc];
        self.op(
            OpKind::TransposeConv2d(attrs),
            vec![x, f],
            &shape,
            Epilogue::default(),
        )
    }

    fn gelu(&mut self, x: TensorId) -> TensorId {
        let shape = self.shape(x);
        self.op(
            OpKind::Unary(UnaryKind::Gelu),
            vec![x],
            &shape,
            Epilogue::default(),
        )
    }
}

/// PP-OCR's blocks in small: a 1x1 convolution without bias, its shift and ReLU; a 3x3 one,
/// its shift and a GELU; a 1x1 one whose shift carries the residual of the first block; a
/// depthwise one, its shift and ReLU; a transposed one, its shift and ReLU; and a shift whose
/// residual is written after its convolution (not fused). With `keep`, every tensor between a convolution and its tail is a
/// graph output too. Returns the graph and those tensors.
fn graph(keep: bool) -> (Graph, Vec<TensorId>) {
    let mut b = Builder::default();
    let image = b.tensor(&[1, 21, 18, 3], None);
    let x0 = b.conv(image, 1, 12, false, false, 1);
    let a0 = b.add_channels(x0, true, false, RELU, 3);
    let x1 = b.conv(a0, 3, 24, true, false, 5);
    let a1 = b.add_channels(x1, false, true, Epilogue::default(), 7);
    let g1 = b.gelu(a1);
    let x2 = b.conv(g1, 1, 12, false, false, 9);
    let residual = Epilogue {
        residual: Some(a0),
        activation: Activation::None,
    };
    let a2 = b.add_channels(x2, true, true, residual, 11);
    let d3 = b.conv(a2, 3, 0, true, true, 13);
    let a3 = b.add_channels(d3, true, false, RELU, 15);
    let t4 = b.transpose_conv(a3, 4, 23);
    let a4 = b.add_channels(t4, false, false, RELU, 25);
    let x4 = b.conv(a4, 1, 12, false, false, 17);
    let late = b.conv(a4, 1, 12, false, false, 19);
    let after = Epilogue {
        residual: Some(late),
        activation: Activation::None,
    };
    let y = b.add_channels(x4, true, false, after, 21);
    let mut outputs = vec![y];
    let between = vec![x0, x1, a1, x2, d3, t4];
    if keep {
        outputs.extend(&between);
    }
    let g = b.finish("tails", image, outputs);
    (g, between)
}

#[test]
fn fused_tails_give_the_unfused_bits() {
    let ((fused, between), (reference, _)) = (graph(false), graph(true));
    let input = XorShift::values(99, 21 * 18 * 3);
    let n = fused.ops.len();
    // The tensors between a convolution and its tail have no storage; the reference keeps them
    // (graph outputs).
    assert_fused_bits(&fused, &reference, &between, &input);
    // The last shift, whose residual is written after its convolution, stays an op.
    let ops = heimdall_cpu::cpu_ops(&fused);
    assert!(!ops[n - 1].outputs.is_empty(), "late residual fused");
    let fused_ops = ops.iter().filter(|op| op.outputs.is_empty()).count();
    assert_eq!(fused_ops, 6, "5 adds and a GELU fused");
}

#[test]
fn fused_tails_under_the_convolution_cache() {
    let ((fused, _), (reference, _)) = (graph(false), graph(true));
    assert_cached_bits(&fused, &reference, 21 * 18 * 3);
}
