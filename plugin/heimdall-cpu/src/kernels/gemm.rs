//! The matrix product behind convolutions and fully-connected layers: `C = A * B + bias`, with
//! `B` packed once (at model load) into column panels and `A` read in place (row-major, any
//! row stride: NHWC activations or an im2col buffer), so no packing happens at run time.
//!
//! Micro-kernels: AVX-512 (12 rows x 16 columns), AVX2+FMA (6 x 16), portable (4 x 8), picked
//! once at packing time by runtime detection. Every output value is computed as
//! `acc = bias; for k in 0..K { acc = acc + a[k] * b[k] }` in that order (fused on the SIMD
//! kernels) whatever the tile it falls in, so the result does not depend on how rows are split
//! between threads.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Isa {
    #[cfg(target_arch = "x86_64")]
    Avx512,
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
        let isa = detect();
        let nr = match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 | Isa::Avx2 => 16,
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
        let (k, n) = (self.k, self.n);
        if m == 0 || n == 0 {
            return;
        }
        assert!(m == 0 || a.len() >= (m - 1) * lda + k, "gemm: A too short");
        assert!(c.len() >= m * n, "gemm: C too short");
        debug_assert!(lda >= k);
        let mc = self.block_rows();
        let mut m0 = 0;
        while m0 < m {
            let mb = mc.min(m - m0);
            for p in 0..n.div_ceil(self.nr) {
                let cols = self.nr.min(n - p * self.nr);
                let bp = &self.panels[p * k * self.nr..(p + 1) * k * self.nr];
                let bias = &self.bias[p * self.nr..(p + 1) * self.nr];
                // SAFETY: `a` holds rows m0..m0+mb of `k` values at stride `lda` (checked
                // above), `c` holds rows m0..m0+mb of `n` values, columns p*nr..p*nr+cols < n.
                unsafe {
                    self.panel(
                        a.as_ptr().add(m0 * lda),
                        lda,
                        mb,
                        bp.as_ptr(),
                        bias.as_ptr(),
                        c.as_mut_ptr().add(m0 * n + p * self.nr),
                        cols,
                    );
                }
            }
            m0 += mb;
        }
    }

    /// One column panel for `m` rows.
    ///
    /// # Safety
    /// `a` must address `m` rows of `self.k` values at stride `lda`, `c` `m` rows of `cols`
    /// values at stride `self.n`, `b` a packed panel and `bias` `self.nr` values.
    #[allow(clippy::too_many_arguments)]
    unsafe fn panel(
        &self,
        a: *const f32,
        lda: usize,
        m: usize,
        b: *const f32,
        bias: *const f32,
        c: *mut f32,
        cols: usize,
    ) {
        let (k, ldc) = (self.k, self.n);
        macro_rules! run_rows {
            ($kern:ident, $mr:literal, $($r:literal)*) => {{
                let mut i = 0;
                while i + $mr <= m {
                    unsafe { $kern::<$mr>(k, a.add(i * lda), lda, b, bias, c.add(i * ldc), ldc, cols) };
                    i += $mr;
                }
                match m - i {
                    0 => {}
                    $($r => unsafe { $kern::<$r>(k, a.add(i * lda), lda, b, bias, c.add(i * ldc), ldc, cols) },)*
                    _ => unreachable!(),
                }
            }};
        }
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => run_rows!(kernel_avx512, 12, 1 2 3 4 5 6 7 8 9 10 11),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => run_rows!(kernel_avx2, 6, 1 2 3 4 5),
            Isa::Portable => run_rows!(kernel_portable, 4, 1 2 3),
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
    k: usize,
    a: *const f32,
    lda: usize,
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
        for kk in 0..k {
            let bk = &*(b.add(kk * NR) as *const [f32; NR]);
            for (i, row) in acc.iter_mut().enumerate() {
                let av = *a.add(i * lda + kk);
                for j in 0..NR {
                    row[j] += av * bk[j];
                }
            }
        }
        for (i, row) in acc.iter().enumerate() {
            std::ptr::copy_nonoverlapping(row.as_ptr(), c.add(i * ldc), cols);
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
    k: usize,
    a: *const f32,
    lda: usize,
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
        let mut rows = [a; MR];
        for (i, r) in rows.iter_mut().enumerate() {
            *r = a.add(i * lda);
        }
        let mut bp = b;
        for kk in 0..k {
            let bk = _mm512_loadu_ps(bp);
            for i in 0..MR {
                acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(*rows[i].add(kk)), bk, acc[i]);
            }
            bp = bp.add(16);
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
    k: usize,
    a: *const f32,
    lda: usize,
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
        let mut rows = [a; MR];
        for (i, r) in rows.iter_mut().enumerate() {
            *r = a.add(i * lda);
        }
        let mut bp = b;
        for kk in 0..k {
            let bk0 = _mm256_loadu_ps(bp);
            let bk1 = _mm256_loadu_ps(bp.add(8));
            for i in 0..MR {
                let av = _mm256_broadcast_ss(&*rows[i].add(kk));
                acc0[i] = _mm256_fmadd_ps(av, bk0, acc0[i]);
                acc1[i] = _mm256_fmadd_ps(av, bk1, acc1[i]);
            }
            bp = bp.add(16);
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
            let pb = PackedB::new(k, n, Some(&bias), |kk, j| bm[kk * n + j]);
            let mut c = vec![0.0; m * n];
            pb.gemm(&a, k, m, &mut c);
            for i in 0..m {
                for j in 0..n {
                    let mut s = bias[j];
                    for kk in 0..k {
                        s += a[i * k + kk] * bm[kk * n + j];
                    }
                    assert_eq!(c[i * n + j], s, "m{m} k{k} n{n} at {i},{j}");
                }
            }
        }
    }
}
