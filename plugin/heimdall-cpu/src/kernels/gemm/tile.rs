//! What the micro-kernels of the matrix product share: the rows of `A` they read, and the
//! macro that unrolls their register tiles.

/// Rows of `A` for a micro-kernel: row `i` is the concatenation of
/// `a[i * lda + s..i * lda + s + seg_len]` over `s` in `segs`.
pub(crate) struct ATile<'s> {
    pub(crate) a: *const f32,
    pub(crate) lda: usize,
    pub(crate) segs: &'s [usize],
    pub(crate) seg_len: usize,
}

impl ATile<'_> {
    /// The same tile starting `rows` rows further down.
    ///
    /// # Safety
    /// The rows must exist (see `PackedB::gemm_segmented`).
    pub(crate) unsafe fn offset(&self, rows: usize) -> ATile<'_> {
        // SAFETY: guaranteed by the caller.
        ATile {
            a: unsafe { self.a.add(rows * self.lda) },
            lda: self.lda,
            segs: self.segs,
            seg_len: self.seg_len,
        }
    }
}

/// Expands `$body` for `$i = 0, 1, ..., 11` guarded by `$i < $n` (a constant), so that
/// register tiles unroll fully at any optimisation level.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
macro_rules! unroll12 {
    ($n:expr, |$i:ident| $body:block) => {
        unroll12!(@ $n, $i, $body, 0 1 2 3 4 5 6 7 8 9 10 11)
    };
    (@ $n:expr, $i:ident, $body:block, $($k:literal)*) => {
        $( if $k < $n { let $i = $k; $body } )*
    };
}
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) use unroll12;

/// The activation a micro-kernel applies in registers before it stores (see [`Finish`]); each
/// is the compare/select/arithmetic sequence of its portable epilogue
/// (`crate::kernels::epilogue`), so the bits are the same.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum FinishAct {
    /// Identity.
    None,
    /// `x > 0 ? x : 0`.
    Relu,
    /// `y = x > lo ? x : lo; y < hi ? y : hi` (ReLU6, ReLU-1..1).
    Clamp(f32, f32),
    /// `x * clamp(x + 3, 0, 6) / 6`.
    HardSwish,
    /// `relu(x) + alpha[column] * (x < 0 ? x : 0)`, alphas in [`Finish::alpha`].
    Prelu,
}

/// What a micro-kernel does to its sums before it stores them: the op's epilogue fused into
/// the product, `act(sum + residual)` in that order, so that the output is written once
/// instead of written, read back and written again.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Finish {
    /// The residual's value for C's first value (the same row stride as C), or null.
    pub(crate) res: *const f32,
    /// The activation.
    pub(crate) act: FinishAct,
    /// PReLU: the alphas of the panel's columns (zero past its width).
    pub(crate) alpha: [f32; 64],
}

impl Finish {
    /// No residual, no activation.
    pub(crate) const NONE: Finish = Finish {
        res: std::ptr::null(),
        act: FinishAct::None,
        alpha: [0.0; 64],
    };

    /// The same finish for the part of C that starts `values` further.
    ///
    /// # Safety
    /// The residual, if any, must extend that far (it has C's shape).
    #[inline(always)]
    pub(crate) unsafe fn offset(&self, values: usize) -> Finish {
        Finish {
            // SAFETY: guaranteed by the caller.
            res: if self.res.is_null() {
                self.res
            } else {
                unsafe { self.res.add(values) }
            },
            ..*self
        }
    }

    /// The portable finish of one value of column `j` (with `r` its residual, if any).
    #[inline(always)]
    pub(crate) fn scalar(&self, x: f32, r: Option<f32>, j: usize) -> f32 {
        use crate::kernels::epilogue::{hard_swish, prelu_of, relu};
        let x = match r {
            Some(r) => x + r,
            None => x,
        };
        match self.act {
            FinishAct::None => x,
            FinishAct::Relu => relu(x),
            FinishAct::Clamp(lo, hi) => {
                let y = if x > lo { x } else { lo };
                if y < hi { y } else { hi }
            }
            FinishAct::HardSwish => hard_swish(x),
            FinishAct::Prelu => prelu_of(x, self.alpha[j]),
        }
    }
}
