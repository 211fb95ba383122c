//! Shared helpers of the kernel tests: deterministic data, geometry strategies, assertions on
//! the workspace's error metrics (`heimdall_testkit::rel_l2` and `rel_l2_scaled`).

use super::window::Window;
use heimdall_testkit::rel_l2;
use proptest::prelude::*;

/// Deterministic pseudo-random values in [-1, 1).
pub fn data(seed: u64, len: usize) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407)
        | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// Asserts a relative L2 error of at most 1e-5.
pub fn assert_close(out: &[f32], reference: &[f32]) {
    let e = rel_l2(out, reference);
    assert!(
        e <= 1e-5,
        "relative L2 error {e}: out {:?}.. ref {:?}..",
        &out[..out.len().min(8)],
        &reference[..reference.len().min(8)]
    );
}

/// Asserts `||out - reference|| ≤ 1e-5 · max(||reference||, ||scale||)`, where `scale` is the
/// same computation on absolute values: a sum whose terms cancel (a mean of zero-mean data
/// landing near zero) carries the rounding of its large terms, so its error is measured against
/// the norm-wise bound of the sum, not against the small result alone.
pub fn assert_close_scaled(out: &[f32], reference: &[f32], scale: &[f32]) {
    let e = heimdall_testkit::rel_l2_scaled(out, reference, scale);
    assert!(
        e <= 1e-5,
        "scaled relative L2 error {e}: out {:?}.. ref {:?}..",
        &out[..out.len().min(8)],
        &reference[..reference.len().min(8)]
    );
}

/// The absolute values of `v`.
pub fn abs(v: &[f32]) -> Vec<f32> {
    v.iter().map(|x| x.abs()).collect()
}

/// A naive window op over `w`'s output `[out_h, out_w, out_c]`: output `(oy, ox, o)` at flat
/// index `idx` is `finish(idx, o, acc)`, where `acc` starts at `start(o)` and takes
/// `tap(&mut acc, o, ky, kx, pixel)` for each tap of the window inside the input, in `(ky, kx)`
/// order, `pixel = iy * in_w + ix` the input pixel it reads.
pub fn window_reference<A>(
    w: &Window,
    start: impl Fn(usize) -> A,
    tap: impl Fn(&mut A, usize, usize, usize, usize),
    finish: impl Fn(usize, usize, A) -> f32,
) -> Vec<f32> {
    let mut out = vec![0.0; w.out_h * w.out_w * w.out_c];
    for oy in 0..w.out_h {
        for ox in 0..w.out_w {
            for o in 0..w.out_c {
                let mut acc = start(o);
                for ky in 0..w.k_h {
                    let iy = (oy * w.stride_h + ky * w.dil_h).wrapping_sub(w.pad_top);
                    for kx in 0..w.k_w {
                        let ix = (ox * w.stride_w + kx * w.dil_w).wrapping_sub(w.pad_left);
                        if iy < w.in_h && ix < w.in_w {
                            tap(&mut acc, o, ky, kx, iy * w.in_w + ix);
                        }
                    }
                }
                let idx = (oy * w.out_w + ox) * w.out_c + o;
                out[idx] = finish(idx, o, acc);
            }
        }
    }
    out
}

/// Padding choices of a generated window.
#[derive(Clone, Copy, Debug)]
pub enum Padding {
    /// TFLite SAME.
    Same,
    /// TFLite VALID.
    Valid,
    /// Explicit top/left and bottom/right padding.
    Explicit(usize, usize, usize, usize),
}

/// Output size and leading padding of one spatial dimension.
pub fn out_dim(
    input: usize,
    k: usize,
    stride: usize,
    dil: usize,
    pad: Padding,
    vertical: bool,
) -> (usize, usize) {
    let eff = (k - 1) * dil + 1;
    match pad {
        Padding::Same => {
            let out = input.div_ceil(stride);
            let total = ((out - 1) * stride + eff).saturating_sub(input);
            (out, total / 2)
        }
        Padding::Valid => ((input.saturating_sub(eff) / stride) + 1, 0),
        Padding::Explicit(t, l, b, r) => {
            let (lo, hi) = if vertical { (t, b) } else { (l, r) };
            ((input + lo + hi - eff) / stride + 1, lo)
        }
    }
}

/// A window for the given sizes (`out_c` given separately), if its output is not empty.
#[allow(clippy::too_many_arguments)]
pub fn window(
    h: usize,
    w: usize,
    c: usize,
    out_c: usize,
    k: (usize, usize),
    s: (usize, usize),
    d: usize,
    pad: Padding,
) -> Window {
    let (oh, pt) = out_dim(h, k.0, s.0, d, pad, true);
    let (ow, pl) = out_dim(w, k.1, s.1, d, pad, false);
    Window {
        in_h: h,
        in_w: w,
        in_c: c,
        out_h: oh,
        out_w: ow,
        out_c,
        k_h: k.0,
        k_w: k.1,
        stride_h: s.0,
        stride_w: s.1,
        dil_h: d,
        dil_w: d,
        pad_top: pt,
        pad_left: pl,
    }
}

/// Paddings: SAME, VALID, or explicit up to 2 per side.
pub fn padding() -> impl Strategy<Value = Padding> {
    prop_oneof![
        Just(Padding::Same),
        Just(Padding::Valid),
        (0..3usize, 0..3usize, 0..3usize, 0..3usize)
            .prop_map(|(a, b, c, d)| Padding::Explicit(a, b, c, d)),
    ]
}

/// Window geometries: kernels 1/2/3/5, strides 1..3, dilation 1..2, odd sizes.
pub fn windows(max_c: usize, with_out_c: bool) -> impl Strategy<Value = Window> {
    (
        1..12usize,
        1..12usize,
        1..max_c,
        1..max_c,
        prop_oneof![Just(1usize), Just(2), Just(3), Just(5)],
        prop_oneof![Just(1usize), Just(2), Just(3), Just(5)],
        1..4usize,
        1..4usize,
        prop_oneof![4 => Just(1usize), 1 => Just(2)],
        padding(),
    )
        .prop_filter_map(
            "window larger than padded input",
            move |(h, w, c, oc, kh, kw, sh, sw, d, pad)| {
                let (ph, pw) = match pad {
                    Padding::Explicit(t, l, b, r) => (t + b, l + r),
                    _ => (0, 0),
                };
                if (kh - 1) * d + 1 > h + ph || (kw - 1) * d + 1 > w + pw {
                    return None;
                }
                let oc = if with_out_c { oc } else { c };
                Some(window(h, w, c, oc, (kh, kw), (sh, sw), d, pad))
            },
        )
}

/// Coordinates of flat index `i` in `shape`.
pub fn coords(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut c = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        c[d] = i % shape[d];
        i /= shape[d];
    }
    c
}

pub fn flat(c: &[usize], shape: &[usize]) -> usize {
    c.iter().zip(shape).fold(0, |acc, (c, d)| acc * d + c)
}

/// Element-wise `|got - want| <= tol * (1 + |want|)` (the MediaPipe kernels' tests).
pub fn close(got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len(), "length: got {got:?}, want {want:?}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "element {i}: got {g}, want {w}\n got  {got:?}\n want {want:?}"
        );
    }
}

/// A row-major 4×4 matrix with the given first two rows (third column 0), and the identity
/// below.
pub fn mat(m0: f32, m1: f32, m3: f32, m4: f32, m5: f32, m7: f32) -> [f32; 16] {
    [
        m0, m1, 0.0, m3, m4, m5, 0.0, m7, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0,
    ]
}
