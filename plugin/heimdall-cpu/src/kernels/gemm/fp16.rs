//! The matrix product in half precision, for aarch64 cores with FEAT_FP16 (Cortex-A55/A75 and
//! later): `B` packed once as f16 in panels of 16 columns, `A` given as f16 (the caller
//! converts the activations), products summed in f16 by `fmla v.8h` (eight lanes: twice the
//! multiply-adds of f32 per instruction) over chunks of 16 `k` steps, each chunk's sums then
//! widened to f32 and added into f32 accumulators that started at the bias. Every output value
//! is `bias + sum over chunks of f32(f16 sum of the chunk's products in k order)`, whatever the
//! tile or thread: bit-identical across thread counts, like the f32 kernels. Its error is that
//! of rounding `A` and `B` to f16 (2^-12 relative each) and of the short f16 sums, not of a
//! long f16 sum (a sum of 450 products in f16 alone was off by rel-L2 5e-3; see
//! `ops::conv::fp16`, which holds this one to 3e-3).
//!
//! Micro-kernel: up to 4 rows x 16 columns, `A` read eight `k` steps at a time (one 128-bit
//! load per row) and multiplied by lane, as the f32 NEON kernel does.

use std::arch::aarch64::*;
use std::ops::Range;

use super::tile::unroll12;

/// Columns per panel.
const NR: usize = 16;
/// Rows per micro-kernel call: 4 rows x 16 columns hold 8 f16 and 16 f32 accumulators, with
/// 4 vectors of `A` and 2 of `B` (30 of the 32 vector registers).
const MR: usize = 4;
/// `k` steps summed in f16 before the sums are widened into the f32 accumulators: a chunk's
/// partial sum rounds at f16's precision (2^-11 relative to it), the whole sum at f32's.
const KC: usize = 8;

/// A `K x N` right-hand matrix packed as f16 into panels of 16 columns (`[panel][k][16]`, the
/// last panel zero-padded), with its bias in f32.
#[derive(Clone, Debug)]
pub(crate) struct PackedB16 {
    k: usize,
    n: usize,
    panels: Vec<u16>,
    bias: Vec<f32>,
}

/// Whether this CPU runs the f16 kernels.
pub(crate) fn available() -> bool {
    std::arch::is_aarch64_feature_detected!("fp16")
}

impl PackedB16 {
    /// Packs `B[k][j] = b(k, j)` (rounded to f16) with an optional bias of `n` values; `None`
    /// unless this CPU has f16 arithmetic.
    pub(crate) fn new(
        kdim: usize,
        n: usize,
        bias: Option<&[f32]>,
        b: impl Fn(usize, usize) -> f32,
    ) -> Option<PackedB16> {
        if !available() {
            return None;
        }
        let n_panels = n.div_ceil(NR);
        let mut wide = vec![0.0f32; n_panels * kdim * NR];
        for p in 0..n_panels {
            for kk in 0..kdim {
                for jj in 0..NR {
                    let j = p * NR + jj;
                    if j < n {
                        wide[(p * kdim + kk) * NR + jj] = b(kk, j);
                    }
                }
            }
        }
        let mut panels = vec![0u16; wide.len()];
        // SAFETY: FEAT_FP16 was detected above.
        unsafe { to_f16(&wide, &mut panels) };
        let mut padded_bias = vec![0.0; n_panels * NR];
        if let Some(bias) = bias {
            padded_bias[..n].copy_from_slice(bias);
        }
        Some(PackedB16 {
            k: kdim,
            n,
            panels,
            bias: padded_bias,
        })
    }

    /// Columns per panel: a column range of [`PackedB16::gemm_tile`] starts at a multiple of it.
    pub(crate) fn panel_cols(&self) -> usize {
        NR
    }

    /// Rows per micro-kernel call.
    pub(crate) fn tile_rows(&self) -> usize {
        MR
    }

    /// `c[i * ldc + j - cols.start] = bias[j] + f32(sum_k a[i * lda + k] * B[k][j])` for
    /// `i < m`, `j` in `cols`, `a` holding f16 values (their bits).
    ///
    /// # Safety
    /// `a` must be readable for `m` rows of `K` values at stride `lda`, `c` writable for `m`
    /// rows of `cols.len()` values at stride `ldc`; `cols.start` a multiple of 16 and
    /// `cols.end <= N`.
    pub(crate) unsafe fn gemm_tile(
        &self,
        a: *const u16,
        lda: usize,
        m: usize,
        cols: Range<usize>,
        c: *mut f32,
        ldc: usize,
    ) {
        if m == 0 || cols.is_empty() {
            return;
        }
        assert!(
            cols.start.is_multiple_of(NR) && cols.end <= self.n,
            "gemm f16: bad column range"
        );
        let k = self.k;
        for p in cols.start / NR..cols.end.div_ceil(NR) {
            let width = NR.min(cols.end - p * NR);
            let bp = self.panels[p * k * NR..(p + 1) * k * NR].as_ptr();
            let bias = self.bias[p * NR..(p + 1) * NR].as_ptr();
            let cp = c.wrapping_add(p * NR - cols.start);
            let mut i = 0;
            // SAFETY: rows i..i+MR of A and C exist (i + MR <= m; caller's extents); the panel
            // holds K x 16 values, its bias 16; FEAT_FP16 was checked when packing.
            unsafe {
                while i + MR <= m {
                    kernel::<MR>(
                        a.add(i * lda),
                        lda,
                        k,
                        bp,
                        bias,
                        cp.add(i * ldc),
                        ldc,
                        width,
                    );
                    i += MR;
                }
                let (ai, ci) = (a.add(i * lda), cp.add(i * ldc));
                match m - i {
                    0 => {}
                    1 => kernel::<1>(ai, lda, k, bp, bias, ci, ldc, width),
                    2 => kernel::<2>(ai, lda, k, bp, bias, ci, ldc, width),
                    3 => kernel::<3>(ai, lda, k, bp, bias, ci, ldc, width),
                    _ => unreachable!(),
                }
            }
        }
    }
}

/// `R` rows x 16 columns of the product: for each chunk of [`KC`] `k` steps, the products
/// summed in f16 (two f16 accumulators per row), then widened and added to f32 accumulators
/// (four per row) that started at the bias.
///
/// # Safety
/// FEAT_FP16; `a` readable for `R` rows of `k` f16 values at stride `lda`, `b` a packed panel
/// (`k x 16`), `bias` 16 values, `c` writable for `R` rows of `cols` values at stride `ldc`.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "neon,fp16")]
unsafe fn kernel<const R: usize>(
    a: *const u16,
    lda: usize,
    k: usize,
    b: *const u16,
    bias: *const f32,
    c: *mut f32,
    ldc: usize,
    cols: usize,
) {
    // SAFETY: the caller guarantees the extents; loads of A stay inside a row (`kk + 8 <= k`,
    // then single values).
    unsafe {
        let zero = vreinterpretq_f16_u16(vdupq_n_u16(0));
        let bias4: [float32x4_t; 4] = std::array::from_fn(|q| vld1q_f32(bias.add(4 * q)));
        let mut acc = [bias4; R];
        let mut rows = [a; R];
        for (i, r) in rows.iter_mut().enumerate() {
            *r = a.add(i * lda);
        }
        let mut bp = b;
        let mut k0 = 0;
        while k0 < k {
            let k1 = (k0 + KC).min(k);
            let mut h0 = [zero; R];
            let mut h1 = [zero; R];
            let mut kk = k0;
            while kk + 8 <= k1 {
                let mut av = [zero; R];
                unroll12!(R, |i| {
                    av[i] = vreinterpretq_f16_u16(vld1q_u16(rows[i].add(kk)));
                });
                macro_rules! lane {
                    ($l:literal) => {{
                        let b0 = vreinterpretq_f16_u16(vld1q_u16(bp.add($l * 16)));
                        let b1 = vreinterpretq_f16_u16(vld1q_u16(bp.add($l * 16 + 8)));
                        unroll12!(R, |i| {
                            h0[i] = vfmaq_laneq_f16::<$l>(h0[i], b0, av[i]);
                            h1[i] = vfmaq_laneq_f16::<$l>(h1[i], b1, av[i]);
                        });
                    }};
                }
                lane!(0);
                lane!(1);
                lane!(2);
                lane!(3);
                lane!(4);
                lane!(5);
                lane!(6);
                lane!(7);
                bp = bp.add(8 * 16);
                kk += 8;
            }
            while kk < k1 {
                let b0 = vreinterpretq_f16_u16(vld1q_u16(bp));
                let b1 = vreinterpretq_f16_u16(vld1q_u16(bp.add(8)));
                unroll12!(R, |i| {
                    let av = vreinterpretq_f16_u16(vld1q_dup_u16(rows[i].add(kk)));
                    h0[i] = vfmaq_f16(h0[i], b0, av);
                    h1[i] = vfmaq_f16(h1[i], b1, av);
                });
                bp = bp.add(16);
                kk += 1;
            }
            unroll12!(R, |i| {
                acc[i][0] = vaddq_f32(acc[i][0], vcvt_f32_f16(vget_low_f16(h0[i])));
                acc[i][1] = vaddq_f32(acc[i][1], vcvt_high_f32_f16(h0[i]));
                acc[i][2] = vaddq_f32(acc[i][2], vcvt_f32_f16(vget_low_f16(h1[i])));
                acc[i][3] = vaddq_f32(acc[i][3], vcvt_high_f32_f16(h1[i]));
            });
            k0 = k1;
        }
        let mut tmp = [0.0f32; 16];
        for (i, v) in acc.iter().enumerate() {
            if cols == 16 {
                for (q, v) in v.iter().enumerate() {
                    vst1q_f32(c.add(i * ldc + 4 * q), *v);
                }
            } else {
                for (q, v) in v.iter().enumerate() {
                    vst1q_f32(tmp.as_mut_ptr().add(4 * q), *v);
                }
                std::ptr::copy_nonoverlapping(tmp.as_ptr(), c.add(i * ldc), cols);
            }
        }
    }
}

/// `dst[i] = f16(src[i])` (bits; round to nearest even, overflow to infinity) over the
/// shorter of the two.
///
/// # Safety
/// The CPU must have FEAT_FP16 (`fcvtn` from f32 to f16 is baseline NEON, but this is only
/// called where the f16 kernels run).
#[target_feature(enable = "neon,fp16")]
pub(crate) unsafe fn to_f16(src: &[f32], dst: &mut [u16]) {
    let n = src.len().min(dst.len());
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr());
    let mut i = 0;
    // SAFETY: `i + 8 <= n` for the vector loads and stores; the tail goes through buffers.
    unsafe {
        while i + 8 <= n {
            let lo = vcvt_f16_f32(vld1q_f32(s.add(i)));
            let h = vcvt_high_f16_f32(lo, vld1q_f32(s.add(i + 4)));
            vst1q_u16(d.add(i), vreinterpretq_u16_f16(h));
            i += 8;
        }
        if i < n {
            let mut wide = [0.0f32; 8];
            wide[..n - i].copy_from_slice(&src[i..n]);
            let lo = vcvt_f16_f32(vld1q_f32(wide.as_ptr()));
            let h = vcvt_high_f16_f32(lo, vld1q_f32(wide.as_ptr().add(4)));
            let mut narrow = [0u16; 8];
            vst1q_u16(narrow.as_mut_ptr(), vreinterpretq_u16_f16(h));
            dst[i..n].copy_from_slice(&narrow[..n - i]);
        }
    }
}

/// `f32` of the f16 bits `h` (for tests and references).
#[cfg(test)]
pub(crate) fn f16_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0f32 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1F);
    let mant = f32::from(h & 0x3FF);
    match exp {
        0 => sign * mant * (-24f32).exp2(),
        31 if mant == 0.0 => sign * f32::INFINITY,
        31 => f32::NAN,
        _ => sign * (1.0 + mant / 1024.0) * ((exp - 15) as f32).exp2(),
    }
}
