//! Depthwise convolution (TFLite DEPTHWISE_CONV_2D), NHWC, batch 1.
//!
//! Filter layout `[1, k_h, k_w, in_c * multiplier]` is already the kernel's layout (taps outer,
//! channels contiguous), so packing only copies it. On AVX-512 each output row is split into
//! edge pixels (taps clipped by padding, one pixel at a time) and interior pixels, computed 8 at
//! a time with 8 independent accumulators per 16-channel vector (masked for the channel tail);
//! 3x3 and 5x5 filters have unrolled variants, and at stride 1 each input vector of a filter row
//! is loaded once for all 8 pixels. Other CPUs and channel multipliers above 1 use a portable
//! channel loop. Output rows are split over [`Par`]; the epilogue runs per row. Every value sums
//! `bias + taps in (ky, kx) order`, whichever variant or split computes it.
//!
//! Dispatch: [`prepare`] copies the filter of a DEPTHWISE_CONV_2D once, or (weights computed at
//! run time, the passes off) on every run.

use heimdall_ir::ConvAttrs;

use crate::kernels::window::valid_taps;
use crate::kernels::{Epilogue, Par, Window};
use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

/// Multiply-accumulates a part must have at least before rows are split over threads.
const MIN_MACS_PER_PART: usize = 1 << 16;

/// A depthwise convolution with its filter and bias copied into the kernel's layout.
#[derive(Clone, Debug)]
pub struct PackedDepthwise {
    w: Window,
    mult: usize,
    weights: Vec<f32>,
    bias: Vec<f32>,
    avx512: bool,
}

impl PackedDepthwise {
    /// Packs a TFLite depthwise filter `[1, k_h, k_w, out_c]` (`out_c = in_c * multiplier`)
    /// and an optional bias of `out_c` values for the geometry `w`.
    pub fn new(filter: &[f32], bias: Option<&[f32]>, w: Window) -> PackedDepthwise {
        debug_assert_eq!(filter.len(), w.k_h * w.k_w * w.out_c);
        debug_assert!(w.in_c > 0 && w.out_c.is_multiple_of(w.in_c));
        let mult = w.out_c / w.in_c.max(1);
        let bias = bias.map_or_else(|| vec![0.0; w.out_c], <[f32]>::to_vec);
        #[cfg(target_arch = "x86_64")]
        let avx512 = std::arch::is_x86_feature_detected!("avx512f") && w.k_h <= MAX_TAPS;
        #[cfg(not(target_arch = "x86_64"))]
        let avx512 = false;
        PackedDepthwise {
            w,
            mult,
            weights: filter.to_vec(),
            bias,
            avx512,
        }
    }

    /// The geometry this convolution was packed for.
    pub fn window(&self) -> &Window {
        &self.w
    }

    /// `output[oy, ox, c] = ep(bias[c] + sum input[iy, ix, c / mult] * filter[ky, kx, c])`;
    /// `input` is `[in_h, in_w, in_c]`, `output` `[out_h, out_w, out_c]`. Needs no scratch.
    pub fn run(&self, par: &Par, input: &[f32], output: &mut [f32], ep: &Epilogue) {
        let w = &self.w;
        let row_len = w.out_w * w.out_c;
        debug_assert_eq!(input.len(), w.in_h * w.in_w * w.in_c);
        debug_assert_eq!(output.len(), w.out_h * row_len);
        if row_len == 0 {
            return;
        }
        let min_rows = MIN_MACS_PER_PART.div_ceil((row_len * w.k_h * w.k_w).max(1));
        par.for_rows(output, row_len, min_rows, |rows, out| {
            for (oy, out_row) in rows.zip(out.chunks_exact_mut(row_len)) {
                self.row(input, oy, out_row);
                if !ep.is_identity() {
                    ep.apply(out_row, oy * row_len, w.out_c);
                }
            }
        });
    }

    fn row(&self, input: &[f32], oy: usize, out_row: &mut [f32]) {
        let w = &self.w;
        let (ky_lo, ky_hi) = valid_taps(oy, w.stride_h, w.dil_h, w.pad_top, w.in_h, w.k_h);
        if self.mult != 1 {
            self.row_multiplier(input, oy, ky_lo, ky_hi, out_row);
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if self.avx512 {
            // SAFETY: AVX-512F was detected at construction; shapes are checked by `run`.
            unsafe { self.row_avx512(input, oy, ky_lo, ky_hi, out_row) };
            return;
        }
        self.row_portable(input, oy, ky_lo, ky_hi, out_row);
    }

    fn row_portable(
        &self,
        input: &[f32],
        oy: usize,
        ky_lo: usize,
        ky_hi: usize,
        out_row: &mut [f32],
    ) {
        let w = &self.w;
        let c = w.out_c;
        for (ox, out) in out_row.chunks_exact_mut(c).enumerate() {
            let (kx_lo, kx_hi) = valid_taps(ox, w.stride_w, w.dil_w, w.pad_left, w.in_w, w.k_w);
            out.copy_from_slice(&self.bias);
            for ky in ky_lo..ky_hi {
                let iy = oy * w.stride_h + ky * w.dil_h - w.pad_top;
                for kx in kx_lo..kx_hi {
                    let ix = ox * w.stride_w + kx * w.dil_w - w.pad_left;
                    let x = &input[(iy * w.in_w + ix) * c..][..c];
                    let f = &self.weights[(ky * w.k_w + kx) * c..][..c];
                    for ((o, x), f) in out.iter_mut().zip(x).zip(f) {
                        *o += x * f;
                    }
                }
            }
        }
    }

    fn row_multiplier(
        &self,
        input: &[f32],
        oy: usize,
        ky_lo: usize,
        ky_hi: usize,
        out_row: &mut [f32],
    ) {
        let w = &self.w;
        let c = w.out_c;
        for (ox, out) in out_row.chunks_exact_mut(c).enumerate() {
            let (kx_lo, kx_hi) = valid_taps(ox, w.stride_w, w.dil_w, w.pad_left, w.in_w, w.k_w);
            out.copy_from_slice(&self.bias);
            for ky in ky_lo..ky_hi {
                let iy = oy * w.stride_h + ky * w.dil_h - w.pad_top;
                for kx in kx_lo..kx_hi {
                    let ix = ox * w.stride_w + kx * w.dil_w - w.pad_left;
                    let x = &input[(iy * w.in_w + ix) * w.in_c..][..w.in_c];
                    let f = &self.weights[(ky * w.k_w + kx) * c..][..c];
                    for (oc, o) in out.iter_mut().enumerate() {
                        *o += x[oc / self.mult] * f[oc];
                    }
                }
            }
        }
    }

    /// # Safety
    /// The CPU must support AVX-512F; `input` and `out_row` must have the window's sizes.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn row_avx512(
        &self,
        input: &[f32],
        oy: usize,
        ky_lo: usize,
        ky_hi: usize,
        out_row: &mut [f32],
    ) {
        let w = self.w;
        let c = w.out_c;
        assert!(input.len() >= w.in_h * w.in_w * c && out_row.len() >= w.out_w * c);
        assert!(ky_hi <= w.k_h && w.k_h <= MAX_TAPS);
        // Valid rows of this output row: input row and filter row pointers.
        let mut rows = [std::ptr::null::<f32>(); MAX_TAPS];
        let mut wrows = [std::ptr::null::<f32>(); MAX_TAPS];
        let nky = ky_hi - ky_lo;
        for (j, ky) in (ky_lo..ky_hi).enumerate() {
            let iy = oy * w.stride_h + ky * w.dil_h - w.pad_top;
            rows[j] = input[iy * w.in_w * c..].as_ptr();
            wrows[j] = self.weights[ky * w.k_w * c..].as_ptr();
        }
        let tap = DwRow {
            rows,
            wrows,
            nky,
            c,
            sw: w.stride_w,
            dw: w.dil_w,
            pl: w.pad_left,
        };
        // Interior output columns: every horizontal tap is inside the input.
        let reach = (w.k_w - 1) * w.dil_w;
        let int_lo = w.pad_left.div_ceil(w.stride_w).min(w.out_w);
        let int_hi = if w.in_w + w.pad_left > reach {
            ((w.in_w + w.pad_left - reach - 1) / w.stride_w + 1).min(w.out_w)
        } else {
            0
        };
        let int_hi = int_hi.max(int_lo);
        let bias = self.bias.as_ptr();
        let out = out_row.as_mut_ptr();
        // SAFETY: pointers come from the asserted slices; taps are restricted to valid input
        // columns (`valid_taps`, or the interior range), channels to `c` by the masks.
        unsafe {
            for ox in (0..int_lo).chain(int_hi..w.out_w) {
                let (kx_lo, kx_hi) = valid_taps(ox, w.stride_w, w.dil_w, w.pad_left, w.in_w, w.k_w);
                tap.pixels::<1>(ox, kx_lo, kx_hi, bias, out);
            }
            let mut ox = int_lo;
            while ox + 8 <= int_hi {
                // Stride 1 reuses input vectors across pixels; for stride 2 the plain
                // unrolled kernel measured faster.
                match (w.k_w, w.stride_w, w.dil_w) {
                    (3, 1, 1) => tap.pixels_slide::<8, 3, 1>(ox, bias, out),
                    (5, 1, 1) => tap.pixels_slide::<8, 5, 1>(ox, bias, out),
                    (3, _, _) => tap.pixels_k::<8, 3>(ox, bias, out),
                    (5, _, _) => tap.pixels_k::<8, 5>(ox, bias, out),
                    _ => tap.pixels::<8>(ox, 0, w.k_w, bias, out),
                }
                ox += 8;
            }
            while ox + 4 <= int_hi {
                tap.pixels::<4>(ox, 0, w.k_w, bias, out);
                ox += 4;
            }
            while ox < int_hi {
                tap.pixels::<1>(ox, 0, w.k_w, bias, out);
                ox += 1;
            }
        }
    }
}

/// Most filter rows a depthwise filter may have on the AVX-512 path.
const MAX_TAPS: usize = 16;

/// One output row of a depthwise convolution on the AVX-512 path: the valid input rows and
/// their filter rows.
#[cfg(target_arch = "x86_64")]
struct DwRow {
    rows: [*const f32; MAX_TAPS],
    wrows: [*const f32; MAX_TAPS],
    nky: usize,
    c: usize,
    sw: usize,
    dw: usize,
    pl: usize,
}

#[cfg(target_arch = "x86_64")]
impl DwRow {
    /// [`DwRow::pixels_k`] for stride `S` and no dilation, loading each input vector of a
    /// filter row once and feeding it to every pixel whose window covers it (each pixel still
    /// sums its taps in `(ky, kx)` order).
    ///
    /// # Safety
    /// As [`DwRow::pixels`] with every tap `0..K` valid, `stride_w == S`, `dil_w == 1`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn pixels_slide<const NX: usize, const K: usize, const S: usize>(
        &self,
        ox: usize,
        bias: *const f32,
        out: *mut f32,
    ) {
        use std::arch::x86_64::*;
        let c = self.c;
        let blocks = c.div_ceil(16);
        let tail: __mmask16 = if c.is_multiple_of(16) {
            0xFFFF
        } else {
            ((1u32 << (c % 16)) - 1) as __mmask16
        };
        // SAFETY: guaranteed by the caller.
        unsafe {
            for b in 0..blocks {
                let mask = if b + 1 == blocks { tail } else { 0xFFFF };
                let off = b * 16;
                let bv = _mm512_maskz_loadu_ps(mask, bias.add(off));
                let mut acc = [bv; NX];
                for j in 0..self.nky {
                    let base = self.rows[j].add((ox * S - self.pl) * c + off);
                    let wrow = self.wrows[j].add(off);
                    let mut f = [bv; K];
                    for (kx, fk) in f.iter_mut().enumerate() {
                        *fk = _mm512_maskz_loadu_ps(mask, wrow.add(kx * c));
                    }
                    for t in 0..(NX - 1) * S + K {
                        let x = _mm512_maskz_loadu_ps(mask, base.add(t * c));
                        for (i, a) in acc.iter_mut().enumerate() {
                            if t >= i * S && t - i * S < K {
                                *a = _mm512_fmadd_ps(x, f[t - i * S], *a);
                            }
                        }
                    }
                }
                for (i, a) in acc.iter().enumerate() {
                    _mm512_mask_storeu_ps(out.add((ox + i) * c + off), mask, *a);
                }
            }
        }
    }

    /// [`DwRow::pixels`] for interior pixels of a `K`-wide filter, taps unrolled.
    ///
    /// # Safety
    /// As [`DwRow::pixels`] with every tap `0..K` valid.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn pixels_k<const NX: usize, const K: usize>(
        &self,
        ox: usize,
        bias: *const f32,
        out: *mut f32,
    ) {
        use std::arch::x86_64::*;
        let c = self.c;
        let blocks = c.div_ceil(16);
        let tail: __mmask16 = if c.is_multiple_of(16) {
            0xFFFF
        } else {
            ((1u32 << (c % 16)) - 1) as __mmask16
        };
        let step = self.sw * c;
        let tap_step = self.dw * c;
        // SAFETY: guaranteed by the caller.
        unsafe {
            for b in 0..blocks {
                let mask = if b + 1 == blocks { tail } else { 0xFFFF };
                let off = b * 16;
                let bv = _mm512_maskz_loadu_ps(mask, bias.add(off));
                let mut acc = [bv; NX];
                for j in 0..self.nky {
                    let base = self.rows[j].add((ox * self.sw - self.pl) * c + off);
                    let wrow = self.wrows[j].add(off);
                    for kx in 0..K {
                        let f = _mm512_maskz_loadu_ps(mask, wrow.add(kx * c));
                        let p = base.add(kx * tap_step);
                        for (i, a) in acc.iter_mut().enumerate() {
                            let x = _mm512_maskz_loadu_ps(mask, p.add(i * step));
                            *a = _mm512_fmadd_ps(x, f, *a);
                        }
                    }
                }
                for (i, a) in acc.iter().enumerate() {
                    _mm512_mask_storeu_ps(out.add((ox + i) * c + off), mask, *a);
                }
            }
        }
    }

    /// Computes output pixels `ox..ox + NX` (all with horizontal taps `kx_lo..kx_hi` valid),
    /// NX independent accumulators per 16-channel block; taps summed in `(ky, kx)` order.
    ///
    /// # Safety
    /// AVX-512F; the taps must be valid for every pixel and `out` must hold the row.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn pixels<const NX: usize>(
        &self,
        ox: usize,
        kx_lo: usize,
        kx_hi: usize,
        bias: *const f32,
        out: *mut f32,
    ) {
        use std::arch::x86_64::*;
        let c = self.c;
        let blocks = c.div_ceil(16);
        let tail: __mmask16 = if c.is_multiple_of(16) {
            0xFFFF
        } else {
            ((1u32 << (c % 16)) - 1) as __mmask16
        };
        // SAFETY: guaranteed by the caller.
        unsafe {
            for b in 0..blocks {
                let mask = if b + 1 == blocks { tail } else { 0xFFFF };
                let off = b * 16;
                let bv = _mm512_maskz_loadu_ps(mask, bias.add(off));
                let mut acc = [bv; NX];
                for j in 0..self.nky {
                    let row = self.rows[j].add(off);
                    let wrow = self.wrows[j].add(off);
                    for kx in kx_lo..kx_hi {
                        let f = _mm512_maskz_loadu_ps(mask, wrow.add(kx * c));
                        let ix0 = ox * self.sw + kx * self.dw - self.pl;
                        for (i, a) in acc.iter_mut().enumerate() {
                            let x = _mm512_maskz_loadu_ps(mask, row.add((ix0 + i * self.sw) * c));
                            *a = _mm512_fmadd_ps(x, f, *a);
                        }
                    }
                }
                for (i, a) in acc.iter().enumerate() {
                    _mm512_mask_storeu_ps(out.add((ox + i) * c + off), mask, *a);
                }
            }
        }
    }
}

impl Kernel for PackedDepthwise {
    fn run(&self, io: StepIo<'_>) {
        PackedDepthwise::run(self, io.par, io.inputs.get(0), io.out, io.ep);
    }
}

/// A DEPTHWISE_CONV_2D whose filter or bias is computed at run time: copied on every run.
struct DynamicDepthwise(Window);

impl Kernel for DynamicDepthwise {
    fn run(&self, io: StepIo<'_>) {
        let bias = (io.inputs.len() > 2).then(|| io.inputs.get(2));
        PackedDepthwise::new(io.inputs.get(1), bias, self.0).run(
            io.par,
            io.inputs.get(0),
            io.out,
            io.ep,
        );
    }
}

/// Prepares a DEPTHWISE_CONV_2D.
pub(crate) fn prepare(cx: &PrepareCx, a: &ConvAttrs) -> Result<Prepared, String> {
    let f = cx.shape(1);
    let w = cx.window([f[1], f[2]], a);
    if cx.weights_dynamic() {
        return Ok(Prepared::new(DynamicDepthwise(w)));
    }
    Ok(Prepared::new(PackedDepthwise::new(
        cx.constant(1)?,
        cx.bias(2)?,
        w,
    )))
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // naive references index on purpose
mod tests {
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

        fn reference(&self) -> Vec<f32> {
            let w = &self.w;
            let mult = w.out_c / w.in_c;
            let mut out = vec![0.0; w.out_h * w.out_w * w.out_c];
            for oy in 0..w.out_h {
                for ox in 0..w.out_w {
                    for oc in 0..w.out_c {
                        let mut s = self.bias.as_ref().map_or(0.0, |b| b[oc]) as f64;
                        for ky in 0..w.k_h {
                            for kx in 0..w.k_w {
                                let iy =
                                    (oy * w.stride_h + ky * w.dil_h) as isize - w.pad_top as isize;
                                let ix =
                                    (ox * w.stride_w + kx * w.dil_w) as isize - w.pad_left as isize;
                                if iy < 0
                                    || ix < 0
                                    || iy >= w.in_h as isize
                                    || ix >= w.in_w as isize
                                {
                                    continue;
                                }
                                let x = self.input
                                    [(iy as usize * w.in_w + ix as usize) * w.in_c + oc / mult];
                                s +=
                                    x as f64 * self.filter[(ky * w.k_w + kx) * w.out_c + oc] as f64;
                            }
                        }
                        let idx = (oy * w.out_w + ox) * w.out_c + oc;
                        if let Some(r) = &self.residual {
                            s += r[idx] as f64;
                        }
                        if s < 0.0 {
                            s *= self.alpha[oc] as f64;
                        }
                        out[idx] = s as f32;
                    }
                }
            }
            out
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
            assert_close(&p.run(&Par::new(1)), &p.reference());
        }

        #[test]
        fn depthwise_multiplier_matches_reference(w in windows(6, false), mult in 1..4usize, seed in 0u64..1000) {
            let w = Window { out_c: w.in_c * mult, ..w };
            let p = DepthwiseProblem::new(w, seed, true, false);
            assert_close(&p.run(&Par::new(1)), &p.reference());
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
            dw.avx512 = false;
            let mut out = vec![f32::NAN; w.out_h * w.out_w * w.out_c];
            let ep = Epilogue {
                residual: p.residual.as_deref(),
                act: Act::Prelu(&p.alpha),
            };
            dw.run(&Par::new(1), &p.input, &mut out, &ep);
            assert_close(&out, &p.reference());
            assert_close(&p.run(&Par::new(1)), &p.reference());
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

    #[test]
    fn depthwise_threads_bit_identical() {
        for w in [
            window(64, 64, 32, 32, (3, 3), (1, 1), 1, Padding::Same),
            window(33, 35, 21, 21, (5, 5), (2, 2), 1, Padding::Same),
        ] {
            let p = DepthwiseProblem::new(w, 5, true, true);
            assert_eq!(p.run(&Par::new(1)), p.run(&Par::new(2)));
            assert_close(&p.run(&Par::new(1)), &p.reference());
        }
    }
}
