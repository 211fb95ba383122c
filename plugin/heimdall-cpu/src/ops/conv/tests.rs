//! Tests of the convolution against naive references.

#![allow(clippy::needless_range_loop)] // naive references index on purpose

use super::*;
use crate::kernels::Act;
use crate::kernels::testutil::*;
use proptest::prelude::*;

/// A convolution problem with a naive reference.
#[derive(Debug)]
struct ConvProblem {
    w: Window,
    input: Vec<f32>,
    filter: Vec<f32>,
    bias: Option<Vec<f32>>,
    residual: Option<Vec<f32>>,
    relu6: bool,
}

impl ConvProblem {
    fn new(w: Window, seed: u64, bias: bool, residual: bool, relu6: bool) -> Self {
        let input = data(seed, w.in_h * w.in_w * w.in_c);
        let filter = data(seed + 1, w.out_c * w.k_h * w.k_w * w.in_c);
        let bias = bias.then(|| data(seed + 2, w.out_c));
        let residual = residual.then(|| data(seed + 3, w.out_h * w.out_w * w.out_c));
        ConvProblem {
            w,
            input,
            filter,
            bias,
            residual,
            relu6,
        }
    }

    fn reference(&self) -> Vec<f32> {
        let w = &self.w;
        window_reference(
            w,
            |o| self.bias.as_ref().map_or(0.0, |b| b[o]) as f64,
            |s, o, ky, kx, pixel| {
                for i in 0..w.in_c {
                    let x = self.input[pixel * w.in_c + i];
                    let f = self.filter[((o * w.k_h + ky) * w.k_w + kx) * w.in_c + i];
                    *s += x as f64 * f as f64;
                }
            },
            |idx, _, mut s| {
                if let Some(r) = &self.residual {
                    s += r[idx] as f64;
                }
                if self.relu6 {
                    s = s.clamp(0.0, 6.0);
                }
                s as f32
            },
        )
    }

    /// The reference over the absolute values of the input, filter and bias: the sum of
    /// each output's terms' magnitudes, the scale of its rounding error.
    fn magnitude(&self) -> Vec<f32> {
        ConvProblem {
            w: self.w,
            input: abs(&self.input),
            filter: abs(&self.filter),
            bias: self.bias.as_deref().map(abs),
            residual: self.residual.as_deref().map(abs),
            relu6: false,
        }
        .reference()
    }

    /// Asserts `out` is the reference within 1e-5 of the larger of the reference's and the
    /// terms' magnitudes' norms (`assert_close_scaled`): an output whose terms cancel carries
    /// the rounding of its large terms.
    fn assert_matches(&self, out: &[f32]) {
        assert_close_scaled(out, &self.reference(), &self.magnitude());
    }

    fn run(&self, par: &Par) -> Vec<f32> {
        let conv = PackedConv::new(&self.filter, self.bias.as_deref(), self.w);
        let mut out = vec![f32::NAN; self.w.out_h * self.w.out_w * self.w.out_c];
        let mut scratch = vec![f32::NAN; conv.scratch_len(par)];
        let ep = Epilogue {
            residual: self.residual.as_deref(),
            act: if self.relu6 { Act::Relu6 } else { Act::None },
        };
        conv.run(par, &self.input, &mut out, &mut scratch, &ep);
        out
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn conv_matches_reference(w in windows(20, true), seed in 0u64..1000, bias: bool, residual: bool, relu6: bool) {
        let p = ConvProblem::new(w, seed, bias, residual, relu6);
        p.assert_matches(&p.run(&Par::new(1)));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// Random windows (1x1 direct, im2col edges, implicit-im2col interiors, dilations):
    /// the SIMD matrix product (NEON on aarch64, AVX on x86-64; the one `new` picks) is
    /// within 1e-6 of the portable one, the reference, which it is not bit for bit (fused
    /// multiply-adds); on aarch64 it must be NEON. The error is relative to the larger of
    /// the output's norm and its terms' magnitudes ([`ConvProblem::magnitude`]): a single
    /// output whose 55 terms cancel to near zero (seen under qemu: 1.8e-6 relative to the
    /// value) carries the rounding of its large terms, which both orders have.
    #[test]
    fn conv_simd_matches_portable(w in windows(20, true), seed in 0u64..1000) {
        let p = ConvProblem::new(w, seed, true, false, false);
        let simd = PackedConv::new(&p.filter, p.bias.as_deref(), w);
        #[cfg(target_arch = "aarch64")]
        prop_assert_eq!(simd.isa(), Isa::Neon, "NEON not selected");
        prop_assert_eq!(simd.isa(), Isa::detect());
        let portable = PackedConv::with_isa(Isa::Portable, &p.filter, p.bias.as_deref(), w);
        prop_assert_eq!(portable.isa(), Isa::Portable);
        let run = |conv: &PackedConv| {
            let par = Par::new(1);
            let mut out = vec![f32::NAN; w.out_h * w.out_w * w.out_c];
            let mut scratch = vec![f32::NAN; conv.scratch_len(&par)];
            conv.run(&par, &p.input, &mut out, &mut scratch, &Epilogue::NONE);
            out
        };
        let (a, b) = (run(&simd), run(&portable));
        let e = heimdall_testkit::rel_l2_scaled(&a, &b, &p.magnitude());
        prop_assert!(e <= 1e-6, "scaled rel-L2 {} between {:?} and portable", e, simd.isa());
    }
}

/// A convolution with a fused reflect pad against the unfused pair: the pad kernel (checked
/// against NumPy in `pad.rs`) then the naive reference convolution over the padded input,
/// and bit for bit against the packed convolution over the padded input. `k`: `[in_c,
/// out_c, k_h, k_w]`; `s`: strides and dilation; `pads`: top, bottom, left, right.
fn check_reflect(hw: [usize; 2], k: [usize; 4], s: [usize; 3], pads: [usize; 4], seed: u64) {
    use crate::ops::pad::{Fill, pad_with};
    let ([h, w], [c, oc, kh, kw], [sh, sw, d], [t, b, l, r]) = (hw, k, s, pads);
    let (ph, pw) = (h + t + b, w + l + r);
    if ph < (kh - 1) * d + 1 || pw < (kw - 1) * d + 1 {
        return;
    }
    let padded = window(ph, pw, c, oc, (kh, kw), (sh, sw), d, Padding::Valid);
    let p = ConvProblem::new(padded, seed, true, true, false);
    let mut x = vec![0.0; h * w * c];
    // The unpadded input is the padded one's interior.
    for y in 0..h {
        let src = ((y + t) * pw + l) * c;
        x[y * w * c..(y + 1) * w * c].copy_from_slice(&p.input[src..src + w * c]);
    }
    let mut repadded = vec![f32::NAN; p.input.len()];
    let shape = [1, h, w, c];
    let pads = [(0, 0), (t, b), (l, r), (0, 0)];
    pad_with(
        &Par::new(1),
        &x,
        &shape,
        &pads,
        Fill::Reflect,
        &mut repadded,
    );
    let p = ConvProblem {
        input: repadded,
        ..p
    };
    let fused_w = Window {
        in_h: h,
        in_w: w,
        pad_top: t,
        pad_left: l,
        ..padded
    };
    let conv = PackedConv::new(&p.filter, p.bias.as_deref(), fused_w).with_reflect_padding();
    let par = Par::new(1);
    let mut out = vec![f32::NAN; p.reference().len()];
    let mut scratch = vec![f32::NAN; conv.scratch_len(&par)];
    let ep = Epilogue {
        residual: p.residual.as_deref(),
        act: Act::None,
    };
    conv.run(&par, &x, &mut out, &mut scratch, &ep);
    p.assert_matches(&out);
    assert_eq!(out, p.run(&par), "{hw:?} {k:?} {s:?} {pads:?}");
    // Parts of rows on other threads start their rings anew: the same bits.
    let par = Par::new(3);
    let mut many = vec![f32::NAN; out.len()];
    let mut scratch = vec![f32::NAN; conv.scratch_len(&par)];
    conv.run(&par, &x, &mut many, &mut scratch, &ep);
    assert_eq!(out, many, "{hw:?} {k:?} {s:?} {pads:?}, 3 threads");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn conv_reflect_padding_matches_pad_then_conv(
        (h, w, t, b, l, r) in (2..14usize, 2..14usize).prop_flat_map(|(h, w)| {
            (Just(h), Just(w), 0..h.min(5), 0..h.min(5), 0..w.min(5), 0..w.min(5))
        }),
        k in (1..6usize, 1..9usize, 1..6usize, 1..6usize),
        s in (1..7usize, 1..7usize, 1..3usize),
        seed in 0u64..1000,
    ) {
        check_reflect([h, w], [k.0, k.1, k.2, k.3], [s.0, s.1, s.2], [t, b, l, r], seed);
    }
}

/// A stride wider than the input: the ring's rows end inside the left padding.
#[test]
fn conv_reflect_stride_past_the_input() {
    check_reflect([3, 3], [2, 3, 1, 1], [5, 6, 1], [2, 0, 2, 0], 1);
    check_reflect([4, 3], [1, 2, 2, 1], [1, 7, 1], [1, 2, 2, 1], 2);
}

/// multistyle26's first and last convolutions (9x9 over a reflect pad of 4) on an image
/// large enough to be split over threads, the ring reused row after row; a stride-2 3x3
/// one and a dilated one.
#[test]
fn conv_reflect_first_layer_shapes() {
    check_reflect([40, 36], [3, 8, 9, 9], [1, 1, 1], [4, 4, 4, 4], 3);
    check_reflect([41, 30], [4, 3, 9, 9], [1, 1, 1], [4, 4, 4, 4], 4);
    check_reflect([33, 35], [4, 8, 3, 3], [2, 2, 1], [1, 1, 1, 1], 5);
    check_reflect([30, 29], [2, 5, 3, 3], [1, 2, 2], [2, 2, 2, 2], 6);
    // 17x17 taps dilated by 2: more segments than the ring's offsets hold (the fallback).
    check_reflect([36, 36], [1, 2, 17, 17], [1, 1, 2], [3, 2, 4, 1], 7);
}

#[test]
fn conv_1x1_and_first_layer_shapes() {
    for w in [
        window(17, 9, 13, 37, (1, 1), (1, 1), 1, Padding::Valid),
        window(33, 31, 3, 24, (3, 3), (2, 2), 1, Padding::Same),
        window(16, 16, 32, 16, (1, 1), (2, 2), 1, Padding::Same),
        window(9, 9, 8, 8, (3, 3), (3, 3), 1, Padding::Valid),
    ] {
        let p = ConvProblem::new(w, 7, true, true, false);
        p.assert_matches(&p.run(&Par::new(1)));
    }
}

#[test]
fn conv_wide_rows_and_dilation() {
    // Output rows wider than the direct path's block, dilation with padding, stride 3.
    for w in [
        window(4, 700, 5, 9, (3, 3), (1, 1), 1, Padding::Same),
        window(
            13,
            17,
            6,
            11,
            (3, 3),
            (1, 1),
            2,
            Padding::Explicit(2, 1, 2, 2),
        ),
        window(20, 19, 4, 7, (5, 5), (3, 3), 1, Padding::Same),
    ] {
        let p = ConvProblem::new(w, 11, true, false, false);
        p.assert_matches(&p.run(&Par::new(1)));
        assert_eq!(p.run(&Par::new(1)), p.run(&Par::new(2)));
    }
}

#[test]
fn conv_hand_computed() {
    // 2x2 input, 1 channel, 2x2 filter of ones, SAME (pad bottom/right only): sums of the
    // window anchored at each pixel.
    let w = window(2, 2, 1, 1, (2, 2), (1, 1), 1, Padding::Same);
    let conv = PackedConv::new(&[1.0, 1.0, 1.0, 1.0], Some(&[0.5]), w);
    let mut out = vec![0.0; 4];
    conv.run(
        &Par::new(1),
        &[1.0, 2.0, 3.0, 4.0],
        &mut out,
        &mut vec![0.0; conv.scratch_len(&Par::new(1))],
        &Epilogue::NONE,
    );
    assert_eq!(out, vec![10.5, 6.5, 7.5, 4.5]);
}

/// 1x1 convolutions of few pixels and many channels (the end of a backbone) are split
/// over output-channel panels: every thread count gives the same values, the reference's.
#[test]
fn conv_few_pixels_split_over_channels() {
    for w in [
        window(2, 2, 512, 512, (1, 1), (1, 1), 1, Padding::Valid),
        window(6, 6, 256, 256, (1, 1), (1, 1), 1, Padding::Valid),
        window(3, 5, 96, 600, (1, 1), (1, 1), 1, Padding::Valid),
    ] {
        let p = ConvProblem::new(w, 9, true, true, true);
        let one = p.run(&Par::new(1));
        p.assert_matches(&one);
        for threads in [2, 3, 8, 16] {
            assert_eq!(one, p.run(&Par::new(threads)), "{threads} threads");
        }
        let px = w.out_h * w.out_w;
        let (_, col_parts) = Par::new(16).even_grid(
            px,
            w.out_c,
            px * w.in_c * w.out_c,
            MIN_MACS_PER_PART,
            12,
            16,
        );
        assert!(col_parts > 1, "{w:?} not split over channels");
    }
}

/// hand_landmark_lite's 1x1 convolutions on 7x7 and 14x14 maps (49 and 196 pixels, 48 to
/// 672 channels; odd counts too), cut evenly over rows and channel panels on 2 and 4
/// threads: one thread's bits, the reference's values.
#[test]
fn conv_even_split_matches() {
    for (h, c_in, c_out) in [
        (7, 384, 112),
        (7, 112, 672),
        (7, 671, 113),
        (14, 288, 48),
        (14, 48, 288),
        (14, 65, 383),
    ] {
        let w = window(h, h, c_in, c_out, (1, 1), (1, 1), 1, Padding::Valid);
        let p = ConvProblem::new(w, 11, true, true, true);
        let one = p.run(&Par::new(1));
        p.assert_matches(&one);
        for threads in [2, 4] {
            assert_eq!(one, p.run(&Par::new(threads)), "{w:?} {threads} threads");
        }
    }
}

/// An expansion whose weights outweigh the values it reads and writes (hand_landmark_lite's
/// 7x7 112 -> 672: 75 264 weights, 5 488 values in, 32 928 out) is cut into one band of output
/// channels a thread, so that no thread reads another's weights; the projection back and the
/// 14x14 expansions (more pixels than weights) keep [`Par::even_grid`]'s rows. Each split's
/// values are one thread's (`conv_even_split_matches`, the same shapes).
#[test]
fn weight_bound_expansions_split_into_channel_bands() {
    let split = |h: usize, c_in: usize, c_out: usize, threads: usize| {
        let w = window(h, h, c_in, c_out, (1, 1), (1, 1), 1, Padding::Valid);
        let filter = data(3, c_in * c_out);
        PackedConv::new(&filter, None, w).direct_split(&Par::new(threads))
    };
    for threads in [2, 3, 4] {
        assert_eq!(split(7, 112, 672, threads), (1, threads), "7x7 112 -> 672");
        let (rows, _) = split(7, 672, 112, threads);
        assert!(
            rows > 1,
            "7x7 672 -> 112 on {threads} threads: {rows} row parts"
        );
        let (rows, cols) = split(14, 64, 384, threads);
        assert!(
            rows > 1 && cols == 1,
            "14x14 64 -> 384 on {threads}: {rows} x {cols}"
        );
    }
    assert_eq!(split(7, 112, 672, 1), (1, 1));
}

#[test]
fn conv_threads_bit_identical() {
    for w in [
        window(64, 64, 32, 64, (1, 1), (1, 1), 1, Padding::Valid),
        window(37, 41, 19, 21, (3, 3), (2, 2), 1, Padding::Same),
    ] {
        let p = ConvProblem::new(w, 3, true, true, true);
        assert_eq!(p.run(&Par::new(1)), p.run(&Par::new(2)));
        assert_eq!(p.run(&Par::new(1)), p.run(&Par::new(3)));
        p.assert_matches(&p.run(&Par::new(2)));
    }
}
