//! The matrix product behind convolutions and fully-connected layers: `C = A * B + bias`, with
//! `B` packed once (at model load) into column panels and `A` read in place (row-major, any
//! row stride: NHWC activations or an im2col buffer), so no packing happens at run time.
//!
//! Micro-kernels: AVX-512 (12 rows x 32 columns, or 12 x 16 when 32-column panels would be
//! mostly padding), AVX2+FMA (6 x 16), portable (4 x 8), picked once at packing time by runtime
//! detection. Every output value is computed as
//! `acc = bias; for k in 0..K { acc = acc + a[k] * b[k] }` in that order (fused on the SIMD
//! kernels) whatever the tile it falls in, so the result does not depend on how rows are split
//! between threads.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Isa {
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "x86_64")]
    Avx512Wide,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    Portable,
}

fn detect() -> Isa {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return Isa::Avx512;
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return Isa::Avx2;
        }
    }
    Isa::Portable
}

/// Expands `$body` for `$i = 0, 1, ..., 11` guarded by `$i < $n` (a constant), so that
/// register tiles unroll fully at any optimisation level.
#[cfg(target_arch = "x86_64")]
macro_rules! unroll12 {
    ($n:expr, |$i:ident| $body:block) => {
        unroll12!(@ $n, $i, $body, 0 1 2 3 4 5 6 7 8 9 10 11)
    };
    (@ $n:expr, $i:ident, $body:block, $($k:literal)*) => {
        $( if $k < $n { let $i = $k; $body } )*
    };
}

/// A `K x N` right-hand matrix packed into panels of `nr` columns (`[panel][k][nr]`, the last
/// panel zero-padded), with its bias padded the same way.
#[derive(Clone, Debug)]
pub(crate) struct PackedB {
    k: usize,
    n: usize,
    nr: usize,
    isa: Isa,
    panels: Vec<f32>,
    bias: Vec<f32>,
}

impl PackedB {
    /// Packs `B[k][j] = b(k, j)` for `k < kdim`, `j < n`, with an optional bias of `n` values.
    pub(crate) fn new(
        kdim: usize,
        n: usize,
        bias: Option<&[f32]>,
        b: impl Fn(usize, usize) -> f32,
    ) -> Self {
        let isa = match detect() {
            // 32-column panels run about 1.3x faster than 16-column ones (measured); use them
            // unless their padding wastes more than that.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 if n > 16 && 10 * n.div_ceil(32) * 32 <= 13 * n.div_ceil(16) * 16 => {
                Isa::Avx512Wide
            }
            isa => isa,
        };
        Self::with_isa(isa, kdim, n, bias, b)
    }

    fn with_isa(
        isa: Isa,
        kdim: usize,
        n: usize,
        bias: Option<&[f32]>,
        b: impl Fn(usize, usize) -> f32,
    ) -> Self {
        let nr = match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 | Isa::Avx2 => 16,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512Wide => 32,
            Isa::Portable => 8,
        };
        let n_panels = n.div_ceil(nr);
        let mut panels = vec![0.0; n_panels * kdim * nr];
        for p in 0..n_panels {
            for kk in 0..kdim {
                for jj in 0..nr {
                    let j = p * nr + jj;
                    if j < n {
                        panels[(p * kdim + kk) * nr + jj] = b(kk, j);
                    }
                }
            }
        }
        let mut padded_bias = vec![0.0; n_panels * nr];
        if let Some(bias) = bias {
            debug_assert_eq!(bias.len(), n);
            padded_bias[..n].copy_from_slice(bias);
        }
        PackedB {
            k: kdim,
            n,
            nr,
            isa,
            panels,
            bias: padded_bias,
        }
    }

    /// Rows of `A` handled per cache block: `A` block plus one `B` panel stay in L2.
    fn block_rows(&self) -> usize {
        (16384 / self.k.max(1)).clamp(12, 480)
    }

    /// `c[i][j] = bias[j] + sum_k a[i * lda + k] * B[k][j]` for `i < m`, `j < n`; `c` is
    /// row-major with row stride `n`.
    pub(crate) fn gemm(&self, a: &[f32], lda: usize, m: usize, c: &mut [f32]) {
        if m == 0 || self.n == 0 {
            return;
        }
        assert!(a.len() >= (m - 1) * lda + self.k, "gemm: A too short");
        debug_assert!(lda >= self.k);
        // SAFETY: row i < m reads a[i * lda..i * lda + k], inside `a` (checked above).
        unsafe { self.gemm_segmented(a.as_ptr(), lda, &[0], self.k, m, c) };
    }

    /// Like [`PackedB::gemm`] with each row of `A` made of segments: row `i` is the
    /// concatenation of `a[i * lda + s..i * lda + s + seg_len]` for `s` in `segs` (an implicit
    /// im2col: `segs` are the offsets of a convolution window's rows).
    ///
    /// # Safety
    /// `segs.len() * seg_len` must equal `K`, and every such range must be readable for
    /// `i < m`.
    pub(crate) unsafe fn gemm_segmented(
        &self,
        a: *const f32,
        lda: usize,
        segs: &[usize],
        seg_len: usize,
        m: usize,
        c: &mut [f32],
    ) {
        if m == 0 || self.n == 0 {
            return;
        }
        assert!(c.len() >= m * self.n, "gemm: C too short");
        // SAFETY: `c` holds `m` rows of `n` values (checked above); A as the caller guarantees.
        unsafe { self.gemm_tile(a, lda, segs, seg_len, m, 0..self.n, c.as_mut_ptr(), self.n) };
    }

    /// Columns per panel: a column range of [`PackedB::gemm_tile`] starts at a multiple of it.
    pub(crate) fn panel_cols(&self) -> usize {
        self.nr
    }

    /// Rows per micro-kernel call: row ranges that are multiples of it waste no register tile.
    pub(crate) fn tile_rows(&self) -> usize {
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 | Isa::Avx512Wide => 12,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => 6,
            Isa::Portable => 4,
        }
    }

    /// Like [`PackedB::gemm_segmented`] for the output columns `cols` only, written to `c`
    /// (row `i`, column `j` at `c[i * ldc + j - cols.start]`). Each value is computed exactly
    /// as by [`PackedB::gemm`].
    ///
    /// # Safety
    /// As [`PackedB::gemm_segmented`]; `cols.start` must be a multiple of
    /// [`PackedB::panel_cols`] and `cols.end <= N`, and `c` must be writable for `m` rows of
    /// `cols.len()` values at stride `ldc`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn gemm_tile(
        &self,
        a: *const f32,
        lda: usize,
        segs: &[usize],
        seg_len: usize,
        m: usize,
        cols: std::ops::Range<usize>,
        c: *mut f32,
        ldc: usize,
    ) {
        let (k, n) = (self.k, self.n);
        if m == 0 || cols.is_empty() {
            return;
        }
        assert_eq!(segs.len() * seg_len, k, "gemm: segments do not cover K");
        assert!(
            cols.start.is_multiple_of(self.nr) && cols.end <= n,
            "gemm: bad column range"
        );
        let mc = self.block_rows();
        let mut m0 = 0;
        while m0 < m {
            let mb = mc.min(m - m0);
            // SAFETY: rows m0..m0+mb are readable (caller); row stride is kept.
            let tile = ATile {
                a: unsafe { a.add(m0 * lda) },
                lda,
                segs,
                seg_len,
            };
            for p in cols.start / self.nr..cols.end.div_ceil(self.nr) {
                let width = self.nr.min(cols.end - p * self.nr);
                let bp = &self.panels[p * k * self.nr..(p + 1) * k * self.nr];
                let bias = &self.bias[p * self.nr..(p + 1) * self.nr];
                // SAFETY: `c` holds rows m0..m0+mb of the columns (caller), and panel `p`'s
                // columns p*nr..p*nr+width lie inside `cols`; A as guaranteed by the caller.
                unsafe {
                    self.panel(
                        &tile,
                        mb,
                        bp.as_ptr(),
                        bias.as_ptr(),
                        c.add(m0 * ldc + p * self.nr - cols.start),
                        ldc,
                        width,
                    );
                }
            }
            m0 += mb;
        }
    }

    /// One column panel for `m` rows.
    ///
    /// # Safety
    /// `t` must address `m` rows (see [`PackedB::gemm_segmented`]), `c` `m` rows of `cols`
    /// values at stride `ldc`, `b` a packed panel and `bias` `self.nr` values.
    #[allow(clippy::too_many_arguments)]
    unsafe fn panel(
        &self,
        t: &ATile,
        m: usize,
        b: *const f32,
        bias: *const f32,
        c: *mut f32,
        ldc: usize,
        cols: usize,
    ) {
        macro_rules! run_rows {
            ($kern:ident, $mr:literal, $($r:literal)*) => {{
                let mut i = 0;
                while i + $mr <= m {
                    unsafe { $kern::<$mr>(&t.offset(i), b, bias, c.add(i * ldc), ldc, cols) };
                    i += $mr;
                }
                match m - i {
                    0 => {}
                    $($r => unsafe { $kern::<$r>(&t.offset(i), b, bias, c.add(i * ldc), ldc, cols) },)*
                    _ => unreachable!(),
                }
            }};
        }
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => run_rows!(kernel_avx512, 12, 1 2 3 4 5 6 7 8 9 10 11),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512Wide => run_rows!(kernel_avx512_wide, 12, 1 2 3 4 5 6 7 8 9 10 11),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => run_rows!(kernel_avx2, 6, 1 2 3 4 5),
            Isa::Portable => run_rows!(kernel_portable, 4, 1 2 3),
        }
    }
}

/// Rows of `A` for a micro-kernel: row `i` is the concatenation of
/// `a[i * lda + s..i * lda + s + seg_len]` over `s` in `segs`.
struct ATile<'s> {
    a: *const f32,
    lda: usize,
    segs: &'s [usize],
    seg_len: usize,
}

impl ATile<'_> {
    /// The same tile starting `rows` rows further down.
    ///
    /// # Safety
    /// The rows must exist (see [`PackedB::gemm_segmented`]).
    unsafe fn offset(&self, rows: usize) -> ATile<'_> {
        // SAFETY: guaranteed by the caller.
        ATile {
            a: unsafe { self.a.add(rows * self.lda) },
            lda: self.lda,
            segs: self.segs,
            seg_len: self.seg_len,
        }
    }
}

/// Portable micro-kernel: `MR` rows x 8 columns.
///
/// # Safety
/// See [`PackedB::panel`].
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn kernel_portable<const MR: usize>(
    t: &ATile,
    b: *const f32,
    bias: *const f32,
    c: *mut f32,
    ldc: usize,
    cols: usize,
) {
    const NR: usize = 8;
    let mut acc = [[0.0f32; NR]; MR];
    // SAFETY: the caller guarantees the extents (see `PackedB::panel`).
    unsafe {
        let bias = &*(bias as *const [f32; NR]);
        for row in acc.iter_mut() {
            *row = *bias;
        }
        let mut bp = b;
        for &so in t.segs {
            for kk in so..so + t.seg_len {
                let bk = &*(bp as *const [f32; NR]);
                for (i, row) in acc.iter_mut().enumerate() {
                    let av = *t.a.add(i * t.lda + kk);
                    for j in 0..NR {
                        row[j] += av * bk[j];
                    }
                }
                bp = bp.add(NR);
            }
        }
        for (i, row) in acc.iter().enumerate() {
            std::ptr::copy_nonoverlapping(row.as_ptr(), c.add(i * ldc), cols);
        }
    }
}

/// AVX-512 micro-kernel: `MR` rows x 32 columns (two vectors), masked stores for a partial
/// panel.
///
/// # Safety
/// See [`PackedB::panel`]; the CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn kernel_avx512_wide<const MR: usize>(
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
/// See [`PackedB::panel`]; the CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f")]
unsafe fn kernel_avx512<const MR: usize>(
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
/// See [`PackedB::panel`]; the CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
unsafe fn kernel_avx2<const MR: usize>(
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

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // naive references index on purpose
mod tests {
    use super::*;

    /// Every micro-kernel this CPU can run.
    fn isas() -> Vec<Isa> {
        let mut v = vec![Isa::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                v.push(Isa::Avx2);
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                v.push(Isa::Avx512);
                v.push(Isa::Avx512Wide);
            }
        }
        v
    }

    #[test]
    fn gemm_segmented_matches_dense() {
        // A as 3 segments of 4 values at offsets 0, 10, 20 of rows of stride 7.
        let (m, n, segs, seg_len, lda) = (17, 21, [0usize, 10, 20], 4, 7);
        let a = data_i(m * lda + 24);
        let k = segs.len() * seg_len;
        let bm = data_i(k * n);
        for isa in isas() {
            let pb = PackedB::with_isa(isa, k, n, None, |kk, j| bm[kk * n + j]);
            let mut c = vec![0.0; m * n];
            // SAFETY: the last row reads up to (m - 1) * lda + 20 + 4 < a.len().
            unsafe { pb.gemm_segmented(a.as_ptr(), lda, &segs, seg_len, m, &mut c) };
            for i in 0..m {
                for j in 0..n {
                    let mut s = 0.0;
                    for (si, so) in segs.iter().enumerate() {
                        for t in 0..seg_len {
                            s += a[i * lda + so + t] * bm[(si * seg_len + t) * n + j];
                        }
                    }
                    assert_eq!(c[i * n + j], s, "{isa:?} at {i},{j}");
                }
            }
        }
    }

    fn data_i(len: usize) -> Vec<f32> {
        (0..len).map(|i| ((i * 7 % 13) as f32) - 6.0).collect()
    }

    #[test]
    fn gemm_matches_naive_for_ragged_shapes() {
        for &(m, k, n) in &[
            (1, 1, 1),
            (13, 7, 17),
            (25, 33, 40),
            (12, 3, 16),
            (50, 130, 5),
        ] {
            let a: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 13) as f32) - 6.0).collect();
            let bm: Vec<f32> = (0..k * n).map(|i| ((i * 5 % 11) as f32) - 5.0).collect();
            let bias: Vec<f32> = (0..n).map(|j| j as f32).collect();
            for isa in isas() {
                let pb = PackedB::with_isa(isa, k, n, Some(&bias), |kk, j| bm[kk * n + j]);
                let mut c = vec![0.0; m * n];
                pb.gemm(&a, k, m, &mut c);
                for i in 0..m {
                    for j in 0..n {
                        let mut s = bias[j];
                        for kk in 0..k {
                            s += a[i * k + kk] * bm[kk * n + j];
                        }
                        assert_eq!(c[i * n + j], s, "{isa:?} m{m} k{k} n{n} at {i},{j}");
                    }
                }
            }
        }
    }
}
