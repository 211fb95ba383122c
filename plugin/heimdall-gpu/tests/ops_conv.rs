//! Convolutions against the CPU backend (the reference), on random shapes: channel counts not
//! divisible by 4, odd sizes, strides 1-3 with SAME and VALID padding, dilations, every fused
//! epilogue (`common::epilogue`) with and without a residual. Kernels: `src/ops/conv.rs` (the
//! generic, first-layer, blocked 1x1, whole-window and split-reduction 1x1 kernels),
//! `depthwise.rs`, `transpose_conv.rs`; the tiled and cooperative-matrix 1x1 kernels have their
//! own files (`conv1x1_tiled.rs`, `conv_coop.rs`). Each case is a `common::Case` (the one harness):
//! f32 (L2 error ≤ 1e-5 relative to the computation's scale, `Measure::Scaled`), f16 and packed
//! f16 (≤ 3e-3), no wgpu error. Needs a GPU adapter (lavapipe in CI); `HEIMDALL_SKIP_GPU=1`
//! skips.

mod common;

use common::{Case, GraphBuilder, epilogue, kernel_cases, pad2d};
use heimdall_ir::{ConvAttrs, OpKind, Pad2d};
use proptest::prelude::*;

/// A convolution `[1, h, w, ci] -> co` with window `k`, stride `s`, dilation `dil`, SAME or
/// VALID padding, optional bias and epilogue (`None` where VALID has no output).
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
) -> Option<Case> {
    let (oh, ow, pad) = pad2d(h, w, k, [s, s], [dil, dil], same)?;
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
    Some(Case::new("Conv2d", b.finish(vec![y]), seed))
}

/// Checks a [`conv_case`], if it has an output.
fn check(case: Option<Case>) -> Result<(), TestCaseError> {
    case.map_or(Ok(()), |c| c.prop())
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(kernel_cases(10)) })]

    #[test]
    fn conv2d_generic(h in 1..10usize, w in 1..10usize, ci in 1..10usize, co in 1..11usize, kh in 1..6usize, kw in 1..4usize, s in 1..4usize, dil in 1..3usize, same: bool, bias: bool, act in 0..8u8, residual: bool, seed in 0..1000u64) {
        check(conv_case(h, w, ci, co, [kh, kw], s, dil, same, bias, act, residual, seed))?;
    }

    #[test]
    fn conv2d_first_layer_3_channels(h in 3..20usize, w in 3..20usize, co in 1..17usize, s in 1..3usize, same: bool, act in 0..8u8, seed in 0..1000u64) {
        check(conv_case(h, w, 3, co, [3, 3], s, 1, same, true, act, false, seed))?;
    }

    #[test]
    fn conv1x1_blocked(h in 1..20usize, w in 1..20usize, ci in 1..40usize, co in 1..40usize, bias: bool, act in 0..8u8, residual: bool, seed in 0..1000u64) {
        check(conv_case(h, w, ci, co, [1, 1], 1, 1, false, bias, act, residual, seed))?;
    }

    #[test]
    fn conv2d_whole_window(h in 1..6usize, w in 1..6usize, ci in 1..40usize, co in 1..30usize, bias: bool, act in 0..8u8, seed in 0..1000u64) {
        // A window covering the whole input (one output pixel) runs as a fully connected layer.
        prop_assume!(h * w > 1);
        check(conv_case(h, w, ci, co, [h, w], 1, 1, false, bias, act, false, seed))?;
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
        common::with_tuning(t, || check(conv_case(h, w, ci, co, [1, 1], 1, 1, false, bias, act, residual, seed)))?;
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
        Case::new("DepthwiseConv2d", b.finish(vec![y]), seed).prop()?;
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
        Case::new("TransposeConv2d", b.finish(vec![y]), seed).prop()?;
    }
}
