//! The x86-64 micro-kernels of `PackedB`: AVX-512 (12 x 32 and 12 x 16) and AVX2+FMA
//! (6 x 16).

use super::tile::{ATile, unroll12};

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
) {
    use std::arch::x86_64::*;
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
        for i in 0..MR {
            _mm512_mask_storeu_ps(c.add(i * ldc), m0, acc0[i]);
            _mm512_mask_storeu_ps(c.add(i * ldc + 16), m1, acc1[i]);
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
) {
    use std::arch::x86_64::*;
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
        if cols == 16 {
            for (i, v) in acc.iter().enumerate() {
                _mm512_storeu_ps(c.add(i * ldc), *v);
            }
        } else {
            let mask: __mmask16 = ((1u32 << cols) - 1) as __mmask16;
            for (i, v) in acc.iter().enumerate() {
                _mm512_mask_storeu_ps(c.add(i * ldc), mask, *v);
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
) {
    use std::arch::x86_64::*;
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
        if cols == 16 {
            for i in 0..MR {
                _mm256_storeu_ps(c.add(i * ldc), acc0[i]);
                _mm256_storeu_ps(c.add(i * ldc + 8), acc1[i]);
            }
        } else {
            let mut tmp = [0.0f32; 16];
            for i in 0..MR {
                _mm256_storeu_ps(tmp.as_mut_ptr(), acc0[i]);
                _mm256_storeu_ps(tmp.as_mut_ptr().add(8), acc1[i]);
                std::ptr::copy_nonoverlapping(tmp.as_ptr(), c.add(i * ldc), cols);
            }
        }
    }
}
