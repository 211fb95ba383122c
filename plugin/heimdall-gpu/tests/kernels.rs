//! Property tests of every kernel against the CPU backend (the reference), on random shapes:
//! channel counts not divisible by 4, odd sizes, strides 1-3 with SAME and VALID padding,
//! broadcasting, every fused epilogue. Each case runs in f32 (L2 error ≤ 1e-5 relative to the computation's scale, see `common::check_against_cpu_shifted`), f16 and packed
//! f16 (≤ 3e-3) and must raise no wgpu error. Needs a GPU adapter (lavapipe in CI); set
//! `HEIMDALL_SKIP_GPU=1` to skip on machines without one.

mod common;

use common::{GraphBuilder, check_against_cpu};
use heimdall_ir::shape::{same_padding, window_out};
use heimdall_ir::{
    Activation, BinaryFn, BlockOrder, ConvAttrs, Epilogue, OpKind, Pad2d, PadMode, PoolAttrs,
    ReduceKind, ResizeAttrs, StridedSliceAttrs, TensorId, UnaryKind,
};
use proptest::prelude::*;

/// Cases per property (`HEIMDALL_KERNEL_CASES` overrides; each case runs three precisions).
fn cases() -> u32 {
    std::env::var("HEIMDALL_KERNEL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10)
}

/// Padding and output size along one axis: SAME (TFLite) or VALID.
fn axis(input: usize, k: usize, stride: usize, dil: usize, same: bool) -> Option<(usize, usize)> {
    if same {
        let (out, before, _) = same_padding(input, k, stride, dil);
        Some((out, before))
    } else {
        window_out(input, k, stride, dil, 0).map(|o| (o, 0))
    }
}

/// Pad2d for SAME/VALID given both axes.
fn pad2d(
    ih: usize,
    iw: usize,
    k: [usize; 2],
    s: [usize; 2],
    d: [usize; 2],
    same: bool,
) -> Option<(usize, usize, Pad2d)> {
    let (oh, top) = axis(ih, k[0], s[0], d[0], same)?;
    let (ow, left) = axis(iw, k[1], s[1], d[1], same)?;
    let bottom = ((oh - 1) * s[0] + (k[0] - 1) * d[0] + 1).saturating_sub(ih + top);
    let right = ((ow - 1) * s[1] + (k[1] - 1) * d[1] + 1).saturating_sub(iw + left);
    Some((
        oh,
        ow,
        Pad2d {
            top,
            bottom,
            left,
            right,
        },
    ))
}

/// An epilogue: `act` 0 none, 1 relu, 2 relu6, 3 hard-swish, 4 logistic, 5 PReLU, 6 tanh,
/// 7 relu-n1-to-1; optionally a residual input of the output's shape.
fn epilogue(b: &mut GraphBuilder, act: u8, residual: bool, out: &[usize]) -> Epilogue {
    let activation = match act {
        1 => Activation::Unary(UnaryKind::Relu),
        2 => Activation::Unary(UnaryKind::Relu6),
        3 => Activation::Unary(UnaryKind::HardSwish),
        4 => Activation::Unary(UnaryKind::Logistic),
        5 => Activation::Prelu(b.constant(&[*out.last().unwrap()], 77)),
        6 => Activation::Unary(UnaryKind::Tanh),
        7 => Activation::Unary(UnaryKind::ReluN1To1),
        _ => Activation::None,
    };
    Epilogue {
        residual: residual.then(|| b.input(out)),
        activation,
    }
}

#[allow(clippy::too_many_arguments)]
fn conv_case(
    h: usize,
    w: usize,
    ci: usize,
    co: usize,
    k: [usize; 2],
    s: usize,
    dil: usize,
    same: bool,
    bias: bool,
    act: u8,
    residual: bool,
    seed: u64,
) -> Result<(), TestCaseError> {
    let Some((oh, ow, pad)) = pad2d(h, w, k, [s, s], [dil, dil], same) else {
        return Ok(());
    };
    let mut b = GraphBuilder::default();
    let x = b.input(&[1, h, w, ci]);
    let f = b.constant(&[co, k[0], k[1], ci], seed);
    let mut inputs = vec![x, f];
    if bias {
        inputs.push(b.constant(&[co], seed + 1));
    }
    let out = [1, oh, ow, co];
    let ep = epilogue(&mut b, act, residual, &out);
    let attrs = ConvAttrs {
        stride: [s, s],
        dilation: [dil, dil],
        pad,
    };
    let y = b.op(OpKind::Conv2d(attrs), inputs, &out, ep);
    check_against_cpu(&b.finish(vec![y]), seed).map_err(TestCaseError::fail)
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(cases()) })]

    #[test]
    fn conv2d_generic(h in 1..10usize, w in 1..10usize, ci in 1..10usize, co in 1..11usize, kh in 1..6usize, kw in 1..4usize, s in 1..4usize, dil in 1..3usize, same: bool, bias: bool, act in 0..8u8, residual: bool, seed in 0..1000u64) {
        conv_case(h, w, ci, co, [kh, kw], s, dil, same, bias, act, residual, seed)?;
    }

    #[test]
    fn conv2d_first_layer_3_channels(h in 3..20usize, w in 3..20usize, co in 1..17usize, s in 1..3usize, same: bool, act in 0..8u8, seed in 0..1000u64) {
        conv_case(h, w, 3, co, [3, 3], s, 1, same, true, act, false, seed)?;
    }

    #[test]
    fn conv1x1_blocked(h in 1..20usize, w in 1..20usize, ci in 1..40usize, co in 1..40usize, bias: bool, act in 0..8u8, residual: bool, seed in 0..1000u64) {
        conv_case(h, w, ci, co, [1, 1], 1, 1, false, bias, act, residual, seed)?;
    }

    #[test]
    fn conv2d_whole_window(h in 1..6usize, w in 1..6usize, ci in 1..40usize, co in 1..30usize, bias: bool, act in 0..8u8, seed in 0..1000u64) {
        // A window covering the whole input (one output pixel) runs as a fully connected layer.
        prop_assume!(h * w > 1);
        conv_case(h, w, ci, co, [h, w], 1, 1, false, bias, act, false, seed)?;
    }

    #[test]
    fn conv1x1_split_reduction(h in 1..8usize, w in 1..8usize, ci in 29..420usize, co in 1..30usize, ks in prop::sample::select(vec![2usize, 4, 8, 16]), tg in prop::sample::select(vec![16u32, 32, 64, 128]), bias: bool, act in 0..8u8, residual: bool, seed in 0..1000u64) {
        // Long reductions over a small grid: forced onto the split-reduction kernel (a CPU
        // rasteriser never picks it) with `ks` parts where the channels allow it.
        let Some(gpu) = common::gpu() else { return Ok(()) };
        let mut t = gpu.ctx.tuning();
        t.conv1x1_workgroup = tg;
        t.split_k_threads = h * w * co.div_ceil(4) * ks;
        prop_assume!(t.split_k(h * w * co.div_ceil(4), ci.div_ceil(4)).is_some());
        common::with_tuning(t, || conv_case(h, w, ci, co, [1, 1], 1, 1, false, bias, act, residual, seed))?;
    }

    #[test]
    fn depthwise(h in 1..12usize, w in 1..12usize, c in 1..14usize, k in prop::sample::select(vec![1usize, 3, 5]), s in 1..3usize, dil in 1..3usize, same: bool, bias: bool, act in 0..8u8, residual: bool, seed in 0..1000u64) {
        let Some((oh, ow, pad)) = pad2d(h, w, [k, k], [s, s], [dil, dil], same) else { return Ok(()) };
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, h, w, c]);
        let mut inputs = vec![x, b.constant(&[1, k, k, c], seed)];
        if bias {
            inputs.push(b.constant(&[c], seed + 1));
        }
        let out = [1, oh, ow, c];
        let ep = epilogue(&mut b, act, residual, &out);
        let attrs = ConvAttrs { stride: [s, s], dilation: [dil, dil], pad };
        let y = b.op(OpKind::DepthwiseConv2d { attrs, multiplier: 1 }, inputs, &out, ep);
        check_against_cpu(&b.finish(vec![y]), seed).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn transpose_conv(h in 1..7usize, w in 1..7usize, ci in 1..10usize, co in 1..10usize, k in 1..4usize, s in 1..3usize, crop in 0..2usize, act in 0..8u8, seed in 0..1000u64) {
        let full = |n: usize| (n - 1) * s + k;
        if full(h) <= crop || full(w) <= crop { return Ok(()); }
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, h, w, ci]);
        let inputs = vec![x, b.constant(&[co, k, k, ci], seed), b.constant(&[co], seed + 1)];
        let out = [1, full(h) - crop, full(w) - crop, co];
        let ep = epilogue(&mut b, act, false, &out);
        let attrs = ConvAttrs { stride: [s, s], dilation: [1, 1], pad: Pad2d { top: crop, bottom: 0, left: crop, right: 0 } };
        let y = b.op(OpKind::TransposeConv2d(attrs), inputs, &out, ep);
        check_against_cpu(&b.finish(vec![y]), seed).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn fully_connected(h in 1..5usize, w in 1..5usize, c in 1..11usize, o in 1..20usize, flat: bool, bias: bool, act in 0..8u8, seed in 0..1000u64) {
        let mut b = GraphBuilder::default();
        let n = h * w * c;
        let x = if flat { b.input(&[1, n]) } else { b.input(&[1, h, w, c]) };
        let mut inputs = vec![x, b.constant(&[o, n], seed)];
        if bias {
            inputs.push(b.constant(&[o], seed + 1));
        }
        let ep = epilogue(&mut b, act, false, &[1, o]);
        let y = b.op(OpKind::FullyConnected, inputs, &[1, o], ep);
        check_against_cpu(&b.finish(vec![y]), seed).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn pool(h in 1..12usize, w in 1..12usize, c in 1..10usize, k in 1..4usize, s in 1..3usize, same: bool, max: bool, seed in 0..1000u64) {
        let (k, s) = ([k.min(h), k.min(w)], [s, s]);
        let Some((oh, ow, pad)) = pad2d(h, w, k, s, [1, 1], same) else { return Ok(()) };
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, h, w, c]);
        let attrs = PoolAttrs { filter: k, stride: s, pad };
        let kind = if max { OpKind::MaxPool2d(attrs) } else { OpKind::AvgPool2d(attrs) };
        let y = b.op(kind, vec![x], &[1, oh, ow, c], Epilogue::default());
        check_against_cpu(&b.finish(vec![y]), seed).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn pool_large_window(h in 6..24usize, w in 6..24usize, c in 1..10usize, k in 8..13usize, s in 1..4usize, same: bool, global: bool, max: bool, seed in 0..1000u64) {
        // Windows of ≥ 64 positions take the work-group reduction (global pools included).
        let (k, s) = if global { ([h, w], [h, w]) } else { ([k.min(h), k.min(w)], [s, s]) };
        let Some((oh, ow, pad)) = pad2d(h, w, k, s, [1, 1], same && !global) else { return Ok(()) };
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, h, w, c]);
        let attrs = PoolAttrs { filter: k, stride: s, pad };
        let kind = if max { OpKind::MaxPool2d(attrs) } else { OpKind::AvgPool2d(attrs) };
        let y = b.op(kind, vec![x], &[1, oh, ow, c], Epilogue::default());
        common::check_against_cpu_shifted(&b.finish(vec![y]), seed, 2.0).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn mean(h in 1..20usize, w in 1..20usize, c in 1..10usize, axes in 0..3u8, keep: bool, seed in 0..1000u64) {
        let axes = match axes { 0 => vec![1, 2], 1 => vec![1], _ => vec![2] };
        let mut out = vec![1, h, w, c];
        for &a in &axes { out[a] = 1; }
        if !keep {
            out = out.iter().enumerate().filter(|(d, _)| !axes.contains(d)).map(|(_, &n)| n).collect();
        }
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, h, w, c]);
        let y = b.op(OpKind::Reduce { kind: ReduceKind::Mean, axes, keep_dims: keep }, vec![x], &out, Epilogue::default());
        common::check_against_cpu_shifted(&b.finish(vec![y]), seed, 2.0).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn binary_broadcast(h in 1..8usize, w in 1..8usize, c in 1..10usize, op in 0..4u8, form in 0..6u8, swap: bool, constant: bool, act in 0..8u8, residual: bool, seed in 0..1000u64) {
        let full = vec![1, h, w, c];
        let other: Vec<usize> = match form {
            0 => full.clone(),
            1 => vec![c],
            2 => vec![1, 1, 1, c],
            3 => vec![1, h, 1, c],
            4 => vec![1, 1, w, 1],
            _ => vec![1],
        };
        let mut b = GraphBuilder::default();
        let a = b.input(&full);
        let o = if constant { b.constant(&other, seed) } else { b.input(&other) };
        let kind = OpKind::Binary(match op { 0 => BinaryFn::Add, 1 => BinaryFn::Sub, 2 => BinaryFn::Mul, _ => BinaryFn::Prelu });
        let prelu = matches!(kind, OpKind::Binary(BinaryFn::Prelu));
        let ep = if prelu { Epilogue::default() } else { epilogue(&mut b, act, residual, &full) };
        let inputs = if swap && !prelu { vec![o, a] } else { vec![a, o] };
        let y = b.op(kind, inputs, &full, ep);
        check_against_cpu(&b.finish(vec![y]), seed).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn unary(h in 1..8usize, w in 1..8usize, c in 1..10usize, kind in 0..6u8, seed in 0..1000u64) {
        let kind = [UnaryKind::Relu, UnaryKind::Relu6, UnaryKind::ReluN1To1, UnaryKind::Logistic, UnaryKind::HardSwish, UnaryKind::Tanh][kind as usize];
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, h, w, c]);
        let y = b.op(OpKind::Unary(kind), vec![x], &[1, h, w, c], Epilogue::default());
        check_against_cpu(&b.finish(vec![y]), seed).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn resize_bilinear(h in 1..8usize, w in 1..8usize, c in 1..7usize, oh in 1..16usize, ow in 1..16usize, mode in 0..3u8, seed in 0..1000u64) {
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, h, w, c]);
        let kind = OpKind::Resize(ResizeAttrs::tflite_bilinear(mode == 1, mode == 2).unwrap());
        let y = b.op(kind, vec![x], &[1, oh, ow, c], Epilogue::default());
        check_against_cpu(&b.finish(vec![y]), seed).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn depth_to_space(h in 1..6usize, w in 1..6usize, oc in 1..7usize, block in 2..4usize, seed in 0..1000u64) {
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, h, w, oc * block * block]);
        let y = b.op(OpKind::DepthToSpace { block, order: BlockOrder::Dcr }, vec![x], &[1, h * block, w * block, oc], Epilogue::default());
        check_against_cpu(&b.finish(vec![y]), seed).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn pad(h in 1..6usize, w in 1..6usize, c in 1..9usize, p in prop::collection::vec(0..3usize, 6), seed in 0..1000u64) {
        let pads = vec![[0, 0], [p[0], p[1]], [p[2], p[3]], [p[4], p[5]]];
        let out = [1, h + p[0] + p[1], w + p[2] + p[3], c + p[4] + p[5]];
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, h, w, c]);
        let y = b.op(OpKind::Pad { pads, mode: PadMode::ZERO }, vec![x], &out, Epilogue::default());
        check_against_cpu(&b.finish(vec![y]), seed).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn reshape(h in 1..6usize, w in 1..6usize, c in 1..9usize, form in 0..3u8, seed in 0..1000u64) {
        let out = match form { 0 => vec![1, h * w, c], 1 => vec![1, h * w * c], _ => vec![1, h, w * c] };
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, h, w, c]);
        let y = b.op(OpKind::Reshape, vec![x], &out, Epilogue::default());
        check_against_cpu(&b.finish(vec![y]), seed).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn strided_slice(dims in prop::collection::vec(1..7usize, 3), picks in prop::collection::vec((0..6usize, 0..4u8, 1..7usize), 3), seed in 0..1000u64) {
        let shape = [1, dims[0], dims[1], dims[2]];
        let (mut begin, mut stride, mut count) = (vec![0i64], vec![1i64], vec![1usize]);
        for (d, &(b0, st, n)) in picks.iter().enumerate() {
            let size = dims[d];
            let s: i64 = [1, 2, -1, 3][st as usize];
            let first = (b0 % size) as i64;
            // Elements available from `first` in direction `s`.
            let avail = if s > 0 { (size as i64 - 1 - first) / s + 1 } else { first / -s + 1 };
            begin.push(first);
            stride.push(s);
            count.push(n.min(avail as usize));
        }
        let mut b = GraphBuilder::default();
        let x = b.input(&shape);
        let y = b.op(OpKind::StridedSlice(StridedSliceAttrs { begin, stride, count: count.clone() }), vec![x], &count, Epilogue::default());
        check_against_cpu(&b.finish(vec![y]), seed).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn concatenation(h in 1..5usize, w in 1..5usize, sizes in prop::collection::vec(1..7usize, 1..4), axis in 1..4usize, rank3: bool, seed in 0..1000u64) {
        let mut b = GraphBuilder::default();
        let base: Vec<usize> = if rank3 { vec![1, h * w, 3] } else { vec![1, h, w, 3] };
        let axis = axis.min(base.len() - 1);
        let mut inputs: Vec<TensorId> = Vec::new();
        for &n in &sizes {
            let mut s = base.clone();
            s[axis] = n;
            inputs.push(b.input(&s));
        }
        let mut out = base.clone();
        out[axis] = sizes.iter().sum();
        let y = b.op(OpKind::Concatenation { axis }, inputs, &out, Epilogue::default());
        check_against_cpu(&b.finish(vec![y]), seed).map_err(TestCaseError::fail)?;
    }
}

/// The comparison can fail: a GPU result that differs from the CPU is caught (guards against a
/// harness that compares nothing).
#[test]
fn harness_detects_a_wrong_kernel() {
    let Some(gpu) = common::gpu() else { return };
    let mut b = GraphBuilder::default();
    let x = b.input(&[1, 4, 4, 5]);
    let y = b.op(
        OpKind::Unary(UnaryKind::Relu),
        vec![x],
        &[1, 4, 4, 5],
        Epilogue::default(),
    );
    let graph = b.finish(vec![y]);
    let inputs = common::inputs_for(&graph, 1);
    let mut gpu_out = common::run_gpu(gpu, &graph, &inputs, heimdall_gpu::Precision::F32);
    let cpu_out = common::run_cpu(&graph, &inputs);
    assert!(heimdall_testkit::rel_l2(&gpu_out[0], &cpu_out[0]) <= 1e-7);
    gpu_out[0][3] += 0.5;
    assert!(heimdall_testkit::rel_l2(&gpu_out[0], &cpu_out[0]) > 1e-5);
}
