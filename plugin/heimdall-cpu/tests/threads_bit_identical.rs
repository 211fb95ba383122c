//! Every kernel the small MediaPipe models and PP-OCR spend their time in, split over the thread pool,
//! computes the bits it computes on one thread: random shapes from a few values to several
//! parts per thread at the kernels' split thresholds, on 2, 3, 4 and 7 threads. A part that
//! computed the wrong rows or channels, skipped some (outputs start as NaN, and NaN never
//! equals NaN) or wrote another part's values changes the output.

use heimdall_cpu::kernels::{
    Act, BinaryOp, Epilogue, PackedConv, PackedDepthwise, Par, Window, activation,
    add_channel_padded, avg_pool, binary, concat_on, conv_scratch_len, map, max_pool, mean_on, pad,
    pool_scratch_len, resize_four_tap, resize_two_tap, vmath,
};
use heimdall_ir::ops::resize::{axis_taps, cubic_taps};
use heimdall_ir::{CoordMode, NearestMode, ResizeMode};
use heimdall_testkit::XorShift;
use proptest::prelude::*;

const THREADS: [usize; 4] = [2, 3, 4, 7];

/// Runs `f` into a NaN-filled output of `len` values on one thread and on each of
/// [`THREADS`], and asserts the same outputs.
fn same_on_all_threads(len: usize, what: &str, f: impl Fn(&Par, &mut [f32])) {
    let mut one = vec![f32::NAN; len];
    f(&Par::new(1), &mut one);
    for threads in THREADS {
        let mut many = vec![f32::NAN; len];
        f(&Par::new(threads), &mut many);
        assert!(one == many, "{what}: {threads} threads differ from one");
    }
}

/// A window of `k` taps, stride `s`, TFLite SAME padding.
fn same_window(h: usize, w: usize, c: usize, out_c: usize, k: usize, s: usize) -> Window {
    let dim = |n: usize| {
        let out = n.div_ceil(s);
        (out, ((out - 1) * s + k).saturating_sub(n) / 2)
    };
    let ((out_h, pad_top), (out_w, pad_left)) = (dim(h), dim(w));
    Window {
        in_h: h,
        in_w: w,
        in_c: c,
        out_h,
        out_w,
        out_c,
        k_h: k,
        k_w: k,
        stride_h: s,
        stride_w: s,
        dil_h: 1,
        dil_w: 1,
        pad_top,
        pad_left,
    }
}

fn act(i: u8, alpha: &[f32]) -> Act<'_> {
    match i % 4 {
        0 => Act::None,
        1 => Act::Relu,
        2 => Act::HardSwish,
        _ => Act::Prelu(alpha),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// ADD, MUL, SUB, MAX of two tensors, of a tensor and a per-channel vector, of a tensor and
    /// a row broadcast over the height; with a residual and an activation or without.
    #[test]
    fn binary_ops(h in 1..80usize, w in 1..80usize, c in 1..48usize, op in 0..4u8,
                  form in 0..3u8, residual: bool, a in 0..4u8, seed in 0..1000u64) {
        let op = [BinaryOp::Add, BinaryOp::Mul, BinaryOp::Sub, BinaryOp::Max][op as usize];
        let out = [1, h, w, c];
        let b_shape: Vec<usize> = match form {
            0 => out.to_vec(),
            1 => vec![c],
            _ => vec![1, 1, w, c],
        };
        let x = XorShift::values(seed, h * w * c);
        let y = XorShift::values(seed + 1, b_shape.iter().product());
        let r = XorShift::values(seed + 2, h * w * c);
        let alpha = XorShift::values(seed + 3, c);
        let ep = Epilogue { residual: residual.then_some(&r[..]), act: act(a, &alpha) };
        same_on_all_threads(x.len(), &format!("{op:?} {out:?} by {b_shape:?}"), |par, o| {
            binary(par, op, &x, &out, &y, &b_shape, o, &ep)
        });
    }

    /// The add of a tensor and a zero channel pad fused into it, with a residual and an
    /// activation or without.
    #[test]
    fn add_of_a_channel_pad(h in 1..80usize, w in 1..80usize, c in 1..40usize,
                            after in 0..9usize, residual: bool, a in 0..4u8, seed in 0..1000u64) {
        let (in_c, c) = (c, c + after);
        let full = XorShift::values(seed, h * w * c);
        let x = XorShift::values(seed + 1, h * w * in_c);
        let r = XorShift::values(seed + 2, h * w * c);
        let alpha = XorShift::values(seed + 3, c);
        let ep = Epilogue { residual: residual.then_some(&r[..]), act: act(a, &alpha) };
        same_on_all_threads(full.len(), &format!("add {h}x{w}x{in_c} padded to {c}"), |par, o| {
            add_channel_padded(par, &full, &x, c, in_c, o, &ep)
        });
    }

    /// PAD of the channels only (before a residual add) and of every axis.
    #[test]
    fn pad_channels_and_all(h in 1..80usize, w in 1..80usize, c in 1..40usize,
                            after in 0..9usize, spatial: bool, seed in 0..1000u64) {
        let shape = [1, h, w, c];
        let s = usize::from(spatial);
        let pads = [(0, 0), (s, 2 * s), (2 * s, s), (s, after)];
        let x = XorShift::values(seed, h * w * c);
        let len = (h + 3 * s) * (w + 3 * s) * (c + s + after);
        same_on_all_threads(len, &format!("pad {shape:?} by {pads:?}"), |par, o| {
            pad(par, &x, &shape, &pads, 0.5, o)
        });
    }

    /// Max and average pools (2x2 stride 2 as BlazeFace's, 3x3 stride 1 and 2), with an
    /// activation.
    #[test]
    fn pools(h in 1..100usize, w in 1..100usize, c in 1..40usize, geo in 0..3u8,
             max: bool, a in 0..3u8, seed in 0..1000u64) {
        let (k, s) = [(2, 2), (3, 1), (3, 2)][geo as usize];
        let win = same_window(h, w, c, c, k, s);
        let x = XorShift::values(seed, h * w * c);
        let ep = Epilogue { residual: None, act: act(a, &[]) };
        let len = win.out_h * win.out_w * c;
        same_on_all_threads(len, &format!("pool {win:?}"), |par, o| {
            if max {
                max_pool(par, &win, &x, o, &ep);
            } else {
                let mut scratch = vec![0.0; pool_scratch_len(&win)];
                avg_pool(par, &win, &x, o, &ep, &mut scratch);
            }
        });
    }

    /// Depthwise 3x3 and 5x5 at strides 1 and 2, with a residual and an activation or without.
    #[test]
    fn depthwise(h in 1..100usize, w in 1..100usize, c in 1..72usize, k5: bool, s2: bool,
                 residual: bool, a in 0..4u8, seed in 0..1000u64) {
        let win = same_window(h, w, c, c, if k5 { 5 } else { 3 }, if s2 { 2 } else { 1 });
        let x = XorShift::values(seed, h * w * c);
        let filter = XorShift::values(seed + 1, win.k_h * win.k_w * c);
        let bias = XorShift::values(seed + 2, c);
        let len = win.out_h * win.out_w * c;
        let r = XorShift::values(seed + 3, len);
        let alpha = XorShift::values(seed + 4, c);
        let dw = PackedDepthwise::new(&filter, Some(&bias), win);
        let ep = Epilogue { residual: residual.then_some(&r[..]), act: act(a, &alpha) };
        same_on_all_threads(len, &format!("depthwise {win:?}"), |par, o| dw.run(par, &x, o, &ep));
    }

    /// 1x1 and 3x3 convolutions (the 3x3 at stride 2, as the models' first), with an
    /// activation.
    #[test]
    fn conv(h in 1..64usize, w in 1..64usize, c in 1..40usize, oc in 1..72usize, k3: bool,
            a in 0..4u8, seed in 0..1000u64) {
        let (k, s) = if k3 { (3, 2) } else { (1, 1) };
        let win = same_window(h, w, c, oc, k, s);
        let x = XorShift::values(seed, h * w * c);
        let filter = XorShift::values(seed + 1, oc * k * k * c);
        let bias = XorShift::values(seed + 2, oc);
        let alpha = XorShift::values(seed + 3, oc);
        let conv = PackedConv::new(&filter, Some(&bias), win);
        let ep = Epilogue { residual: None, act: act(a, &alpha) };
        let len = win.out_h * win.out_w * oc;
        same_on_all_threads(len, &format!("conv {win:?}"), |par, o| {
            let mut scratch = vec![0.0; conv_scratch_len(&win, par.threads())];
            conv.run(par, &x, o, &mut scratch, &ep)
        });
    }

    /// Standalone activations over a tensor.
    #[test]
    fn activations(n in 1..100_000usize, c in 1..40usize, a in 1..4u8, seed in 0..1000u64) {
        let n = n.div_ceil(c) * c;
        let x = XorShift::values(seed, n);
        let alpha = XorShift::values(seed + 1, c);
        let ep = Epilogue { residual: None, act: act(a, &alpha) };
        same_on_all_threads(n, "activation", |par, o| activation(par, &x, o, c, &ep));
    }

    /// CONCATENATION of two or three tensors along channels (PP-OCR's) or along rows.
    #[test]
    fn concat(h in 1..100usize, w in 1..100usize, cs in proptest::collection::vec(1..50usize, 2..4),
              rows: bool, seed in 0..1000u64) {
        let axis = if rows { 1 } else { 3 };
        let shapes: Vec<[usize; 4]> = cs.iter().map(|&c| if rows { [1, c, w, h] } else { [1, h, w, c] }).collect();
        let tensors: Vec<Vec<f32>> = shapes.iter().enumerate()
            .map(|(i, s)| XorShift::values(seed + i as u64, s.iter().product())).collect();
        let inputs: Vec<(&[f32], &[usize])> = tensors.iter().zip(&shapes).map(|(t, s)| (&t[..], &s[..])).collect();
        let len = tensors.iter().map(Vec::len).sum();
        same_on_all_threads(len, &format!("concat {shapes:?} on axis {axis}"), |par, o| {
            concat_on(par, &inputs, axis, o)
        });
    }

    /// Separable resizes (nearest, linear, cubic; PP-OCR's linear x2 and x4 upsamplings), up
    /// and down.
    #[test]
    fn resize(ih in 1..60usize, iw in 1..60usize, c in 1..40usize, oh in 1..160usize,
              ow in 1..160usize, mode in 0..3u8, seed in 0..1000u64) {
        let x = XorShift::values(seed, ih * iw * c);
        let (sy, sx) = (oh as f32 / ih as f32, ow as f32 / iw as f32);
        let what = format!("resize {ih}x{iw}x{c} to {oh}x{ow}, mode {mode}");
        if mode == 2 {
            let rows = cubic_taps(ih, oh, sy, CoordMode::HalfPixel, -0.75, false);
            let cols = cubic_taps(iw, ow, sx, CoordMode::HalfPixel, -0.75, false);
            same_on_all_threads(oh * ow * c, &what, |par, o| {
                resize_four_tap(par, &x, iw, c, &rows, &cols, o)
            });
        } else {
            let m = if mode == 0 { ResizeMode::Nearest(NearestMode::Floor) } else { ResizeMode::Linear };
            let rows = axis_taps(ih, oh, sy, CoordMode::HalfPixel, m);
            let cols = axis_taps(iw, ow, sx, CoordMode::HalfPixel, m);
            same_on_all_threads(oh * ow * c, &what, |par, o| {
                resize_two_tap(par, &x, iw, c, &rows, &cols, o)
            });
        }
    }

    /// Global averages over the pixels (PP-OCR's squeeze-and-excitation means): channels not a
    /// multiple of the parts' groups included.
    #[test]
    fn global_mean(h in 1..120usize, w in 1..120usize, c in 1..100usize, seed in 0..1000u64) {
        let x = XorShift::values(seed, h * w * c);
        same_on_all_threads(c, &format!("mean of {h}x{w}x{c}"), |par, o| {
            mean_on(par, &x, &[1, h, w, c], &[1, 2], o)
        });
    }

    /// GELU over a tensor.
    #[test]
    fn gelu(n in 1..200_000usize, seed in 0..1000u64) {
        let x: Vec<f32> = XorShift::values(seed, n).iter().map(|v| v * 4.0).collect();
        same_on_all_threads(n, "gelu", |par, o| map(par, &x, o, &vmath::gelu_slice));
    }
}
