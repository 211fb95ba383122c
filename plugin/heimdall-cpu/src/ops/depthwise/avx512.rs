//! The AVX-512 depthwise kernels: one output row's pixels (8, 4 or 1 at a time; one pixel with
//! four channel blocks at once), every value summed as `bias + taps in (ky, kx) order`.

use super::DwRow;

impl DwRow {
    /// [`DwRow::pixels_k`] for stride `S` and no dilation, loading each input vector of a
    /// filter row once and feeding it to every pixel whose window covers it (each pixel still
    /// sums its taps in `(ky, kx)` order).
    ///
    /// # Safety
    /// As [`DwRow::pixels`] with every tap `0..K` valid, `stride_w == S`, `dil_w == 1`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(super) unsafe fn pixels_slide<const NX: usize, const K: usize, const S: usize>(
        &self,
        ox: usize,
        bias: *const f32,
    ) {
        use std::arch::x86_64::*;
        let c = self.c;
        let blocks = c.div_ceil(16);
        let tail: __mmask16 = if c.is_multiple_of(16) {
            0xFFFF
        } else {
            ((1u32 << (c % 16)) - 1) as __mmask16
        };
        // SAFETY: guaranteed by the caller.
        unsafe {
            for b in self.blocks.clone() {
                let mask = if b + 1 == blocks { tail } else { 0xFFFF };
                let off = b * 16;
                let out = self.out.add((b - self.blocks.start) * 16);
                let bv = _mm512_maskz_loadu_ps(mask, bias.add(off));
                let mut acc = [bv; NX];
                for j in 0..self.nky {
                    let base = self.rows[j].add((ox * S - self.pl) * c + off);
                    let wrow = self.wrows[j].add(off);
                    let mut f = [bv; K];
                    for (kx, fk) in f.iter_mut().enumerate() {
                        *fk = _mm512_maskz_loadu_ps(mask, wrow.add(kx * c));
                    }
                    for t in 0..(NX - 1) * S + K {
                        let x = _mm512_maskz_loadu_ps(mask, base.add(t * c));
                        for (i, a) in acc.iter_mut().enumerate() {
                            if t >= i * S && t - i * S < K {
                                *a = _mm512_fmadd_ps(x, f[t - i * S], *a);
                            }
                        }
                    }
                }
                for (i, a) in acc.iter().enumerate() {
                    _mm512_mask_storeu_ps(out.add((ox - self.ox0 + i) * self.out_stride), mask, *a);
                }
            }
        }
    }

    /// [`DwRow::pixels`] for interior pixels of a `K`-wide filter, taps unrolled.
    ///
    /// # Safety
    /// As [`DwRow::pixels`] with every tap `0..K` valid.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(super) unsafe fn pixels_k<const NX: usize, const K: usize>(
        &self,
        ox: usize,
        bias: *const f32,
    ) {
        use std::arch::x86_64::*;
        let c = self.c;
        let blocks = c.div_ceil(16);
        let tail: __mmask16 = if c.is_multiple_of(16) {
            0xFFFF
        } else {
            ((1u32 << (c % 16)) - 1) as __mmask16
        };
        let step = self.sw * c;
        let tap_step = self.dw * c;
        // SAFETY: guaranteed by the caller.
        unsafe {
            for b in self.blocks.clone() {
                let mask = if b + 1 == blocks { tail } else { 0xFFFF };
                let off = b * 16;
                let out = self.out.add((b - self.blocks.start) * 16);
                let bv = _mm512_maskz_loadu_ps(mask, bias.add(off));
                let mut acc = [bv; NX];
                for j in 0..self.nky {
                    let base = self.rows[j].add((ox * self.sw - self.pl) * c + off);
                    let wrow = self.wrows[j].add(off);
                    for kx in 0..K {
                        let f = _mm512_maskz_loadu_ps(mask, wrow.add(kx * c));
                        let p = base.add(kx * tap_step);
                        for (i, a) in acc.iter_mut().enumerate() {
                            let x = _mm512_maskz_loadu_ps(mask, p.add(i * step));
                            *a = _mm512_fmadd_ps(x, f, *a);
                        }
                    }
                }
                for (i, a) in acc.iter().enumerate() {
                    _mm512_mask_storeu_ps(out.add((ox - self.ox0 + i) * self.out_stride), mask, *a);
                }
            }
        }
    }

    /// One output pixel `ox` (horizontal taps `kx_lo..kx_hi` valid), four channel blocks at a
    /// time: with one pixel, independent accumulators come from the channels (one chain of
    /// fused multiply-adds per block would wait on its latency). Same sums as
    /// [`DwRow::pixels`]`::<1>`.
    ///
    /// # Safety
    /// As [`DwRow::pixels`] for `NX = 1`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(super) unsafe fn pixel(&self, ox: usize, kx_lo: usize, kx_hi: usize, bias: *const f32) {
        let mut b = self.blocks.start;
        // SAFETY: guaranteed by the caller; every block is inside `self.blocks`.
        unsafe {
            while b + 4 <= self.blocks.end {
                self.pixel_blocks::<4>(ox, kx_lo, kx_hi, bias, b);
                b += 4;
            }
            while b < self.blocks.end {
                self.pixel_blocks::<1>(ox, kx_lo, kx_hi, bias, b);
                b += 1;
            }
        }
    }

    /// Channel blocks `b0..b0 + NB` of output pixel `ox`, taps summed in `(ky, kx)` order.
    ///
    /// # Safety
    /// As [`DwRow::pixels`] for `NX = 1`; `b0 + NB <= self.blocks.end`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn pixel_blocks<const NB: usize>(
        &self,
        ox: usize,
        kx_lo: usize,
        kx_hi: usize,
        bias: *const f32,
        b0: usize,
    ) {
        use std::arch::x86_64::*;
        let c = self.c;
        let blocks = c.div_ceil(16);
        let tail: __mmask16 = if c.is_multiple_of(16) {
            0xFFFF
        } else {
            ((1u32 << (c % 16)) - 1) as __mmask16
        };
        let mask: [__mmask16; NB] =
            std::array::from_fn(|i| if b0 + i + 1 == blocks { tail } else { 0xFFFF });
        let off0 = b0 * 16;
        // SAFETY: guaranteed by the caller.
        unsafe {
            let out = self
                .out
                .add((b0 - self.blocks.start) * 16 + (ox - self.ox0) * self.out_stride);
            let mut acc: [__m512; NB] =
                std::array::from_fn(|i| _mm512_maskz_loadu_ps(mask[i], bias.add(off0 + i * 16)));
            for j in 0..self.nky {
                let row = self.rows[j].add(off0);
                let wrow = self.wrows[j].add(off0);
                for kx in kx_lo..kx_hi {
                    let ix = ox * self.sw + kx * self.dw - self.pl;
                    let (f, x) = (wrow.add(kx * c), row.add(ix * c));
                    for (i, a) in acc.iter_mut().enumerate() {
                        let fv = _mm512_maskz_loadu_ps(mask[i], f.add(i * 16));
                        let xv = _mm512_maskz_loadu_ps(mask[i], x.add(i * 16));
                        *a = _mm512_fmadd_ps(xv, fv, *a);
                    }
                }
            }
            for (i, a) in acc.iter().enumerate() {
                _mm512_mask_storeu_ps(out.add(i * 16), mask[i], *a);
            }
        }
    }

    /// Computes output pixels `ox..ox + NX` (all with horizontal taps `kx_lo..kx_hi` valid),
    /// NX independent accumulators per 16-channel block; taps summed in `(ky, kx)` order.
    ///
    /// # Safety
    /// AVX-512F; the taps must be valid for every pixel and the output pointer must address
    /// pixels `ox..ox + NX` (the struct's `out`, `ox0`, `out_stride`).
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(super) unsafe fn pixels<const NX: usize>(
        &self,
        ox: usize,
        kx_lo: usize,
        kx_hi: usize,
        bias: *const f32,
    ) {
        use std::arch::x86_64::*;
        let c = self.c;
        let blocks = c.div_ceil(16);
        let tail: __mmask16 = if c.is_multiple_of(16) {
            0xFFFF
        } else {
            ((1u32 << (c % 16)) - 1) as __mmask16
        };
        // SAFETY: guaranteed by the caller.
        unsafe {
            for b in self.blocks.clone() {
                let mask = if b + 1 == blocks { tail } else { 0xFFFF };
                let off = b * 16;
                let out = self.out.add((b - self.blocks.start) * 16);
                let bv = _mm512_maskz_loadu_ps(mask, bias.add(off));
                let mut acc = [bv; NX];
                for j in 0..self.nky {
                    let row = self.rows[j].add(off);
                    let wrow = self.wrows[j].add(off);
                    for kx in kx_lo..kx_hi {
                        let f = _mm512_maskz_loadu_ps(mask, wrow.add(kx * c));
                        let ix0 = ox * self.sw + kx * self.dw - self.pl;
                        for (i, a) in acc.iter_mut().enumerate() {
                            let x = _mm512_maskz_loadu_ps(mask, row.add((ix0 + i * self.sw) * c));
                            *a = _mm512_fmadd_ps(x, f, *a);
                        }
                    }
                }
                for (i, a) in acc.iter().enumerate() {
                    _mm512_mask_storeu_ps(out.add((ox - self.ox0 + i) * self.out_stride), mask, *a);
                }
            }
        }
    }
}
