//! The matrix product behind convolutions and fully-connected layers: `C = A * B + bias`, with
//! `B` packed once (at model load) into column panels and `A` read in place (row-major, any
//! row stride: NHWC activations or an im2col buffer), so no packing happens at run time.
//!
//! Micro-kernels: AVX-512 (12 rows x 16, 12 x 32, 8 x 48 or 6 x 64 columns, whichever pads
//! `N` least for its speed), AVX2+FMA (6 x 16), NEON (6 x 8, four `k` steps per load of `A`: lane
//! multiply-adds), portable (4 x 8), picked once at packing time ([`Isa::detect`], or the
//! instruction set asked for). Every output value is computed as
//! `acc = bias; for k in 0..K { acc = acc + a[k] * b[k] }` in that order (fused on the SIMD
//! kernels, so AVX2, AVX-512 and NEON give the same bits) whatever the tile it falls in, so the
//! result does not depend on how rows are split between threads.

#[cfg(target_arch = "aarch64")]
pub(crate) mod fp16;
#[cfg(target_arch = "aarch64")]
mod neon;
#[cfg(test)]
mod tests;
mod tile;
#[cfg(target_arch = "x86_64")]
mod x86;

use crate::kernels::{Act, Epilogue, Isa};
#[cfg(target_arch = "aarch64")]
use neon::kernel_neon;
use tile::{ATile, Finish, FinishAct};
#[cfg(target_arch = "x86_64")]
use x86::{kernel_avx2, kernel_avx512, kernel_avx512_wide};

/// The 8 x 48 AVX-512 micro-kernel under a name `run_rows!` calls with one const parameter.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn kernel_avx512_x48<const MR: usize>(
    t: &ATile,
    b: *const f32,
    bias: *const f32,
    c: *mut f32,
    ldc: usize,
    cols: usize,
    fin: &Finish,
) {
    // SAFETY: as the caller guarantees (`PackedB::panel`).
    unsafe { x86::kernel_avx512_nv::<MR, 3>(t, b, bias, c, ldc, cols, fin) }
}

/// The 6 x 64 AVX-512 micro-kernel under a name `run_rows!` calls with one const parameter.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn kernel_avx512_x64<const MR: usize>(
    t: &ATile,
    b: *const f32,
    bias: *const f32,
    c: *mut f32,
    ldc: usize,
    cols: usize,
    fin: &Finish,
) {
    // SAFETY: as the caller guarantees (`PackedB::panel`).
    unsafe { x86::kernel_avx512_nv::<MR, 4>(t, b, bias, c, ldc, cols, fin) }
}

/// The micro-kernel of a packed matrix: an instruction set and its register tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Micro {
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "x86_64")]
    Avx512Wide,
    #[cfg(target_arch = "x86_64")]
    Avx512X48,
    #[cfg(target_arch = "x86_64")]
    Avx512X64,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "aarch64")]
    Neon,
    Portable,
}

impl Micro {
    /// The micro-kernel of `isa` (one this CPU runs) for a matrix of `n` columns.
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
    fn pick(isa: Isa, n: usize) -> Micro {
        match isa.or_portable() {
            // The panel width of 16 (12 rows), 32 (12 rows), 48 (8 rows) or 64 (6 rows) that
            // pads `N` least for its speed: the wider tiles load fewer values of A and B per
            // multiply-add and keep fewer row pointers (32 columns ran about 1.3x faster than
            // 16; 6 x 64 1.17x faster than 12 x 32 on 16 -> 64 channels, one thread).
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 if n > 16 => {
                let cost = |w: usize, speed: usize| n.div_ceil(w) * w * 100 / speed;
                let best = [
                    (cost(64, 150), Micro::Avx512X64),
                    (cost(48, 140), Micro::Avx512X48),
                    (cost(32, 130), Micro::Avx512Wide),
                    (cost(16, 100), Micro::Avx512),
                ];
                best.iter()
                    .min_by_key(|(c, _)| *c)
                    .map_or(Micro::Avx512, |b| b.1)
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => Micro::Avx512,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => Micro::Avx2,
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => Micro::Neon,
            _ => Micro::Portable,
        }
    }

    fn isa(self) -> Isa {
        match self {
            #[cfg(target_arch = "x86_64")]
            Micro::Avx512 | Micro::Avx512Wide | Micro::Avx512X48 | Micro::Avx512X64 => Isa::Avx512,
            #[cfg(target_arch = "x86_64")]
            Micro::Avx2 => Isa::Avx2,
            #[cfg(target_arch = "aarch64")]
            Micro::Neon => Isa::Neon,
            Micro::Portable => Isa::Portable,
        }
    }

    /// Columns per panel.
    fn nr(self) -> usize {
        match self {
            #[cfg(target_arch = "x86_64")]
            Micro::Avx512 | Micro::Avx2 => 16,
            #[cfg(target_arch = "x86_64")]
            Micro::Avx512Wide => 32,
            #[cfg(target_arch = "x86_64")]
            Micro::Avx512X48 => 48,
            #[cfg(target_arch = "x86_64")]
            Micro::Avx512X64 => 64,
            #[cfg(target_arch = "aarch64")]
            Micro::Neon => 8,
            Micro::Portable => 8,
        }
    }

    /// Rows per micro-kernel call.
    fn mr(self) -> usize {
        match self {
            #[cfg(target_arch = "x86_64")]
            Micro::Avx512 | Micro::Avx512Wide => 12,
            #[cfg(target_arch = "x86_64")]
            Micro::Avx512X48 => 8,
            #[cfg(target_arch = "x86_64")]
            Micro::Avx512X64 => 6,
            #[cfg(target_arch = "x86_64")]
            Micro::Avx2 => 6,
            #[cfg(target_arch = "aarch64")]
            Micro::Neon => 6,
            Micro::Portable => 4,
        }
    }
}

/// A `K x N` right-hand matrix packed into panels of `nr` columns (`[panel][k][nr]`, the last
/// panel zero-padded), with its bias padded the same way.
#[derive(Clone, Debug)]
pub(crate) struct PackedB {
    k: usize,
    n: usize,
    nr: usize,
    micro: Micro,
    panels: Vec<f32>,
    bias: Vec<f32>,
}

impl PackedB {
    /// Packs `B[k][j] = b(k, j)` for `k < kdim`, `j < n`, with an optional bias of `n` values,
    /// for the widest instruction set this CPU runs.
    pub(crate) fn new(
        kdim: usize,
        n: usize,
        bias: Option<&[f32]>,
        b: impl Fn(usize, usize) -> f32,
    ) -> Self {
        Self::with_isa(Isa::detect(), kdim, n, bias, b)
    }

    /// [`PackedB::new`] for the kernels of `isa` (portable if this CPU lacks it).
    pub(crate) fn with_isa(
        isa: Isa,
        kdim: usize,
        n: usize,
        bias: Option<&[f32]>,
        b: impl Fn(usize, usize) -> f32,
    ) -> Self {
        Self::with_micro(Micro::pick(isa, n), kdim, n, bias, b)
    }

    fn with_micro(
        micro: Micro,
        kdim: usize,
        n: usize,
        bias: Option<&[f32]>,
        b: impl Fn(usize, usize) -> f32,
    ) -> Self {
        let nr = micro.nr();
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
            micro,
            panels,
            bias: padded_bias,
        }
    }

    /// The instruction set of the micro-kernel this matrix was packed for.
    pub(crate) fn isa(&self) -> Isa {
        self.micro.isa()
    }

    /// Rows of `A` handled per cache block: `A` block plus one `B` panel stay in L2.
    fn block_rows(&self) -> usize {
        (16384 / self.k.max(1)).clamp(12, 480)
    }

    /// `c[i][j] = bias[j] + sum_k a[i * lda + k] * B[k][j]` for `i < m`, `j < n`; `c` is
    /// row-major with row stride `n`.
    pub(crate) fn gemm(&self, a: &[f32], lda: usize, m: usize, c: &mut [f32]) {
        self.gemm_ep(a, lda, m, c, None);
    }

    /// [`PackedB::gemm`] with `ep` fused into the stores where [`PackedB::fuses`] says so
    /// (`(ep, offset)`: `c` is a piece of the output tensor starting at element `offset`, its
    /// rows the tensor's rows of `N` channels).
    pub(crate) fn gemm_ep(
        &self,
        a: &[f32],
        lda: usize,
        m: usize,
        c: &mut [f32],
        ep: Option<(&Epilogue, usize)>,
    ) {
        if m == 0 || self.n == 0 {
            return;
        }
        assert!(a.len() >= (m - 1) * lda + self.k, "gemm: A too short");
        debug_assert!(lda >= self.k);
        // SAFETY: row i < m reads a[i * lda..i * lda + k], inside `a` (checked above).
        unsafe { self.gemm_segmented_ep(a.as_ptr(), lda, &[0], self.k, m, c, ep) };
    }

    /// Whether the micro-kernels apply `ep` themselves (a residual and a rectifier, clamp,
    /// hard-swish or PReLU of `N` or 1 alphas; not the logistic or tanh), so that a caller
    /// passing it to `*_ep` must not apply it again.
    pub(crate) fn fuses(&self, ep: &Epilogue) -> bool {
        match ep.act {
            Act::None | Act::Relu | Act::Relu6 | Act::ReluN1To1 | Act::HardSwish => true,
            Act::Prelu(a) => a.len() == 1 || a.len() == self.n,
            Act::Logistic | Act::Tanh => false,
        }
    }

    /// The finish of panel `p` for `ep` applied at tensor element `offset` of C's first
    /// value, C's columns starting at column `col0`.
    fn finish(&self, ep: Option<(&Epilogue, usize)>, p: usize) -> Finish {
        let Some((ep, offset)) = ep else {
            return Finish::NONE;
        };
        debug_assert!(self.fuses(ep));
        let act = match ep.act {
            Act::Relu => FinishAct::Relu,
            Act::Relu6 => FinishAct::Clamp(0.0, 6.0),
            Act::ReluN1To1 => FinishAct::Clamp(-1.0, 1.0),
            Act::HardSwish => FinishAct::HardSwish,
            Act::Prelu(_) => FinishAct::Prelu,
            _ => FinishAct::None,
        };
        let mut alpha = [0.0; 64];
        if let Act::Prelu(a) = ep.act {
            for (jj, v) in alpha.iter_mut().enumerate().take(self.nr) {
                let j = p * self.nr + jj;
                if j < self.n {
                    *v = if a.len() == 1 { a[0] } else { a[j] };
                }
            }
        }
        let res = ep.residual.map_or(std::ptr::null(), |r| {
            assert!(offset <= r.len(), "gemm: residual too short");
            // SAFETY: in bounds (checked); the kernels read it where they write C.
            unsafe { r.as_ptr().add(offset) }
        });
        Finish { res, act, alpha }
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
        // SAFETY: as the caller guarantees.
        unsafe { self.gemm_segmented_ep(a, lda, segs, seg_len, m, c, None) };
    }

    /// [`PackedB::gemm_segmented`] with `ep` fused (see [`PackedB::gemm_ep`]).
    ///
    /// # Safety
    /// As [`PackedB::gemm_segmented`]; the residual of `ep`, if any, must hold `c`'s values
    /// from `offset`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn gemm_segmented_ep(
        &self,
        a: *const f32,
        lda: usize,
        segs: &[usize],
        seg_len: usize,
        m: usize,
        c: &mut [f32],
        ep: Option<(&Epilogue, usize)>,
    ) {
        if m == 0 || self.n == 0 {
            return;
        }
        assert!(c.len() >= m * self.n, "gemm: C too short");
        if let Some((ep, offset)) = ep
            && let Some(r) = ep.residual
        {
            assert!(r.len() >= offset + m * self.n, "gemm: residual too short");
        }
        let n = self.n;
        // SAFETY: `c` holds `m` rows of `n` values (checked above); A as the caller guarantees.
        unsafe { self.gemm_tile(a, lda, segs, seg_len, m, 0..n, c.as_mut_ptr(), n, ep) };
    }

    /// Columns per panel: a column range of [`PackedB::gemm_tile`] starts at a multiple of it.
    pub(crate) fn panel_cols(&self) -> usize {
        self.nr
    }

    /// Rows per micro-kernel call: row ranges that are multiples of it waste no register tile.
    pub(crate) fn tile_rows(&self) -> usize {
        self.micro.mr()
    }

    /// Like [`PackedB::gemm_segmented`] for the output columns `cols` only, written to `c`
    /// (row `i`, column `j` at `c[i * ldc + j - cols.start]`), with `ep` fused where given
    /// (`(ep, offset)`: C's first value is element `offset` of the output tensor, whose rows
    /// are `ldc` values apart, and the residual is laid out as the tensor). Each value is
    /// computed exactly as by [`PackedB::gemm`] then [`Epilogue::apply`].
    ///
    /// # Safety
    /// As [`PackedB::gemm_segmented`]; `cols.start` must be a multiple of
    /// [`PackedB::panel_cols`] and `cols.end <= N`, and `c` must be writable for `m` rows of
    /// `cols.len()` values at stride `ldc`; `ep` must be one [`PackedB::fuses`], and its
    /// residual must hold those rows and columns from `offset`.
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
        ep: Option<(&Epilogue, usize)>,
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
                let at = m0 * ldc + p * self.nr - cols.start;
                let fin = self.finish(ep.map(|(e, o)| (e, o + at)), p);
                // SAFETY: `c` holds rows m0..m0+mb of the columns (caller), and panel `p`'s
                // columns p*nr..p*nr+width lie inside `cols`; A as guaranteed by the caller;
                // the residual as C (caller).
                unsafe {
                    self.panel(
                        &tile,
                        mb,
                        bp.as_ptr(),
                        bias.as_ptr(),
                        c.add(at),
                        ldc,
                        width,
                        &fin,
                    );
                }
            }
            m0 += mb;
        }
    }

    /// One column panel for `m` rows, `fin` applied before each store.
    ///
    /// # Safety
    /// `t` must address `m` rows (see [`PackedB::gemm_segmented`]), `c` `m` rows of `cols`
    /// values at stride `ldc`, `b` a packed panel and `bias` `self.nr` values; `fin`'s residual
    /// laid out as `c`.
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
        fin: &Finish,
    ) {
        macro_rules! run_rows {
            ($kern:ident, $mr:literal, $($r:literal)*) => {{
                let mut i = 0;
                while i + $mr <= m {
                    unsafe {
                        let f = fin.offset(i * ldc);
                        $kern::<$mr>(&t.offset(i), b, bias, c.add(i * ldc), ldc, cols, &f)
                    };
                    i += $mr;
                }
                match m - i {
                    0 => {}
                    $($r => unsafe {
                        let f = fin.offset(i * ldc);
                        $kern::<$r>(&t.offset(i), b, bias, c.add(i * ldc), ldc, cols, &f)
                    },)*
                    _ => unreachable!(),
                }
            }};
        }
        match self.micro {
            #[cfg(target_arch = "x86_64")]
            Micro::Avx512 => run_rows!(kernel_avx512, 12, 1 2 3 4 5 6 7 8 9 10 11),
            #[cfg(target_arch = "x86_64")]
            Micro::Avx512Wide => {
                run_rows!(kernel_avx512_wide, 12, 1 2 3 4 5 6 7 8 9 10 11)
            }
            #[cfg(target_arch = "x86_64")]
            Micro::Avx512X48 => run_rows!(kernel_avx512_x48, 8, 1 2 3 4 5 6 7),
            #[cfg(target_arch = "x86_64")]
            Micro::Avx512X64 => run_rows!(kernel_avx512_x64, 6, 1 2 3 4 5),
            #[cfg(target_arch = "x86_64")]
            Micro::Avx2 => run_rows!(kernel_avx2, 6, 1 2 3 4 5),
            #[cfg(target_arch = "aarch64")]
            Micro::Neon => run_rows!(kernel_neon, 6, 1 2 3 4 5),
            Micro::Portable => run_rows!(kernel_portable, 4, 1 2 3),
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
    fin: &Finish,
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
            for (j, v) in row.iter().enumerate().take(cols) {
                let r = (!fin.res.is_null()).then(|| *fin.res.add(i * ldc + j));
                *c.add(i * ldc + j) = fin.scalar(*v, r, j);
            }
        }
    }
}
