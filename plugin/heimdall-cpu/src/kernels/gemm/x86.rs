//! The x86-64 micro-kernels of `PackedB`: AVX-512 (12 x 32 and 12 x 16) and AVX2+FMA
//! (6 x 16).

use std::arch::x86_64::*;

use super::tile::{ATile, Finish, FinishAct, unroll12};

/// `fin` on 16 values of C whose residual is at `res` (valid where `mask` is set) and whose
/// columns' PReLU alphas are `alpha`: the epilogue's operations in its order
/// (`_mm512_max_ps(x, 0)` is `x > 0 ? x : 0`, `_mm512_min_ps(y, hi)` is `y < hi ? y : hi`).
///
/// # Safety
/// AVX-512F; `res` readable where `mask` is set, if `fin` has a residual.
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn finish512(
    x: __m512,
    fin: &Finish,
    res: *const f32,
    mask: __mmask16,
    alpha: __m512,
) -> __m512 {
    // SAFETY: guaranteed by the caller.
    let x = if fin.res.is_null() {
        x
    } else {
        unsafe { _mm512_add_ps(x, _mm512_maskz_loadu_ps(mask, res)) }
    };
    let zero = _mm512_setzero_ps();
    let clamp = |x: __m512, lo: f32, hi: f32| {
        _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(lo)), _mm512_set1_ps(hi))
    };
    match fin.act {
        FinishAct::None => x,
        FinishAct::Relu => _mm512_max_ps(x, zero),
        FinishAct::Clamp(lo, hi) => clamp(x, lo, hi),
        FinishAct::HardSwish => {
            let r = clamp(_mm512_add_ps(x, _mm512_set1_ps(3.0)), 0.0, 6.0);
            _mm512_div_ps(_mm512_mul_ps(x, r), _mm512_set1_ps(6.0))
        }
        FinishAct::Prelu => _mm512_add_ps(
            _mm512_max_ps(x, zero),
            _mm512_mul_ps(alpha, _mm512_min_ps(x, zero)),
        ),
    }
}

/// [`finish512`] on 8 values (AVX2), the residual's `cols` values at `res` (all 8 if
/// `cols >= 8`).
///
/// # Safety
/// AVX2; `res` readable for `min(cols, 8)` values, if `fin` has a residual.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn finish256(
    x: __m256,
    fin: &Finish,
    res: *const f32,
    cols: usize,
    alpha: __m256,
) -> __m256 {
    // SAFETY: guaranteed by the caller.
    let x = if fin.res.is_null() {
        x
    } else if cols >= 8 {
        unsafe { _mm256_add_ps(x, _mm256_loadu_ps(res)) }
    } else {
        let mut tmp = [0.0f32; 8];
        unsafe {
            std::ptr::copy_nonoverlapping(res, tmp.as_mut_ptr(), cols);
            _mm256_add_ps(x, _mm256_loadu_ps(tmp.as_ptr()))
        }
    };
    let zero = _mm256_setzero_ps();
    let clamp = |x: __m256, lo: f32, hi: f32| {
        _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(lo)), _mm256_set1_ps(hi))
    };
    match fin.act {
        FinishAct::None => x,
        FinishAct::Relu => _mm256_max_ps(x, zero),
        FinishAct::Clamp(lo, hi) => clamp(x, lo, hi),
        FinishAct::HardSwish => {
            let r = clamp(_mm256_add_ps(x, _mm256_set1_ps(3.0)), 0.0, 6.0);
            _mm256_div_ps(_mm256_mul_ps(x, r), _mm256_set1_ps(6.0))
        }
        FinishAct::Prelu => _mm256_add_ps(
            _mm256_max_ps(x, zero),
            _mm256_mul_ps(alpha, _mm256_min_ps(x, zero)),
        ),
    }
}

/// AVX-512 micro-kernel: `MR` rows x 32 columns (two vectors), masked stores for a partial
/// panel.
///
/// # Safety
/// See `PackedB::panel`; the CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn kernel_avx512_wide<const MR: usize>(
    t: &ATile,
    b: *const f32,
    bias: *const f32,
    c: *mut f32,
    ldc: usize,
    cols: usize,
    fin: &Finish,
) {
    // SAFETY: the caller guarantees the extents and the CPU features.
    unsafe {
        let mut acc0 = [_mm512_loadu_ps(bias); MR];
        let mut acc1 = [_mm512_loadu_ps(bias.add(16)); MR];
        let mut rows = [t.a; MR];
        for (i, r) in rows.iter_mut().enumerate() {
            *r = t.a.add(i * t.lda);
        }
        let mut bp = b;
        for &so in t.segs {
            let mut r = rows;
            for p in r.iter_mut() {
                *p = p.add(so);
            }
            for kk in 0..t.seg_len {
                let bk0 = _mm512_loadu_ps(bp.add(kk * 32));
                let bk1 = _mm512_loadu_ps(bp.add(kk * 32 + 16));
                unroll12!(MR, |i| {
                    let av = _mm512_set1_ps(*r[i].add(kk));
                    acc0[i] = _mm512_fmadd_ps(av, bk0, acc0[i]);
                    acc1[i] = _mm512_fmadd_ps(av, bk1, acc1[i]);
                });
            }
            bp = bp.add(t.seg_len * 32);
        }
        let m0: __mmask16 = if cols >= 16 {
            0xFFFF
        } else {
            ((1u32 << cols) - 1) as __mmask16
        };
        let m1: __mmask16 = if cols >= 32 {
            0xFFFF
        } else if cols > 16 {
            ((1u32 << (cols - 16)) - 1) as __mmask16
        } else {
            0
        };
        let (a0, a1) = (
            _mm512_loadu_ps(fin.alpha.as_ptr()),
            _mm512_loadu_ps(fin.alpha.as_ptr().add(16)),
        );
        for i in 0..MR {
            let r = fin.res.wrapping_add(i * ldc);
            let v0 = finish512(acc0[i], fin, r, m0, a0);
            let v1 = finish512(acc1[i], fin, r.wrapping_add(16), m1, a1);
            _mm512_mask_storeu_ps(c.add(i * ldc), m0, v0);
            _mm512_mask_storeu_ps(c.add(i * ldc + 16), m1, v1);
        }
    }
}

/// AVX-512 micro-kernel: `MR` rows x 16 columns, masked stores for a partial panel.
///
/// # Safety
/// See `PackedB::panel`; the CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn kernel_avx512<const MR: usize>(
    t: &ATile,
    b: *const f32,
    bias: *const f32,
    c: *mut f32,
    ldc: usize,
    cols: usize,
    fin: &Finish,
) {
    // SAFETY: the caller guarantees the extents and the CPU features.
    unsafe {
        let bv = _mm512_loadu_ps(bias);
        let mut acc = [bv; MR];
        let mut rows = [t.a; MR];
        for (i, r) in rows.iter_mut().enumerate() {
            *r = t.a.add(i * t.lda);
        }
        let mut bp = b;
        for &so in t.segs {
            let mut r = rows;
            for p in r.iter_mut() {
                *p = p.add(so);
            }
            for kk in 0..t.seg_len {
                let bk = _mm512_loadu_ps(bp.add(kk * 16));
                unroll12!(MR, |i| {
                    acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(*r[i].add(kk)), bk, acc[i]);
                });
            }
            bp = bp.add(t.seg_len * 16);
        }
        let alpha = _mm512_loadu_ps(fin.alpha.as_ptr());
        let mask: __mmask16 = if cols >= 16 {
            0xFFFF
        } else {
            ((1u32 << cols) - 1) as __mmask16
        };
        for (i, v) in acc.iter().enumerate() {
            let v = finish512(*v, fin, fin.res.wrapping_add(i * ldc), mask, alpha);
            if cols == 16 {
                _mm512_storeu_ps(c.add(i * ldc), v);
            } else {
                _mm512_mask_storeu_ps(c.add(i * ldc), mask, v);
            }
        }
    }
}

/// AVX2+FMA micro-kernel: `MR` rows x 16 columns (two 8-lane vectors).
///
/// # Safety
/// See `PackedB::panel`; the CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn kernel_avx2<const MR: usize>(
    t: &ATile,
    b: *const f32,
    bias: *const f32,
    c: *mut f32,
    ldc: usize,
    cols: usize,
    fin: &Finish,
) {
    // SAFETY: the caller guarantees the extents and the CPU features.
    unsafe {
        let b0 = _mm256_loadu_ps(bias);
        let b1 = _mm256_loadu_ps(bias.add(8));
        let mut acc0 = [b0; MR];
        let mut acc1 = [b1; MR];
        let mut rows = [t.a; MR];
        for (i, r) in rows.iter_mut().enumerate() {
            *r = t.a.add(i * t.lda);
        }
        let mut bp = b;
        for &so in t.segs {
            let mut r = rows;
            for p in r.iter_mut() {
                *p = p.add(so);
            }
            for kk in 0..t.seg_len {
                let bk0 = _mm256_loadu_ps(bp.add(kk * 16));
                let bk1 = _mm256_loadu_ps(bp.add(kk * 16 + 8));
                unroll12!(MR, |i| {
                    let av = _mm256_broadcast_ss(&*r[i].add(kk));
                    acc0[i] = _mm256_fmadd_ps(av, bk0, acc0[i]);
                    acc1[i] = _mm256_fmadd_ps(av, bk1, acc1[i]);
                });
            }
            bp = bp.add(t.seg_len * 16);
        }
        let (a0, a1) = (
            _mm256_loadu_ps(fin.alpha.as_ptr()),
            _mm256_loadu_ps(fin.alpha.as_ptr().add(8)),
        );
        let mut tmp = [0.0f32; 16];
        for i in 0..MR {
            let r = fin.res.wrapping_add(i * ldc);
            let v0 = finish256(acc0[i], fin, r, cols, a0);
            let v1 = finish256(acc1[i], fin, r.wrapping_add(8), cols.saturating_sub(8), a1);
            if cols == 16 {
                _mm256_storeu_ps(c.add(i * ldc), v0);
                _mm256_storeu_ps(c.add(i * ldc + 8), v1);
            } else {
                _mm256_storeu_ps(tmp.as_mut_ptr(), v0);
                _mm256_storeu_ps(tmp.as_mut_ptr().add(8), v1);
                std::ptr::copy_nonoverlapping(tmp.as_ptr(), c.add(i * ldc), cols);
            }
        }
    }
}

/// AVX-512 micro-kernel: `MR` rows x `16 * NV` columns (`NV` vectors per row), masked stores
/// for a partial panel. With `NV = 4` and `MR = 6` (24 accumulators) it loads four vectors of
/// `B` and six values of `A` per 24 multiply-adds, and keeps six row pointers: for wide
/// matrices of short `K` (the expansions of inverted residual blocks, 16 -> 64 channels), where
/// the 12 x 32 tile's twelve broadcasts and row pointers per step cost more than its FMAs save.
///
/// # Safety
/// See `PackedB::panel`; the CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn kernel_avx512_nv<const MR: usize, const NV: usize>(
    t: &ATile,
    b: *const f32,
    bias: *const f32,
    c: *mut f32,
    ldc: usize,
    cols: usize,
    fin: &Finish,
) {
    // SAFETY: the caller guarantees the extents and the CPU features.
    unsafe {
        let bv: [__m512; NV] = std::array::from_fn(|v| _mm512_loadu_ps(bias.add(16 * v)));
        let mut acc = [bv; MR];
        let mut rows = [t.a; MR];
        for (i, r) in rows.iter_mut().enumerate() {
            *r = t.a.add(i * t.lda);
        }
        let mut bp = b;
        for &so in t.segs {
            let mut r = rows;
            for p in r.iter_mut() {
                *p = p.add(so);
            }
            for kk in 0..t.seg_len {
                let bk: [__m512; NV] =
                    std::array::from_fn(|v| _mm512_loadu_ps(bp.add(kk * 16 * NV + 16 * v)));
                unroll12!(MR, |i| {
                    let av = _mm512_set1_ps(*r[i].add(kk));
                    for v in 0..NV {
                        acc[i][v] = _mm512_fmadd_ps(av, bk[v], acc[i][v]);
                    }
                });
            }
            bp = bp.add(t.seg_len * 16 * NV);
        }
        let mask: [__mmask16; NV] = std::array::from_fn(|v| {
            let w = cols.saturating_sub(16 * v).min(16);
            if w == 16 {
                0xFFFF
            } else {
                ((1u32 << w) - 1) as __mmask16
            }
        });
        let alpha: [__m512; NV] =
            std::array::from_fn(|v| _mm512_loadu_ps(fin.alpha.as_ptr().add(16 * v)));
        for (i, row) in acc.iter().enumerate() {
            let r = fin.res.wrapping_add(i * ldc);
            for v in 0..NV {
                let x = finish512(row[v], fin, r.wrapping_add(16 * v), mask[v], alpha[v]);
                _mm512_mask_storeu_ps(c.add(i * ldc + 16 * v), mask[v], x);
            }
        }
    }
}
