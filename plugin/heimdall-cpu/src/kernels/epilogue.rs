//! Fused epilogues: residual add then activation, applied where a kernel writes its output.

use heimdall_ir::UnaryKind;

use crate::kernels::Isa;

/// An activation applied element-wise to a kernel's output.
#[derive(Clone, Copy, Debug)]
pub enum Act<'a> {
    /// Identity.
    None,
    /// `max(x, 0)`.
    Relu,
    /// `min(max(x, 0), 6)`.
    Relu6,
    /// `min(max(x, -1), 1)`.
    ReluN1To1,
    /// `1 / (1 + exp(-x))` ([`crate::kernels::vmath::logistic`], vectorised).
    Logistic,
    /// `x * relu6(x + 3) / 6`.
    HardSwish,
    /// `tanh(x)`.
    Tanh,
    /// `x if x >= 0 else alpha[c] * x`, with one alpha per output channel (the slice's length is
    /// the channel count) or a single shared alpha (length 1).
    Prelu(&'a [f32]),
}

/// What a kernel applies to each output value before storing it: `act(value + residual)`.
#[derive(Clone, Copy, Debug)]
pub struct Epilogue<'a> {
    /// A tensor of exactly the output's shape added element-wise before the activation.
    pub residual: Option<&'a [f32]>,
    /// The activation.
    pub act: Act<'a>,
}

impl Epilogue<'_> {
    /// No residual, no activation.
    pub const NONE: Epilogue<'static> = Epilogue {
        residual: None,
        act: Act::None,
    };
}

impl<'a> Epilogue<'a> {
    /// An epilogue with only an activation.
    pub fn act(act: Act<'a>) -> Epilogue<'a> {
        Epilogue {
            residual: None,
            act,
        }
    }

    /// Whether applying this epilogue changes nothing.
    pub fn is_identity(&self) -> bool {
        self.residual.is_none() && matches!(self.act, Act::None)
    }

    /// Applies `act(x + residual)` in place to `out`, a contiguous piece of the whole output
    /// tensor starting at element `offset`; `channels` is the tensor's innermost dimension (it
    /// indexes per-channel PReLU alphas: the channel of `out[i]` is `(offset + i) % channels`).
    /// Runs the widest instruction set this CPU has ([`Isa::detect`]); every one gives the
    /// same bits.
    pub fn apply(&self, out: &mut [f32], offset: usize, channels: usize) {
        self.apply_with(Isa::detect(), out, offset, channels);
    }

    /// [`Epilogue::apply`] with the loops of `isa` (portable if this CPU lacks it): the
    /// portable loops compiled for the baseline, the same loops compiled with AVX2 or AVX-512
    /// enabled, or NEON intrinsics doing the residual add and the activation in one pass.
    /// The epilogues are adds, multiplies, divisions, minima, maxima and selects (no fused
    /// multiply-add): the same bits in every ISA.
    pub fn apply_with(&self, isa: Isa, out: &mut [f32], offset: usize, channels: usize) {
        match isa.or_portable() {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the CPU has AVX-512F (`or_portable` checked it).
            Isa::Avx512 => unsafe { apply_avx512(self, out, offset, channels) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the CPU has AVX2 (`or_portable` checked it).
            Isa::Avx2 => unsafe { apply_avx2(self, out, offset, channels) },
            #[cfg(target_arch = "aarch64")]
            // SAFETY: the CPU has NEON (`or_portable` checked it).
            Isa::Neon => unsafe { neon::apply_neon(self, out, offset, channels) },
            _ => self.apply_inline(out, offset, channels),
        }
    }

    #[inline(always)]
    fn apply_inline(&self, out: &mut [f32], offset: usize, channels: usize) {
        if let Some(res) = self.residual {
            debug_assert!(res.len() >= offset + out.len());
            let res = &res[offset..offset + out.len()];
            for (o, r) in out.iter_mut().zip(res) {
                *o += *r;
            }
        }
        self.act.apply_inline(out, offset, channels);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn apply_avx512(ep: &Epilogue, out: &mut [f32], offset: usize, channels: usize) {
    ep.apply_inline(out, offset, channels);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn apply_avx2(ep: &Epilogue, out: &mut [f32], offset: usize, channels: usize) {
    ep.apply_inline(out, offset, channels);
}

impl Act<'static> {
    /// The activation applying `u`, if `u` is one of the fusable activations
    /// ([`UnaryKind::fusable`]).
    pub fn of(u: UnaryKind) -> Option<Act<'static>> {
        Some(match u {
            UnaryKind::Relu => Act::Relu,
            UnaryKind::Relu6 => Act::Relu6,
            UnaryKind::ReluN1To1 => Act::ReluN1To1,
            UnaryKind::Logistic => Act::Logistic,
            UnaryKind::HardSwish => Act::HardSwish,
            UnaryKind::Tanh => Act::Tanh,
            _ => return None,
        })
    }
}

impl Act<'_> {
    /// The activation of one value `x` of channel `c`.
    #[inline]
    pub fn eval(&self, x: f32, c: usize) -> f32 {
        match *self {
            Act::None => x,
            Act::Relu => relu(x),
            Act::Relu6 => relu6(x),
            Act::ReluN1To1 => relu_n1_to_1(x),
            Act::Logistic => crate::kernels::vmath::logistic(x),
            Act::HardSwish => hard_swish(x),
            Act::Tanh => x.tanh(),
            Act::Prelu(alpha) => {
                let a = if alpha.len() == 1 { alpha[0] } else { alpha[c] };
                prelu_of(x, a)
            }
        }
    }

    /// Applies the activation in place to `out`, a piece of a tensor starting at element
    /// `offset` whose innermost dimension is `channels` (see [`Epilogue::apply`]).
    pub fn apply(&self, out: &mut [f32], offset: usize, channels: usize) {
        Epilogue::act(*self).apply(out, offset, channels);
    }

    #[inline(always)]
    fn apply_inline(&self, out: &mut [f32], offset: usize, channels: usize) {
        match *self {
            Act::None => {}
            Act::Relu => out.iter_mut().for_each(|x| *x = relu(*x)),
            Act::Relu6 => out.iter_mut().for_each(|x| *x = relu6(*x)),
            Act::ReluN1To1 => out.iter_mut().for_each(|x| *x = relu_n1_to_1(*x)),
            Act::Logistic => crate::kernels::vmath::logistic_in_place(out),
            Act::HardSwish => out.iter_mut().for_each(|x| *x = hard_swish(*x)),
            Act::Tanh => out.iter_mut().for_each(|x| *x = x.tanh()),
            Act::Prelu(alpha) if alpha.len() == 1 => {
                let a = alpha[0];
                out.iter_mut().for_each(|x| *x = prelu_of(*x, a));
            }
            Act::Prelu(alpha) => {
                debug_assert_eq!(alpha.len(), channels);
                let c0 = offset % channels;
                let head = (channels - c0).min(out.len());
                let (first, rest) = out.split_at_mut(head);
                for (x, a) in first.iter_mut().zip(&alpha[c0..]) {
                    *x = prelu_of(*x, *a);
                }
                for row in rest.chunks_mut(channels) {
                    for (x, a) in row.iter_mut().zip(alpha) {
                        *x = prelu_of(*x, *a);
                    }
                }
            }
        }
    }
}

#[inline(always)]
pub(crate) fn relu(x: f32) -> f32 {
    // A compare and select (not `f32::max`, whose result for -0.0 is unspecified): what
    // `maxps`/`vmaxps` compute with 0 as second operand and NEON's `bsl` of `fcmgt`, so the
    // matrix-product kernels can apply it in registers with the same bits. NaN gives 0.
    if x > 0.0 { x } else { 0.0 }
}

#[inline(always)]
pub(crate) fn relu6(x: f32) -> f32 {
    let y = if x > 0.0 { x } else { 0.0 };
    if y < 6.0 { y } else { 6.0 }
}

#[inline(always)]
fn relu_n1_to_1(x: f32) -> f32 {
    let y = if x > -1.0 { x } else { -1.0 };
    if y < 1.0 { y } else { 1.0 }
}

#[inline(always)]
pub(crate) fn hard_swish(x: f32) -> f32 {
    x * relu6(x + 3.0) / 6.0
}

/// Branch-free (the selects vectorise; a sign test per value mispredicts on real
/// activations): for `x > 0` it is `x + a*0 = x`, for `x < 0` it is `0 + a*x = a*x`, exactly;
/// the selects are [`relu`]'s, so every kernel computes the same bits.
#[inline(always)]
pub(crate) fn prelu_of(x: f32, a: f32) -> f32 {
    let neg = if x < 0.0 { x } else { 0.0 };
    relu(x) + a * neg
}

/// The epilogues on NEON: `act(x + residual)` in one pass over the output, four values per
/// vector, each activation written with the operations of its portable version in the same
/// order (the compares and selects of the rectifiers and clamps; the logistic's exponential
/// step by step, with its division), so the result has the portable version's bits. `tanh` stays a libm call per value.
#[cfg(target_arch = "aarch64")]
mod neon {
    use std::arch::aarch64::*;

    use super::{Act, Epilogue};

    /// Applies `ep` to `out`, a piece of the output starting at element `offset` of a tensor whose
    /// innermost dimension is `channels` (see [`Epilogue::apply`]).
    ///
    /// # Safety
    /// The CPU must support NEON.
    #[target_feature(enable = "neon")]
    pub(super) unsafe fn apply_neon(
        ep: &Epilogue,
        out: &mut [f32],
        offset: usize,
        channels: usize,
    ) {
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
                Act::Relu => map(out, residual, relu_v, super::relu),
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
        super::prelu_of(x, a)
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
        unsafe {
            let z = vdupq_n_f32(0.0);
            vbslq_f32(vcgtq_f32(x, z), x, z)
        }
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
            let neg = vbslq_f32(vcltq_f32(x, z), x, z);
            vaddq_f32(relu_v(x), vmulq_f32(a, neg))
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epilogue_residual_and_prelu_at_offset() {
        // Channels 3, rows of an output starting mid-row at offset 4 (channel 1).
        let residual: Vec<f32> = (0..9).map(|i| -(i as f32)).collect();
        let alpha = [1.0, 2.0, 3.0];
        let ep = Epilogue {
            residual: Some(&residual),
            act: Act::Prelu(&alpha),
        };
        let mut out = [1.0; 5];
        ep.apply(&mut out, 4, 3);
        // values 1 - [4,5,6,7,8] = [-3,-4,-5,-6,-7], channels [1,2,0,1,2].
        assert_eq!(out, [-6.0, -12.0, -5.0, -12.0, -21.0]);
    }

    /// Every activation, with and without a residual, on pieces starting mid-row: each
    /// instruction set this CPU runs (NEON on aarch64, AVX2 and AVX-512 on x86-64) gives the
    /// portable loops' bits, on values from -100 to 100, ±0, ±inf and tiny ones; on aarch64
    /// `apply` runs NEON.
    #[test]
    fn every_isa_gives_the_portable_bits() {
        let n = 1003;
        let mut x: Vec<f32> = crate::kernels::testutil::data(5, n)
            .iter()
            .map(|v| v * 100.0)
            .collect();
        x[..8].copy_from_slice(&[
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            1e-39,
            -3.0,
            3.0,
            6.0,
        ]);
        let residual = crate::kernels::testutil::data(6, n + 40);
        let alpha = crate::kernels::testutil::data(7, 7);
        let alpha1 = [0.25];
        let acts = [
            Act::None,
            Act::Relu,
            Act::Relu6,
            Act::ReluN1To1,
            Act::Logistic,
            Act::HardSwish,
            Act::Tanh,
            Act::Prelu(&alpha),
            Act::Prelu(&alpha1),
        ];
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        let mut checked = 0;
        for act in acts {
            for residual in [None, Some(&residual[..])] {
                let ep = Epilogue { residual, act };
                for (offset, len) in [(0, n), (3, n - 5), (40, 9), (11, 3)] {
                    let mut want = x[..len].to_vec();
                    ep.apply_with(Isa::Portable, &mut want, offset, 7);
                    for isa in Isa::available() {
                        let mut got = x[..len].to_vec();
                        ep.apply_with(isa, &mut got, offset, 7);
                        assert_eq!(bits(&got), bits(&want), "{isa} {act:?} {offset} {len}");
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 0);
        #[cfg(target_arch = "aarch64")]
        assert_eq!(Isa::detect(), Isa::Neon, "NEON epilogues not selected");
    }
}
