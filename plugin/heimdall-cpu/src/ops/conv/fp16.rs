//! CONV_2D in half-precision arithmetic, on aarch64 cores with FEAT_FP16 and only where asked
//! for (`crate::CpuPrecision::F16`): the filter packed once as f16 (`PackedB16`), the
//! input converted to f16 once per run (in scratch, split over threads), and the f16 matrix
//! product per block of pixels (1x1 stride-1 convolutions, split over pixel blocks and
//! output-channel panels as in f32) or per output row through an f16 im2col row (every other
//! convolution). Sums in f16, bias added in f32; activations between ops stay f32, and the
//! epilogue runs in f32.
//!
//! Accuracy: f16 has an 11-bit significand, so a sum of `K` products is within about
//! `sqrt(K) * 2^-11` of the f32 one relative to its terms; the tests hold this kernel to
//! rel-L2 3e-3 against the f32 reference (the bound the GPU's f16 kernels are held to against
//! the CPU) and whole models to the GPU's f16 golden bounds (`tests/goldens_tflite.rs`).
//! Elsewhere (x86-64, cores without FEAT_FP16) [`F16Conv::new`] returns `None` and the f32
//! convolution runs.

use crate::kernels::{Epilogue, Par, Window};
use crate::step::{Kernel, StepIo};

#[cfg(target_arch = "aarch64")]
use crate::kernels::gemm::fp16::{PackedB16, to_f16};
#[cfg(target_arch = "aarch64")]
use crate::kernels::tail::finish;

/// Multiply-accumulates a part must have at least before the work is split.
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
const MIN_MACS_PER_PART: usize = 1 << 18;

/// Input values converted per part of the (parallel) conversion to f16.
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
const CONVERT_CHUNK: usize = 8192;

/// A convolution with its filter packed as f16 for the half-precision matrix product.
#[derive(Clone, Debug)]
pub struct F16Conv {
    w: Window,
    #[cfg(target_arch = "aarch64")]
    b: PackedB16,
    /// Ops after the products fused into the convolution ([`crate::kernels::Tail`]).
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    tail: Option<crate::kernels::Tail>,
}

impl F16Conv {
    /// Packs an OHWI filter `[out_c, k_h, k_w, in_c]` (rounded to f16) and an optional bias of
    /// `out_c` values (kept f32) for the geometry `w`; `None` unless this CPU has
    /// half-precision arithmetic ([`crate::kernels::isa::has_f16_arithmetic`]).
    pub fn new(filter_ohwi: &[f32], bias: Option<&[f32]>, w: Window) -> Option<F16Conv> {
        #[cfg(target_arch = "aarch64")]
        {
            let kdim = w.k_h * w.k_w * w.in_c;
            debug_assert_eq!(filter_ohwi.len(), w.out_c * kdim);
            let b = PackedB16::new(kdim, w.out_c, bias, |k, o| filter_ohwi[o * kdim + k])?;
            Some(F16Conv { w, b, tail: None })
        }
        #[cfg(not(target_arch = "aarch64"))]
        {
            let _ = (filter_ohwi, bias, w);
            None
        }
    }

    /// The geometry this convolution was packed for.
    pub fn window(&self) -> &Window {
        &self.w
    }

    /// The same convolution followed by `tail` (see [`super::PackedConv::with_tail`]).
    pub fn with_tail(self, tail: crate::kernels::Tail) -> F16Conv {
        assert_eq!(tail.shift.len(), self.w.out_c, "f16 conv: tail channels");
        F16Conv {
            tail: Some(tail),
            ..self
        }
    }

    /// Values (f32) of scratch [`F16Conv::run`] needs with `par`.
    pub fn scratch_len(&self, par: &Par) -> usize {
        scratch_len(&self.w, par.threads())
    }

    /// `output[oy, ox, o] = ep(bias[o] + sum input[iy, ix, i] * filter[o, ky, kx, i])` over
    /// the window, the sum in f16 (see the module); `input` is `[in_h, in_w, in_c]`, `output`
    /// `[out_h, out_w, out_c]`, `scratch` at least [`F16Conv::scratch_len`] values.
    pub fn run(
        &self,
        par: &Par,
        input: &[f32],
        output: &mut [f32],
        scratch: &mut [f32],
        ep: &Epilogue,
    ) {
        #[cfg(target_arch = "aarch64")]
        self.run_f16(par, input, output, scratch, ep);
        #[cfg(not(target_arch = "aarch64"))]
        {
            // Never constructed here (`new` returns `None`).
            let _ = (par, input, output, scratch, ep);
            unreachable!("F16Conv exists only on aarch64 with FEAT_FP16");
        }
    }
}

/// Whether `w` is a 1x1 stride-1 unpadded convolution (one matrix product over the pixels).
fn is_direct(w: &Window) -> bool {
    w.k_h == 1
        && w.k_w == 1
        && w.stride_h == 1
        && w.stride_w == 1
        && w.pad_top == 0
        && w.pad_left == 0
        && w.in_h == w.out_h
        && w.in_w == w.out_w
}

/// f32 values of scratch an f16 convolution of geometry `w` needs on `threads` threads: the
/// input as f16 (two values per f32 slot), and per thread one output row's f16 im2col unless
/// it is direct.
pub(crate) fn scratch_len(w: &Window, threads: usize) -> usize {
    let input = (w.in_h * w.in_w * w.in_c).div_ceil(2);
    let per_part = if is_direct(w) {
        0
    } else {
        (w.out_w * w.k_h * w.k_w * w.in_c).div_ceil(2)
    };
    input + threads.max(1) * per_part
}

#[cfg(target_arch = "aarch64")]
impl F16Conv {
    /// [`F16Conv::run`] on aarch64: the input converted to f16 in `scratch`, then the direct
    /// ([`F16Conv::run_direct`]) or per-row ([`F16Conv::run_rows`]) product.
    fn run_f16(
        &self,
        par: &Par,
        input: &[f32],
        output: &mut [f32],
        scratch: &mut [f32],
        ep: &Epilogue,
    ) {
        let w = &self.w;
        let n = w.out_c;
        let px = w.out_h * w.out_w;
        let in_len = w.in_h * w.in_w * w.in_c;
        if px == 0 || n == 0 {
            return;
        }
        assert!(
            input.len() >= in_len && output.len() >= px * n,
            "conv f16: buffers too short"
        );
        assert!(
            scratch.len() >= self.scratch_len(par),
            "conv f16: scratch too short"
        );
        let (x16, rest) = input_to_f16(par, &input[..in_len], scratch);
        if is_direct(w) {
            self.run_direct(par, x16, output, ep);
        } else {
            self.run_rows(par, x16, output, rest, ep);
        }
    }

    /// [`F16Conv::run_f16`] of a 1x1 stride-1 unpadded convolution from the f16 input `x16`:
    /// one matrix product split as pixels by output-channel panels.
    fn run_direct(&self, par: &Par, x16: &[u16], output: &mut [f32], ep: &Epilogue) {
        let w = &self.w;
        let (n, kdim) = (w.out_c, w.k_h * w.k_w * w.in_c);
        let px = w.out_h * w.out_w;
        let (tile_px, tile_n) = par.grid(
            px,
            n,
            px * kdim * n,
            MIN_MACS_PER_PART,
            self.b.tile_rows(),
            self.b.panel_cols(),
        );
        par.for_grid(output, n, tile_px, tile_n, |rows, cols, tile| {
            // SAFETY: input rows `rows` hold `in_c` f16 values each (in_len checked); the
            // tile's rows of `cols.len()` values at stride `n` are its own; `cols.start` is
            // a multiple of the panel width (the grid's alignment).
            unsafe {
                self.b.gemm_tile(
                    x16.as_ptr().add(rows.start * w.in_c),
                    w.in_c,
                    rows.len(),
                    cols.clone(),
                    tile.as_mut_ptr(),
                    n,
                );
            }
            let tail = self.tail.as_ref();
            if !ep.is_identity() || tail.is_some() {
                if cols.len() == n {
                    finish(tail, tile.span(0..rows.len()), rows.start * n, n, ep);
                } else {
                    for (i, r) in rows.clone().enumerate() {
                        finish(tail, tile.row(i), r * n + cols.start, n, ep);
                    }
                }
            }
        });
    }

    /// [`F16Conv::run_f16`] of every other convolution from the f16 input `x16`: output rows
    /// split over `par`, each row through an f16 im2col row in the part's share of `scratch`.
    fn run_rows(
        &self,
        par: &Par,
        x16: &[u16],
        output: &mut [f32],
        scratch: &mut [f32],
        ep: &Epilogue,
    ) {
        let w = &self.w;
        let (n, kdim) = (w.out_c, w.k_h * w.k_w * w.in_c);
        let row_len = w.out_w * n;
        let per_part = (w.out_w * kdim).div_ceil(2);
        let min_rows = MIN_MACS_PER_PART.div_ceil((row_len * kdim).max(1));
        par.for_rows_scratch(
            output,
            row_len,
            min_rows,
            scratch,
            per_part,
            |rows, out, sc| {
                // SAFETY: a part's scratch holds `per_part` f32 slots, 2 * per_part u16 values.
                let col: &mut [u16] = unsafe {
                    std::slice::from_raw_parts_mut(sc.as_mut_ptr().cast::<u16>(), w.out_w * kdim)
                };
                for (oy, out_row) in rows.zip(out.chunks_exact_mut(row_len)) {
                    im2col_row(w, x16, oy, col);
                    // SAFETY: `col` holds out_w rows of kdim values; `out_row` out_w rows of n.
                    unsafe {
                        self.b.gemm_tile(
                            col.as_ptr(),
                            kdim,
                            w.out_w,
                            0..n,
                            out_row.as_mut_ptr(),
                            n,
                        );
                    }
                    if !ep.is_identity() || self.tail.is_some() {
                        finish(self.tail.as_ref(), out_row, oy * row_len, n, ep);
                    }
                }
            },
        );
    }
}

/// `input` converted to f16 (split over `par`) into the front of `scratch`: the f16 values and
/// the rest of `scratch`.
#[cfg(target_arch = "aarch64")]
fn input_to_f16<'s>(
    par: &Par,
    input: &[f32],
    scratch: &'s mut [f32],
) -> (&'s [u16], &'s mut [f32]) {
    let in_len = input.len();
    let (x16, rest) = scratch.split_at_mut(in_len.div_ceil(2));
    // SAFETY: `x16` holds in_len.div_ceil(2) f32 slots, 2 * that u16 values (alignment of
    // f32 is a multiple of u16's).
    let x16: &mut [u16] =
        unsafe { std::slice::from_raw_parts_mut(x16.as_mut_ptr().cast::<u16>(), in_len) };
    par.for_chunks(x16, CONVERT_CHUNK, 4, |i, chunk| {
        let start = i * CONVERT_CHUNK;
        // SAFETY: the f16 kernels exist only where FEAT_FP16 was detected (`new`).
        unsafe { to_f16(&input[start..start + chunk.len()], chunk) };
    });
    (x16, rest)
}

/// The receptive fields of output row `oy`'s pixels into `col` (`[out_w, k_h*k_w*in_c]`, zeros
/// where the window hangs over the padding), from the f16 input `x`.
#[cfg(target_arch = "aarch64")]
fn im2col_row(w: &Window, x: &[u16], oy: usize, col: &mut [u16]) {
    let c = w.in_c;
    let kdim = w.k_h * w.k_w * c;
    for (ox, row) in col.chunks_exact_mut(kdim).enumerate().take(w.out_w) {
        for ky in 0..w.k_h {
            let iy = (oy * w.stride_h + ky * w.dil_h).wrapping_sub(w.pad_top);
            for kx in 0..w.k_w {
                let ix = (ox * w.stride_w + kx * w.dil_w).wrapping_sub(w.pad_left);
                let dst = &mut row[(ky * w.k_w + kx) * c..][..c];
                if iy < w.in_h && ix < w.in_w {
                    dst.copy_from_slice(&x[(iy * w.in_w + ix) * c..][..c]);
                } else {
                    dst.fill(0);
                }
            }
        }
    }
}

impl Kernel for F16Conv {
    fn run(&self, io: StepIo<'_>) {
        F16Conv::run(self, io.par, io.inputs.get(0), io.out, io.scratch, io.ep);
    }
}

#[cfg(all(test, target_arch = "aarch64"))]
mod tests {
    use super::*;
    use crate::kernels::gemm::fp16::f16_to_f32;
    use crate::kernels::testutil::*;
    use proptest::prelude::*;

    /// The convolution in f64 (the reference), rounded to f32.
    fn reference(w: &Window, input: &[f32], filter: &[f32], bias: &[f32]) -> Vec<f32> {
        window_reference(
            w,
            |o| f64::from(bias[o]),
            |s, o, ky, kx, pixel| {
                for i in 0..w.in_c {
                    let x = input[pixel * w.in_c + i];
                    let f = filter[((o * w.k_h + ky) * w.k_w + kx) * w.in_c + i];
                    *s += f64::from(x) * f64::from(f);
                }
            },
            |_, _, s| s as f32,
        )
    }

    /// Runs `w` in f16, and the f64 reference, on the same data.
    fn both(w: Window, seed: u64, threads: usize) -> Option<(Vec<f32>, Vec<f32>)> {
        let input = data(seed, w.in_h * w.in_w * w.in_c);
        let filter = data(seed + 1, w.out_c * w.k_h * w.k_w * w.in_c);
        let bias = data(seed + 2, w.out_c);
        let par = Par::new(threads);
        let f16 = F16Conv::new(&filter, Some(&bias), w)?;
        let mut out16 = vec![f32::NAN; w.out_h * w.out_w * w.out_c];
        let mut scratch = vec![f32::NAN; f16.scratch_len(&par)];
        f16.run(&par, &input, &mut out16, &mut scratch, &Epilogue::NONE);
        Some((out16, reference(&w, &input, &filter, &bias)))
    }

    /// Where the core has FEAT_FP16 (qemu's default CPU has), the f16 kernels exist.
    #[test]
    fn f16_exists_where_the_core_has_it() {
        let w = window(4, 4, 8, 8, (1, 1), (1, 1), 1, Padding::Valid);
        assert_eq!(
            F16Conv::new(&[0.0; 64], None, w).is_some(),
            std::arch::is_aarch64_feature_detected!("fp16")
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(100))]
        /// Random windows (1x1 direct and im2col, up to 40 channels, `K` up to 1000): the f16
        /// convolution is within rel-L2 3e-3 of the reference in f64 (the GPU f16 kernels'
        /// bound against the CPU), and the same bits on 1 and 3 threads.
        #[test]
        fn f16_conv_within_the_f16_bound(w in windows(40, true), seed in 0u64..1000) {
            let Some((out16, out32)) = both(w, seed, 1) else { return Ok(()) };
            let e = heimdall_testkit::rel_l2(&out16, &out32);
            prop_assert!(e <= 3e-3, "rel-L2 {} of f16 to the reference", e);
            let (three, _) = both(w, seed, 3).unwrap();
            prop_assert_eq!(out16, three);
        }
    }

    /// The conversion rounds to nearest even and saturates to infinity.
    #[test]
    fn to_f16_rounds_to_nearest() {
        if !std::arch::is_aarch64_feature_detected!("fp16") {
            return;
        }
        let x = [1.0, -2.5, 65504.0, 1e6, 1.0 + 1.0 / 2048.0, 0.1, 6e-8, 3.0];
        let mut h = [0u16; 8];
        // SAFETY: FEAT_FP16 checked above.
        unsafe { to_f16(&x, &mut h) };
        let back: Vec<f32> = h.iter().map(|&v| f16_to_f32(v)).collect();
        assert_eq!(&back[..4], &[1.0, -2.5, 65504.0, f32::INFINITY]);
        assert_eq!(back[4], 1.0); // a tie rounds to even
        assert!((back[5] - 0.1).abs() < 1e-4);
        assert!(back[6] > 0.0 && back[6] < 1e-7); // a subnormal f16
        assert_eq!(back[7], 3.0);
    }
}
