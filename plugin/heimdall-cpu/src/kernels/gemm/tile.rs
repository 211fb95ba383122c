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
