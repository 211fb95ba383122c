//! Tests of the depthwise convolution against naive references.

#![allow(clippy::needless_range_loop)] // naive references index on purpose

use super::*;
use crate::kernels::Act;
use crate::kernels::testutil::*;
use proptest::prelude::*;

/// A depthwise convolution problem with a naive reference.
#[derive(Debug)]
struct DepthwiseProblem {
    w: Window,
    input: Vec<f32>,
    filter: Vec<f32>,
    bias: Option<Vec<f32>>,
    alpha: Vec<f32>,
    residual: Option<Vec<f32>>,
}

impl DepthwiseProblem {
    fn new(w: Window, seed: u64, bias: bool, residual: bool) -> Self {
        DepthwiseProblem {
            w,
            input: data(seed, w.in_h * w.in_w * w.in_c),
            filter: data(seed + 1, w.k_h * w.k_w * w.out_c),
            bias: bias.then(|| data(seed + 2, w.out_c)),
            alpha: data(seed + 4, w.out_c),
            residual: residual.then(|| data(seed + 3, w.out_h * w.out_w * w.out_c)),
        }
    }

    /// The reference over absolute values: each output's terms' magnitudes, the scale of
    /// its rounding error (all sums non-negative, so `alpha` never applies).
    fn magnitude(&self) -> Vec<f32> {
        DepthwiseProblem {
            w: self.w,
            input: abs(&self.input),
            filter: abs(&self.filter),
            bias: self.bias.as_deref().map(abs),
            alpha: self.alpha.clone(),
            residual: self.residual.as_deref().map(abs),
        }
        .reference()
    }

    /// Asserts `out` is the reference within 1e-5 of the larger of the reference's and the
    /// terms' magnitudes' norms (`assert_close_scaled`): an output whose terms cancel carries
    /// the rounding of its large terms.
    fn assert_matches(&self, out: &[f32]) {
        assert_close_scaled(out, &self.reference(), &self.magnitude());
    }

    fn reference(&self) -> Vec<f32> {
        let w = &self.w;
        let mult = w.out_c / w.in_c;
        window_reference(
            w,
            |oc| self.bias.as_ref().map_or(0.0, |b| b[oc]) as f64,
            |s, oc, ky, kx, pixel| {
                let x = self.input[pixel * w.in_c + oc / mult];
                *s += x as f64 * self.filter[(ky * w.k_w + kx) * w.out_c + oc] as f64;
            },
            |idx, oc, mut s| {
                if let Some(r) = &self.residual {
                    s += r[idx] as f64;
                }
                if s < 0.0 {
                    s *= self.alpha[oc] as f64;
                }
                s as f32
            },
        )
    }

    fn run(&self, par: &Par) -> Vec<f32> {
        let dw = PackedDepthwise::new(&self.filter, self.bias.as_deref(), self.w);
        let mut out = vec![f32::NAN; self.w.out_h * self.w.out_w * self.w.out_c];
        let ep = Epilogue {
            residual: self.residual.as_deref(),
            act: Act::Prelu(&self.alpha),
        };
        dw.run(par, &self.input, &mut out, &ep);
        out
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn depthwise_matches_reference(w in windows(40, false), seed in 0u64..1000, bias: bool, residual: bool) {
        let p = DepthwiseProblem::new(w, seed, bias, residual);
        p.assert_matches(&p.run(&Par::new(1)));
    }

    #[test]
    fn depthwise_multiplier_matches_reference(w in windows(6, false), mult in 1..4usize, seed in 0u64..1000) {
        let w = Window { out_c: w.in_c * mult, ..w };
        let p = DepthwiseProblem::new(w, seed, true, false);
        p.assert_matches(&p.run(&Par::new(1)));
    }
}

#[test]
fn depthwise_portable_path_matches_reference() {
    for w in [
        window(19, 23, 37, 37, (3, 3), (1, 1), 1, Padding::Same),
        window(17, 16, 20, 20, (5, 5), (2, 2), 1, Padding::Same),
        window(9, 9, 7, 7, (3, 3), (1, 1), 2, Padding::Valid),
    ] {
        let p = DepthwiseProblem::new(w, 13, true, true);
        let mut dw = PackedDepthwise::new(&p.filter, p.bias.as_deref(), p.w);
        dw.isa = Isa::Portable;
        let mut out = vec![f32::NAN; w.out_h * w.out_w * w.out_c];
        let ep = Epilogue {
            residual: p.residual.as_deref(),
            act: Act::Prelu(&p.alpha),
        };
        dw.run(&Par::new(1), &p.input, &mut out, &ep);
        p.assert_matches(&out);
        p.assert_matches(&p.run(&Par::new(1)));
    }
}

/// `bias + taps in (ky, kx) order`, each tap one fused multiply-add (`f32::mul_add`) or a
/// product rounded then added: what the SIMD kernels and the portable one compute, bit for
/// bit (no epilogue).
fn ordered_reference(p: &DepthwiseProblem, fused: bool) -> Vec<f32> {
    let w = &p.w;
    window_reference(
        w,
        |c| p.bias.as_ref().map_or(0.0, |b| b[c]),
        |s, c, ky, kx, pixel| {
            let x = p.input[pixel * w.in_c + c];
            let f = p.filter[(ky * w.k_w + kx) * w.out_c + c];
            *s = if fused { x.mul_add(f, *s) } else { *s + x * f };
        },
        |_, _, s| s,
    )
}

/// Runs `p` with the kernels of `isa` and no epilogue.
fn run_isa(p: &DepthwiseProblem, isa: Isa, threads: usize) -> (Isa, Vec<f32>) {
    let dw = PackedDepthwise::with_isa(isa, &p.filter, p.bias.as_deref(), p.w);
    let mut out = vec![f32::NAN; p.w.out_h * p.w.out_w * p.w.out_c];
    dw.run(&Par::new(threads), &p.input, &mut out, &Epilogue::NONE);
    (dw.isa(), out)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    /// Random windows (channel counts 1..40: every tail of a 4- and 16-channel vector,
    /// kernels 1..5, strides, dilations, paddings): the SIMD kernels (NEON on aarch64,
    /// AVX-512 on x86-64) equal the fused reference bit for bit and are within 1e-6 of the
    /// portable kernel (relative to the larger of the output's norm and its terms'
    /// magnitudes, as the convolution's test), which equals the unfused reference bit for bit. On aarch64
    /// the NEON kernels must be the ones picked.
    #[test]
    fn depthwise_simd_matches_the_fused_reference(w in windows(40, false), seed in 0u64..1000, threads in 1..4usize) {
        let p = DepthwiseProblem::new(w, seed, true, false);
        let (isa, simd) = run_isa(&p, Isa::detect(), threads);
        #[cfg(target_arch = "aarch64")]
        prop_assert_eq!(isa, Isa::Neon, "NEON not selected");
        let (portable_isa, portable) = run_isa(&p, Isa::Portable, 1);
        prop_assert_eq!(portable_isa, Isa::Portable);
        prop_assert_eq!(&portable, &ordered_reference(&p, false));
        if isa != Isa::Portable {
            prop_assert_eq!(&simd, &ordered_reference(&p, true), "{:?}", isa);
            let e = heimdall_testkit::rel_l2_scaled(&simd, &portable, &p.magnitude());
            prop_assert!(e <= 1e-6, "{:?}: scaled rel-L2 {} to portable", isa, e);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Small maps of many channels (1x1 to 15x15, 17..700 channels, odd counts included,
    /// 3x3 and 5x5, strides 1 and 2), whose splits on 2 and 4 threads cut rows and channel
    /// blocks: the reference's values, and one thread's bits.
    #[test]
    fn depthwise_split_rows_and_channels_matches(
        h in 1..16usize, wd in 1..16usize, c in 17..700usize, k5: bool, s2: bool,
        seed in 0u64..1000, residual: bool,
    ) {
        let (k, st) = (if k5 { 5 } else { 3 }, if s2 { 2 } else { 1 });
        let w = window(h, wd, c, c, (k, k), (st, st), 1, Padding::Same);
        let p = DepthwiseProblem::new(w, seed, true, residual);
        let one = p.run(&Par::new(1));
        p.assert_matches(&one);
        for threads in [2, 4] {
            prop_assert_eq!(&one, &p.run(&Par::new(threads)), "{} threads, {:?}", threads, plan_split(&Par::new(threads), &w));
        }
    }
}

/// Splits of rows by channel blocks with ragged channel parts (odd channel counts, 7 and
/// 14 rows) on 2 and 4 threads: the split does cut channels, and every value is the
/// reference's and one thread's.
#[test]
fn depthwise_channel_split_matches() {
    for (h, c, k, st, threads) in [
        (7, 671, 5, 1, 4),
        (7, 673, 3, 1, 2),
        (14, 383, 5, 2, 4),
        (14, 289, 5, 1, 4),
        (7, 385, 5, 1, 2),
    ] {
        let w = window(h * st, h * st, c, c, (k, k), (st, st), 1, Padding::Same);
        let s = plan_split(&Par::new(threads), &w);
        assert!(s.cols > 1 && s.rows == h, "{w:?} {threads} threads: {s:?}");
        let p = DepthwiseProblem::new(w, 7, true, true);
        let one = p.run(&Par::new(1));
        p.assert_matches(&one);
        assert_eq!(one, p.run(&Par::new(threads)), "{w:?} {threads} threads");
    }
}

#[test]
fn valid_taps_bounds() {
    assert_eq!(valid_taps(0, 1, 1, 1, 5, 3), (1, 3));
    assert_eq!(valid_taps(4, 1, 1, 1, 5, 3), (0, 2));
    assert_eq!(valid_taps(0, 2, 2, 3, 4, 3), (2, 3));
}

#[test]
fn depthwise_hand_computed() {
    // 3x3 input of one channel, 3x3 filter of ones, SAME: sums of 3x3 neighbourhoods.
    let w = window(3, 3, 1, 1, (3, 3), (1, 1), 1, Padding::Same);
    let dw = PackedDepthwise::new(&[1.0; 9], None, w);
    let mut out = vec![0.0; 9];
    dw.run(
        &Par::new(1),
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
        &mut out,
        &Epilogue::NONE,
    );
    assert_eq!(
        out,
        vec![12.0, 21.0, 16.0, 27.0, 45.0, 33.0, 24.0, 39.0, 28.0]
    );
}

/// Depthwise convolutions of few pixels (6x6, 4x4, 12x12 stride 2) are split over rows
/// and over channel blocks (a channel count that is not a
/// multiple of 16, a multiplier of 2): every thread count and the portable path give the
/// same values, the reference's.
#[test]
fn depthwise_small_shapes_split_over_channels() {
    for (w, mult) in [
        (window(6, 6, 256, 256, (5, 5), (1, 1), 1, Padding::Same), 1),
        (window(4, 4, 520, 520, (5, 5), (1, 1), 1, Padding::Same), 1),
        (
            window(12, 12, 200, 200, (5, 5), (2, 2), 1, Padding::Same),
            1,
        ),
        (window(5, 7, 96, 96, (5, 5), (1, 1), 1, Padding::Same), 2),
        (window(7, 7, 120, 120, (5, 5), (1, 1), 1, Padding::Same), 1),
        (window(7, 7, 672, 672, (5, 5), (1, 1), 1, Padding::Same), 1),
    ] {
        let w = Window {
            out_c: w.in_c * mult,
            ..w
        };
        let p = DepthwiseProblem::new(w, 21, true, true);
        let one = p.run(&Par::new(1));
        p.assert_matches(&one);
        for threads in [2, 3, 8, 16] {
            assert_eq!(one, p.run(&Par::new(threads)), "{w:?} {threads} threads");
        }
        let mut dw = PackedDepthwise::new(&p.filter, p.bias.as_deref(), p.w);
        dw.isa = Isa::Portable;
        let ep = Epilogue {
            residual: p.residual.as_deref(),
            act: Act::Prelu(&p.alpha),
        };
        for threads in [1, 16] {
            let mut out = vec![f32::NAN; one.len()];
            dw.run(&Par::new(threads), &p.input, &mut out, &ep);
            p.assert_matches(&out);
        }
        // Fewer rows than parts wanted: channel blocks too.
        let s = plan_split(&Par::new(16), &w);
        let want = (w.out_h * w.out_w * w.out_c * w.k_h * w.k_w / MIN_MACS_PER_PART).min(64);
        if w.out_h < want {
            assert!(s.cols > 1, "{w:?} not split over channels: {s:?}");
        }
        assert!(s.rows * s.cols > 1, "{w:?} not split");
    }
}

/// The shapes of hand_landmark_lite's depthwise convolutions (112x112 down to 7x7, 3x3
/// and 5x5, strides 1 and 2) on 2 and 4 threads: every thread's share within 20 % of an
/// even one (the old pixel runs left 2 of 7 parts idle on 7x7, and 3 of 4 threads on 14x14
/// at 3x3 ran ~4 of 15), channels split only with every row a part of its own, and enough
/// parts for every thread.
#[test]
fn split_evens_out_the_threads() {
    for threads in [2, 4] {
        let par = Par::new(threads);
        for (h, c, k, st) in [
            (112, 24, 3, 1),
            (56, 64, 3, 2),
            (56, 96, 3, 1),
            (28, 96, 5, 2),
            (28, 144, 5, 1),
            (14, 144, 3, 2),
            (14, 288, 3, 1),
            (14, 288, 5, 1),
            (14, 384, 5, 1),
            (7, 384, 5, 2),
            (7, 672, 5, 1),
            (7, 672, 3, 1),
        ] {
            let w = window(h * st, h * st, c, c, (k, k), (st, st), 1, Padding::Same);
            let s = plan_split(&par, &w);
            let work = (h * h * c * k * k) as f64;
            let share = largest_share(&par, &w, s) as f64;
            assert!(
                share <= 1.2 * work / threads as f64,
                "{threads} threads {w:?}: {s:?}"
            );
            assert!(s.cols == 1 || s.rows == h, "{threads} threads {w:?}: {s:?}");
            assert!(s.rows * s.cols >= threads, "{threads} threads {w:?}: {s:?}");
        }
    }
    assert_eq!(
        plan_split(
            &Par::new(4),
            &window(14, 14, 288, 288, (5, 5), (1, 1), 1, Padding::Same)
        ),
        Split { rows: 14, cols: 2 }
    );
    // 32 threads want up to 128 parts: at most MAX_ROW_PARTS of rows, and the values right.
    let big = window(112, 112, 64, 64, (3, 3), (1, 1), 1, Padding::Same);
    let s = plan_split(&Par::new(32), &big);
    assert!(s.rows <= MAX_ROW_PARTS && s.cols <= MAX_COL_PARTS, "{s:?}");
    let p = DepthwiseProblem::new(big, 3, true, false);
    assert_eq!(p.run(&Par::new(1)), p.run(&Par::new(32)));
    let tiny = window(4, 4, 8, 8, (3, 3), (1, 1), 1, Padding::Same);
    assert_eq!(plan_split(&Par::new(4), &tiny), Split { rows: 1, cols: 1 });
    assert_eq!(
        plan_split(
            &Par::new(1),
            &window(56, 56, 96, 96, (3, 3), (1, 1), 1, Padding::Same)
        ),
        Split { rows: 1, cols: 1 }
    );
}

#[test]
fn depthwise_threads_bit_identical() {
    for w in [
        window(64, 64, 32, 32, (3, 3), (1, 1), 1, Padding::Same),
        window(33, 35, 21, 21, (5, 5), (2, 2), 1, Padding::Same),
    ] {
        let p = DepthwiseProblem::new(w, 5, true, true);
        assert_eq!(p.run(&Par::new(1)), p.run(&Par::new(2)));
        p.assert_matches(&p.run(&Par::new(1)));
    }
}
