//! The epilogues on NEON: `act(x + residual)` in one pass over the output, four values per
//! vector, each activation written with the operations of its portable version in the same
//! order (`max`/`min` as `fmaxnm`/`fminnm`, which is what `f32::max`/`f32::min` compile to on
//! aarch64; the selects of the clamps; the logistic's exponential step by step, with its
//! division), so the result has the portable version's bits. `tanh` stays a libm call per value.

use std::arch::aarch64::*;

use super::epilogue::{Act, Epilogue};

/// Applies `ep` to `out`, a piece of the output starting at element `offset` of a tensor whose
/// innermost dimension is `channels` (see [`Epilogue::apply`]).
///
/// # Safety
/// The CPU must support NEON.
#[target_feature(enable = "neon")]
pub(super) unsafe fn apply_neon(ep: &Epilogue, out: &mut [f32], offset: usize, channels: usize) {
    let residual = ep.residual.map(|r| {
        debug_assert!(r.len() >= offset + out.len());
        &r[offset..offset + out.len()]
    });
    // SAFETY: NEON is available (the caller's contract); every piece below is in bounds.
    unsafe {
        match ep.act {
            Act::Prelu(alpha) if alpha.len() != 1 => {
                debug_assert_eq!(alpha.len(), channels);
                // Pieces of whole channel rows: the first from channel `offset % channels`.
                let mut start = 0;
                let mut c0 = offset % channels;
                while start < out.len() {
                    let len = (channels - c0).min(out.len() - start);
                    let piece = &mut out[start..start + len];
                    let res = residual.map(|r| &r[start..start + len]);
                    map2(piece, res, &alpha[c0..c0 + len], prelu_v, prelu_s);
                    start += len;
                    c0 = 0;
                }
            }
            Act::Prelu(alpha) => {
                let a = vdupq_n_f32(alpha[0]);
                map(out, residual, |x| prelu_v(x, a), |x| prelu_s(x, alpha[0]))
            }
            Act::None => map(out, residual, |x| x, |x| x),
            Act::Relu => map(out, residual, relu_v, |x: f32| x.max(0.0)),
            Act::Relu6 => map(out, residual, relu6_v, |x| clamp_s(x, 0.0, 6.0)),
            Act::ReluN1To1 => map(out, residual, relu_n1_to_1_v, |x| clamp_s(x, -1.0, 1.0)),
            Act::HardSwish => map(out, residual, hard_swish_v, |x| {
                x * clamp_s(x + 3.0, 0.0, 6.0) / 6.0
            }),
            Act::Logistic => map(out, residual, logistic_v, crate::kernels::vmath::logistic),
            // The residual here, the libm call below.
            Act::Tanh => map(out, residual, |x| x, |x| x),
        }
    }
    if matches!(ep.act, Act::Tanh) {
        out.iter_mut().for_each(|x| *x = x.tanh());
    }
}

/// `out[i] = f(out[i] + residual[i])` (no residual: `f(out[i])`), four values at a time, the
/// last `len % 4` with the scalar `s`.
#[inline(always)]
unsafe fn map(
    out: &mut [f32],
    residual: Option<&[f32]>,
    v: impl Fn(float32x4_t) -> float32x4_t,
    s: impl Fn(f32) -> f32,
) {
    let n = out.len();
    let p = out.as_mut_ptr();
    let mut i = 0;
    // SAFETY: `i + 4 <= n` for the vector loads and stores; `residual` holds `n` values.
    unsafe {
        match residual {
            Some(r) => {
                let q = r.as_ptr();
                while i + 8 <= n {
                    let a = vaddq_f32(vld1q_f32(p.add(i)), vld1q_f32(q.add(i)));
                    let b = vaddq_f32(vld1q_f32(p.add(i + 4)), vld1q_f32(q.add(i + 4)));
                    vst1q_f32(p.add(i), v(a));
                    vst1q_f32(p.add(i + 4), v(b));
                    i += 8;
                }
                while i + 4 <= n {
                    let a = vaddq_f32(vld1q_f32(p.add(i)), vld1q_f32(q.add(i)));
                    vst1q_f32(p.add(i), v(a));
                    i += 4;
                }
                for (o, r) in out[i..].iter_mut().zip(&r[i..]) {
                    *o = s(*o + *r);
                }
            }
            None => {
                while i + 8 <= n {
                    let (a, b) = (vld1q_f32(p.add(i)), vld1q_f32(p.add(i + 4)));
                    vst1q_f32(p.add(i), v(a));
                    vst1q_f32(p.add(i + 4), v(b));
                    i += 8;
                }
                while i + 4 <= n {
                    vst1q_f32(p.add(i), v(vld1q_f32(p.add(i))));
                    i += 4;
                }
                for o in &mut out[i..] {
                    *o = s(*o);
                }
            }
        }
    }
}

/// `out[i] = f(out[i] + residual[i], alpha[i])`, as [`map`] with a second operand.
#[inline(always)]
unsafe fn map2(
    out: &mut [f32],
    residual: Option<&[f32]>,
    alpha: &[f32],
    v: impl Fn(float32x4_t, float32x4_t) -> float32x4_t,
    s: impl Fn(f32, f32) -> f32,
) {
    let n = out.len();
    debug_assert_eq!(alpha.len(), n);
    let (p, a) = (out.as_mut_ptr(), alpha.as_ptr());
    let mut i = 0;
    // SAFETY: `i + 4 <= n`; `residual` and `alpha` hold `n` values.
    unsafe {
        while i + 4 <= n {
            let mut x = vld1q_f32(p.add(i));
            if let Some(r) = residual {
                x = vaddq_f32(x, vld1q_f32(r.as_ptr().add(i)));
            }
            vst1q_f32(p.add(i), v(x, vld1q_f32(a.add(i))));
            i += 4;
        }
    }
    for j in i..n {
        let x = out[j] + residual.map_or(0.0, |r| r[j]);
        out[j] = s(x, alpha[j]);
    }
}

#[inline(always)]
fn prelu_s(x: f32, a: f32) -> f32 {
    x.max(0.0) + a * x.min(0.0)
}

/// `min(max(x, lo), hi)` as the portable clamps write it: `x > lo ? x : lo`, then
/// `y < hi ? y : hi` (NaN gives `lo`).
#[inline(always)]
fn clamp_s(x: f32, lo: f32, hi: f32) -> f32 {
    let y = if x > lo { x } else { lo };
    if y < hi { y } else { hi }
}

#[inline(always)]
fn relu_v(x: float32x4_t) -> float32x4_t {
    // SAFETY: NEON is baseline on aarch64 and enabled in every caller.
    unsafe { vmaxnmq_f32(x, vdupq_n_f32(0.0)) }
}

#[inline(always)]
fn clamp_v(x: float32x4_t, lo: f32, hi: f32) -> float32x4_t {
    // SAFETY: as `relu_v`.
    unsafe {
        let (lo, hi) = (vdupq_n_f32(lo), vdupq_n_f32(hi));
        let y = vbslq_f32(vcgtq_f32(x, lo), x, lo);
        vbslq_f32(vcltq_f32(y, hi), y, hi)
    }
}

#[inline(always)]
fn relu6_v(x: float32x4_t) -> float32x4_t {
    clamp_v(x, 0.0, 6.0)
}

#[inline(always)]
fn relu_n1_to_1_v(x: float32x4_t) -> float32x4_t {
    clamp_v(x, -1.0, 1.0)
}

#[inline(always)]
fn hard_swish_v(x: float32x4_t) -> float32x4_t {
    // SAFETY: as `relu_v`.
    unsafe {
        let r = clamp_v(vaddq_f32(x, vdupq_n_f32(3.0)), 0.0, 6.0);
        vdivq_f32(vmulq_f32(x, r), vdupq_n_f32(6.0))
    }
}

#[inline(always)]
fn prelu_v(x: float32x4_t, a: float32x4_t) -> float32x4_t {
    // SAFETY: as `relu_v`.
    unsafe {
        let z = vdupq_n_f32(0.0);
        vaddq_f32(vmaxnmq_f32(x, z), vmulq_f32(a, vminnmq_f32(x, z)))
    }
}

/// [`crate::kernels::vmath::logistic`] four lanes at a time, operation for operation.
#[inline(always)]
fn logistic_v(x: float32x4_t) -> float32x4_t {
    // SAFETY: as `relu_v`.
    unsafe {
        let e = exp_nonpositive_v(vnegq_f32(vabsq_f32(x)));
        let one = vdupq_n_f32(1.0);
        let r = vdivq_f32(one, vaddq_f32(one, e));
        vbslq_f32(vcgeq_f32(x, vdupq_n_f32(0.0)), r, vmulq_f32(e, r))
    }
}

/// `crate::kernels::vmath::exp_nonpositive` four lanes at a time, operation for operation.
#[inline(always)]
fn exp_nonpositive_v(x: float32x4_t) -> float32x4_t {
    const SHIFT: f32 = 12_582_912.0;
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    // SAFETY: as `relu_v`.
    unsafe {
        let d = vdupq_n_f32;
        // f32::clamp(-87, 0): `x < min ? min : x`, then `x > max ? max : x` (NaN stays).
        let x = vbslq_f32(vcltq_f32(x, d(-87.0)), d(-87.0), x);
        let x = vbslq_f32(vcgtq_f32(x, d(0.0)), d(0.0), x);
        let t = vaddq_f32(vmulq_f32(x, d(std::f32::consts::LOG2_E)), d(SHIFT));
        let n = vsubq_f32(t, d(SHIFT));
        let r = vsubq_f32(
            vsubq_f32(x, vmulq_f32(n, d(LN2_HI))),
            vmulq_f32(n, d(LN2_LO)),
        );
        // 1 + r(1 + r(1/2 + r(1/6 + r(1/24 + r(1/120 + r(1/720 + r/5040))))))
        let mut p = vaddq_f32(d(1.0 / 720.0), vdivq_f32(r, d(5040.0)));
        p = vaddq_f32(d(1.0 / 120.0), vmulq_f32(r, p));
        p = vaddq_f32(d(1.0 / 24.0), vmulq_f32(r, p));
        p = vaddq_f32(d(1.0 / 6.0), vmulq_f32(r, p));
        p = vaddq_f32(d(0.5), vmulq_f32(r, p));
        p = vaddq_f32(d(1.0), vmulq_f32(r, p));
        p = vaddq_f32(d(1.0), vmulq_f32(r, p));
        let n_int = vsubq_s32(
            vreinterpretq_s32_f32(t),
            vdupq_n_s32(SHIFT.to_bits() as i32),
        );
        let scale = vshlq_n_s32::<23>(vaddq_s32(n_int, vdupq_n_s32(127)));
        vmulq_f32(p, vreinterpretq_f32_s32(scale))
    }
}
