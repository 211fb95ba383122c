//! The aarch64 micro-kernel of `PackedB`: NEON, `MR` (up to 6) rows x 8 columns
//! (two 4-lane vectors), 12 accumulators.
//!
//! `A` is read four `k` steps at a time (one 128-bit load per row) and each step multiplies a
//! lane of it (`fmla v.4s, v.4s, v.s[lane]`), as XNNPACK's `6x8 ld128` kernels do: per four
//! steps, 6 loads of `A`, 8 of `B` and 48 multiply-adds, with 12 + 6 + 2 vector registers live
//! (of 32). A segment's last `k % 4` steps broadcast one value of `A` at a time. Every step is
//! a fused multiply-add in `k` order, as on x86-64.

use std::arch::aarch64::*;

use super::tile::{ATile, Finish, FinishAct, unroll12};

/// `fin` on 4 values of C whose residual's first `cols` values (all 4 if `cols >= 4`) are at
/// `res` and whose columns' PReLU alphas are `alpha`: the epilogue's compares, selects and
/// arithmetic in its order.
///
/// # Safety
/// NEON; `res` readable for `min(cols, 4)` values, if `fin` has a residual.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn finish4(
    x: float32x4_t,
    fin: &Finish,
    res: *const f32,
    cols: usize,
    alpha: float32x4_t,
) -> float32x4_t {
    // SAFETY: guaranteed by the caller.
    unsafe {
        let x = if fin.res.is_null() || cols == 0 {
            x
        } else if cols >= 4 {
            vaddq_f32(x, vld1q_f32(res))
        } else {
            let mut tmp = [0.0f32; 4];
            std::ptr::copy_nonoverlapping(res, tmp.as_mut_ptr(), cols);
            vaddq_f32(x, vld1q_f32(tmp.as_ptr()))
        };
        let zero = vdupq_n_f32(0.0);
        let clamp = |x: float32x4_t, lo: f32, hi: f32| {
            let (lo, hi) = (vdupq_n_f32(lo), vdupq_n_f32(hi));
            let y = vbslq_f32(vcgtq_f32(x, lo), x, lo);
            vbslq_f32(vcltq_f32(y, hi), y, hi)
        };
        match fin.act {
            FinishAct::None => x,
            FinishAct::Relu => vbslq_f32(vcgtq_f32(x, zero), x, zero),
            FinishAct::Clamp(lo, hi) => clamp(x, lo, hi),
            FinishAct::HardSwish => {
                let r = clamp(vaddq_f32(x, vdupq_n_f32(3.0)), 0.0, 6.0);
                vdivq_f32(vmulq_f32(x, r), vdupq_n_f32(6.0))
            }
            FinishAct::Prelu => {
                let pos = vbslq_f32(vcgtq_f32(x, zero), x, zero);
                let neg = vbslq_f32(vcltq_f32(x, zero), x, zero);
                vaddq_f32(pos, vmulq_f32(alpha, neg))
            }
        }
    }
}

/// NEON micro-kernel: `MR` rows x 8 columns.
///
/// # Safety
/// See `PackedB::panel`; the CPU must support NEON.
#[target_feature(enable = "neon")]
pub(super) unsafe fn kernel_neon<const MR: usize>(
    t: &ATile,
    b: *const f32,
    bias: *const f32,
    c: *mut f32,
    ldc: usize,
    cols: usize,
    fin: &Finish,
) {
    // SAFETY: the caller guarantees the extents and the CPU features; every load of A stays
    // inside a segment (`kk + 4 <= seg_len`, then single values).
    unsafe {
        let mut acc0 = [vld1q_f32(bias); MR];
        let mut acc1 = [vld1q_f32(bias.add(4)); MR];
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
            let mut kk = 0;
            while kk + 4 <= t.seg_len {
                let mut av = [vdupq_n_f32(0.0); MR];
                unroll12!(MR, |i| {
                    av[i] = vld1q_f32(r[i].add(kk));
                });
                macro_rules! lane {
                    ($l:literal) => {{
                        let bk0 = vld1q_f32(bp.add($l * 8));
                        let bk1 = vld1q_f32(bp.add($l * 8 + 4));
                        unroll12!(MR, |i| {
                            acc0[i] = vfmaq_laneq_f32::<$l>(acc0[i], bk0, av[i]);
                            acc1[i] = vfmaq_laneq_f32::<$l>(acc1[i], bk1, av[i]);
                        });
                    }};
                }
                lane!(0);
                lane!(1);
                lane!(2);
                lane!(3);
                bp = bp.add(32);
                kk += 4;
            }
            while kk < t.seg_len {
                let bk0 = vld1q_f32(bp);
                let bk1 = vld1q_f32(bp.add(4));
                unroll12!(MR, |i| {
                    let a = vld1q_dup_f32(r[i].add(kk));
                    acc0[i] = vfmaq_f32(acc0[i], a, bk0);
                    acc1[i] = vfmaq_f32(acc1[i], a, bk1);
                });
                bp = bp.add(8);
                kk += 1;
            }
        }
        let (a0, a1) = (
            vld1q_f32(fin.alpha.as_ptr()),
            vld1q_f32(fin.alpha.as_ptr().add(4)),
        );
        let mut tmp = [0.0f32; 8];
        for i in 0..MR {
            let r = fin.res.wrapping_add(i * ldc);
            let v0 = finish4(acc0[i], fin, r, cols, a0);
            let v1 = finish4(acc1[i], fin, r.wrapping_add(4), cols.saturating_sub(4), a1);
            if cols == 8 {
                vst1q_f32(c.add(i * ldc), v0);
                vst1q_f32(c.add(i * ldc + 4), v1);
            } else {
                vst1q_f32(tmp.as_mut_ptr(), v0);
                vst1q_f32(tmp.as_mut_ptr().add(4), v1);
                std::ptr::copy_nonoverlapping(tmp.as_ptr(), c.add(i * ldc), cols);
            }
        }
    }
}
