//! The CPU backend's expansion -> depthwise fusion (`fuse_expand.rs`: the inverted residual
//! block's 1x1 expansion made row by row inside the depthwise convolution reading it) against
//! an independent reference: the same graph with every expansion output also a graph output,
//! which keeps each expansion a step of its own (the unfused path). The fused pair computes
//! every value with the same operations in the same order, so the outputs must agree bit for
//! bit: strides 1 and 2, 3x3 and 5x5, expansion and depthwise activations, residuals, on 1 to
//! 4 and 7 threads, run whole and cut before every op, under the convolution cache, and on
//! hand_landmark_lite whole.

mod common;

use common::{
    Builder, RELU, assert_cached_bits, assert_cuts, assert_fused_bits, model, reference_output, run,
};
use heimdall_cpu::{ConvCacheConfig, CpuModel, CpuOptions, CpuPrecision};
use heimdall_ir::{
    Activation, BinaryFn, ConvAttrs, Epilogue, Graph, OpKind, Pad2d, TensorId, UnaryKind,
};
use heimdall_testkit::XorShift;

/// A ReLU6 epilogue.
const RELU6: Epilogue = Epilogue {
    residual: None,
    activation: Activation::Unary(UnaryKind::Relu6),
};

/// A hard-swish epilogue.
const HARD_SWISH: Epilogue = Epilogue {
    residual: None,
    activation: Activation::Unary(UnaryKind::HardSwish),
};

impl Builder {
    /// A 1x1 convolution of `x` to `oc` channels with a bias, epilogue `ep`.
    fn pointwise(&mut self, x: TensorId, oc: usize, seed: u64, ep: Epilogue) -> TensorId {
        let [_, h, w, c] = self.shape(x);
        let f = self.tensor(&[oc, 1, 1, c], Some(XorShift::values(seed, oc * c)));
        let b = self.tensor(&[oc], Some(XorShift::values(seed + 1, oc)));
        let kind = OpKind::Conv2d(ConvAttrs::unit_stride(0));
        self.op(kind, vec![x, f, b], &[1, h, w, oc], ep)
    }

    /// A `k x k` depthwise convolution of stride `s` with TFLite's SAME padding and a bias.
    fn depthwise(&mut self, x: TensorId, k: usize, s: usize, seed: u64, ep: Epilogue) -> TensorId {
        let [_, h, w, c] = self.shape(x);
        let (oh, ow) = (h.div_ceil(s), w.div_ceil(s));
        let pad = |n: usize, o: usize| ((o - 1) * s + k).saturating_sub(n);
        let (ph, pw) = (pad(h, oh), pad(w, ow));
        let attrs = ConvAttrs {
            stride: [s, s],
            dilation: [1, 1],
            pad: Pad2d {
                top: ph / 2,
                left: pw / 2,
                bottom: ph - ph / 2,
                right: pw - pw / 2,
            },
        };
        let f = self.tensor(&[1, k, k, c], Some(XorShift::values(seed, k * k * c)));
        let b = self.tensor(&[c], Some(XorShift::values(seed + 1, c)));
        let kind = OpKind::DepthwiseConv2d {
            attrs,
            multiplier: 1,
        };
        self.op(kind, vec![x, f, b], &[1, oh, ow, c], ep)
    }
}

/// One inverted residual block: expansion channels and activation, the depthwise kernel,
/// stride and epilogue, output channels.
#[derive(Clone, Copy, Debug)]
struct Block {
    mid: usize,
    expand: Epilogue,
    k: usize,
    s: usize,
    act: Epilogue,
    out: usize,
}

/// An image `[1, h, w, c]` through `blocks` (the 1x1 expansion, the depthwise convolution,
/// the 1x1 projection plus the block's input where shapes allow), then a last 1x1
/// convolution. Returns the graph and the expansion outputs; with `keep`, those are graph
/// outputs too (the reference: nothing fused).
fn graph(hwc: [usize; 3], blocks: &[Block], keep: bool, seed: u64) -> (Graph, Vec<TensorId>) {
    let mut b = Builder::default();
    let [h, w, c] = hwc;
    let image = b.tensor(&[1, h, w, c], None);
    let mut x = image;
    let mut expanded = Vec::new();
    for (i, blk) in blocks.iter().enumerate() {
        let sd = seed + 10 * i as u64;
        let e = b.pointwise(x, blk.mid, sd, blk.expand);
        expanded.push(e);
        let d = b.depthwise(e, blk.k, blk.s, sd + 2, blk.act);
        let residual = (blk.s == 1 && b.shape(x)[3] == blk.out).then_some(x);
        let ep = Epilogue {
            residual,
            activation: Activation::None,
        };
        x = b.pointwise(d, blk.out, sd + 4, ep);
    }
    let y = b.pointwise(x, 8, seed + 99, RELU);
    let mut outputs = vec![y];
    if keep {
        outputs.extend(&expanded);
    }
    (b.finish("expansions", image, outputs), expanded)
}

/// Blocks every one of which is fused on a 100x40 image: 3x3 at strides 1 and 2, 5x5 at
/// stride 1 (100 rows: at least 24 per repeated row), hard-swish and no activations.
const BLOCKS: [Block; 4] = [
    Block {
        mid: 24,
        expand: RELU6,
        k: 5,
        s: 1,
        act: RELU6,
        out: 8,
    },
    Block {
        mid: 48,
        expand: HARD_SWISH,
        k: 3,
        s: 1,
        act: Epilogue {
            residual: None,
            activation: Activation::None,
        },
        out: 8,
    },
    Block {
        mid: 40,
        expand: Epilogue {
            residual: None,
            activation: Activation::None,
        },
        k: 3,
        s: 2,
        act: HARD_SWISH,
        out: 16,
    },
    Block {
        mid: 96,
        expand: RELU6,
        k: 3,
        s: 1,
        act: RELU,
        out: 16,
    },
];

/// The fused graph gives the reference's bits whole and cut before every op on 1-3 threads,
/// and whole on 4 and 7; the expansion outputs have no storage.
#[test]
fn fused_expansions_give_the_unfused_bits() {
    let hwc = [100, 40, 3];
    let ((fused, hidden), (reference, _)) =
        (graph(hwc, &BLOCKS, false, 1), graph(hwc, &BLOCKS, true, 1));
    let input = XorShift::values(7, hwc.iter().product());
    assert_fused_bits(&fused, &reference, &hidden, &input);
    let want = reference_output(&reference, &input);
    for threads in [4, 7] {
        let mut m = model(&fused, threads);
        assert_eq!(run(&mut m, &input, None), want, "{threads} threads");
    }
}

/// A thread's share of these expansions is large enough for them to run by rows
/// (`Mode::Rows`): the 128x64x64 one on 1 and 2 threads, the 128x64x32 one on 1; apart beyond.
#[test]
fn large_expansions_by_rows_give_the_unfused_bits() {
    let hwc = [128, 64, 8];
    let blocks = [
        Block {
            mid: 64,
            expand: RELU6,
            k: 3,
            s: 1,
            act: RELU6,
            out: 8,
        },
        Block {
            mid: 32,
            expand: HARD_SWISH,
            k: 3,
            s: 2,
            act: RELU6,
            out: 16,
        },
    ];
    let ((fused, hidden), (reference, _)) =
        (graph(hwc, &blocks, false, 5), graph(hwc, &blocks, true, 5));
    let input = XorShift::values(9, hwc.iter().product());
    assert_fused_bits(&fused, &reference, &hidden, &input);
}

/// Under `CpuPrecision::F16` (on aarch64 with FEAT_FP16 the expansions in half precision, as
/// the unfused convolutions run there; f32 elsewhere) the fused graph gives the reference's
/// bits on 1 to 3 threads.
#[test]
fn fused_expansions_in_half_precision_give_the_unfused_bits() {
    let hwc = [128, 64, 8];
    let blocks = [Block {
        mid: 64,
        expand: RELU6,
        k: 3,
        s: 2,
        act: RELU6,
        out: 8,
    }];
    let ((fused, hidden), (reference, _)) =
        (graph(hwc, &blocks, false, 6), graph(hwc, &blocks, true, 6));
    let input = XorShift::values(4, hwc.iter().product());
    let compile = |g: &Graph, threads: usize| {
        CpuModel::compile_with_precision(g, CpuOptions { threads }, CpuPrecision::F16)
            .expect("compile")
    };
    let want = run(&mut compile(&reference, 1), &input, None);
    for threads in [1, 2, 3] {
        let mut m = compile(&fused, threads);
        assert!(m.tensor(hidden[0]).is_none(), "not fused");
        assert_eq!(run(&mut m, &input, None), want, "{threads} threads");
    }
}

#[test]
fn fused_expansions_under_the_convolution_cache() {
    let hwc = [100, 40, 3];
    let ((fused, _), (reference, _)) =
        (graph(hwc, &BLOCKS, false, 1), graph(hwc, &BLOCKS, true, 1));
    assert_cached_bits(&fused, &reference, hwc.iter().product());
}

/// Under the convolution cache the depthwise convolution that took an expansion over stays a
/// cached op (only the expansion, which writes nothing, leaves the cache): on the first run of
/// the fused graph the cached ops' pixels are the unfused graph's less the expansions' own.
#[test]
fn the_pair_stays_in_the_convolution_cache() {
    let hwc = [100, 40, 3];
    let ((fused, hidden), (reference, _)) =
        (graph(hwc, &BLOCKS, false, 1), graph(hwc, &BLOCKS, true, 1));
    let input = XorShift::values(7, hwc.iter().product());
    let tiles = |g: &Graph| {
        let mut m = model(g, 2);
        m.enable_conv_cache(ConvCacheConfig::default())
            .expect("cache");
        run(&mut m, &input, None);
        m.conv_cache_counts().expect("counts").tiles
    };
    let expanded: u64 = (hidden.iter())
        .map(|&t| {
            let s = &fused.tensor(t).shape;
            (s[1] * s[2]) as u64
        })
        .sum();
    assert_eq!(tiles(&fused), tiles(&reference) - expanded);
}

/// Where the expanded tensor is small (it stays in cache between the ops) or has too few rows
/// for the rows a cut repeats, the expansion keeps its step.
#[test]
fn small_or_short_expansions_keep_their_step() {
    let cases = [
        // 30x40x24 = 28 800 values: too few.
        ([30, 40, 3], 24, 3, 2),
        // 40 rows for a 3x3 stride-1 window (two rows a cut): fewer than 48.
        ([40, 40, 3], 64, 3, 1),
        // 80 rows for a 5x5 stride-1 window (four rows a cut): fewer than 96.
        ([80, 40, 3], 64, 5, 1),
    ];
    for (hwc, mid, k, s) in cases {
        let blk = Block {
            mid,
            expand: RELU6,
            k,
            s,
            act: RELU6,
            out: 8,
        };
        let (g, expanded) = graph(hwc, &[blk], false, 3);
        assert!(
            model(&g, 2).tensor(expanded[0]).is_some(),
            "{hwc:?} -> {mid}, {k}x{k} s{s} fused"
        );
    }
}

/// An expansion output read by another op too, or a graph output, is not fused; nor is one
/// read by a convolution that is not depthwise.
#[test]
fn other_readers_keep_the_expansion_step() {
    let mut b = Builder::default();
    let image = b.tensor(&[1, 64, 32, 8], None);
    let e = b.pointwise(image, 32, 1, RELU6);
    let d = b.depthwise(e, 3, 2, 3, RELU6);
    let kind = OpKind::Binary(BinaryFn::Add);
    let y = b.op(kind, vec![e, e], &[1, 64, 32, 32], Epilogue::default());
    let g = b.finish("two_readers", image, vec![d, y]);
    assert!(model(&g, 2).tensor(e).is_some());
    let ops = heimdall_cpu::cpu_ops(&g);
    assert_eq!(ops[1].inputs[0], e);
}

/// hand_landmark_lite (three of its inverted residual blocks' expansions fused), fused against
/// unfused, whole on 1 to 4 threads and cut before every op on 2 (the first block's pair by
/// rows) and 4 (every pair apart).
#[test]
fn hand_landmark_lite_keeps_its_bits() {
    let path = heimdall_testkit::model_path("hand_landmark_lite").expect("model");
    let bytes = std::fs::read(path).expect("read");
    let mut fused = heimdall_tflite::import(&bytes, "hand_landmark_lite").expect("import");
    heimdall_ir::passes::optimize(&mut fused).expect("passes");
    let cpu = heimdall_cpu::cpu_ops(&fused);
    let hidden: Vec<TensorId> = (fused.ops.iter().zip(&cpu))
        .filter(|(op, c)| matches!(op.kind, OpKind::Conv2d(_)) && c.outputs.is_empty())
        .map(|(op, _)| op.outputs[0])
        .collect();
    assert_eq!(hidden.len(), 3, "expansions fused");
    let mut reference = fused.clone();
    reference.outputs.extend(&hidden);
    let n: usize = fused.tensor(fused.inputs[0]).shape.iter().product();
    let input: Vec<f32> = XorShift::values(11, n).iter().map(|v| v.abs()).collect();
    let want = reference_output(&reference, &input);
    for threads in [1, 2, 3, 4] {
        let mut m = model(&fused, threads);
        assert_eq!(run(&mut m, &input, None), want, "{threads} threads");
        if threads % 2 == 0 {
            assert_cuts(&mut m, &input, &want, threads);
        }
    }
}
