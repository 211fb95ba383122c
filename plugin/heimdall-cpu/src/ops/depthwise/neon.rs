//! The NEON depthwise kernels: one output row's pixels, channels in vectors of 4 (the last
//! `c % 4` channels one at a time), 8 or 4 pixels at a time with one accumulator each, or one
//! pixel with four vectors at once. At strides 1 and 2 without dilation each input vector of a
//! filter row is loaded once for all the pixels whose window covers it. Every value is summed
//! as `bias + taps in (ky, kx) order` with fused multiply-adds, as on AVX-512 (the same bits).

use std::arch::aarch64::*;

use super::DwRow;

impl DwRow {
    /// The channels computed in vectors: `chans.start..vec_end`, then `vec_end..chans.end`
    /// one at a time.
    fn vec_end(&self) -> usize {
        self.chans.start + (self.chans.len() / 4) * 4
    }

    /// Where channel `ch` of pixel `ox` is stored.
    ///
    /// # Safety
    /// `ox` and `ch` must be a pixel and channel of this row piece.
    #[inline(always)]
    unsafe fn at(&self, ox: usize, ch: usize) -> *mut f32 {
        // SAFETY: guaranteed by the caller.
        unsafe {
            self.out
                .add((ox - self.ox0) * self.out_stride + ch - self.chans.start)
        }
    }

    /// The channels after the last whole vector of pixel `ox` (horizontal taps
    /// `kx_lo..kx_hi` valid), one fused multiply-add at a time in the same order.
    ///
    /// # Safety
    /// As [`DwRow::pixels_neon`] for one pixel.
    #[inline(always)]
    unsafe fn tail(&self, ox: usize, kx_lo: usize, kx_hi: usize, bias: *const f32) {
        let c = self.c;
        // SAFETY: guaranteed by the caller.
        unsafe {
            for ch in self.vec_end()..self.chans.end {
                let mut acc = *bias.add(ch);
                for j in 0..self.nky {
                    for kx in kx_lo..kx_hi {
                        let ix = ox * self.sw + kx * self.dw - self.pl;
                        let x = *self.rows[j].add(ix * c + ch);
                        acc = x.mul_add(*self.wrows[j].add(kx * c + ch), acc);
                    }
                }
                *self.at(ox, ch) = acc;
            }
        }
    }

    /// Output pixels `ox..ox + NX` of a `K`-wide filter at stride `S`, no dilation, every
    /// tap valid: each input vector of a filter row is loaded once and fed to every pixel
    /// whose window covers it.
    ///
    /// # Safety
    /// As [`DwRow::pixels_neon`] with every tap `0..K` valid, `stride_w == S`, `dil_w == 1`.
    #[target_feature(enable = "neon")]
    #[inline]
    pub(super) unsafe fn pixels_slide_neon<const NX: usize, const K: usize, const S: usize>(
        &self,
        ox: usize,
        bias: *const f32,
    ) {
        let c = self.c;
        // SAFETY: guaranteed by the caller.
        unsafe {
            let mut ch = self.chans.start;
            while ch < self.vec_end() {
                let bv = vld1q_f32(bias.add(ch));
                let mut acc = [bv; NX];
                for j in 0..self.nky {
                    let base = self.rows[j].add((ox * S - self.pl) * c + ch);
                    let wrow = self.wrows[j].add(ch);
                    let mut f = [bv; K];
                    for (kx, fk) in f.iter_mut().enumerate() {
                        *fk = vld1q_f32(wrow.add(kx * c));
                    }
                    for t in 0..(NX - 1) * S + K {
                        let x = vld1q_f32(base.add(t * c));
                        for (i, a) in acc.iter_mut().enumerate() {
                            if t >= i * S && t - i * S < K {
                                *a = vfmaq_f32(*a, x, f[t - i * S]);
                            }
                        }
                    }
                }
                for (i, a) in acc.iter().enumerate() {
                    vst1q_f32(self.at(ox + i, ch), *a);
                }
                ch += 4;
            }
            for i in 0..NX {
                self.tail(ox + i, 0, K, bias);
            }
        }
    }

    /// Output pixels `ox..ox + NX` (all with horizontal taps `kx_lo..kx_hi` valid), one
    /// accumulator per pixel and vector of 4 channels.
    ///
    /// # Safety
    /// NEON; the taps must be valid for every pixel and the pixels lie inside this row piece
    /// (the struct's `out`, `ox0`, `out_stride`, `chans`).
    #[target_feature(enable = "neon")]
    #[inline]
    pub(super) unsafe fn pixels_neon<const NX: usize>(
        &self,
        ox: usize,
        kx_lo: usize,
        kx_hi: usize,
        bias: *const f32,
    ) {
        let c = self.c;
        // SAFETY: guaranteed by the caller.
        unsafe {
            let mut ch = self.chans.start;
            while ch < self.vec_end() {
                let mut acc = [vld1q_f32(bias.add(ch)); NX];
                for j in 0..self.nky {
                    let row = self.rows[j].add(ch);
                    let wrow = self.wrows[j].add(ch);
                    for kx in kx_lo..kx_hi {
                        let f = vld1q_f32(wrow.add(kx * c));
                        let ix0 = ox * self.sw + kx * self.dw - self.pl;
                        for (i, a) in acc.iter_mut().enumerate() {
                            let x = vld1q_f32(row.add((ix0 + i * self.sw) * c));
                            *a = vfmaq_f32(*a, x, f);
                        }
                    }
                }
                for (i, a) in acc.iter().enumerate() {
                    vst1q_f32(self.at(ox + i, ch), *a);
                }
                ch += 4;
            }
            for i in 0..NX {
                self.tail(ox + i, kx_lo, kx_hi, bias);
            }
        }
    }

    /// One output pixel `ox` (horizontal taps `kx_lo..kx_hi` valid), four vectors of channels
    /// at a time (independent chains of multiply-adds), then single vectors and the tail.
    ///
    /// # Safety
    /// As [`DwRow::pixels_neon`] for `NX = 1`.
    #[target_feature(enable = "neon")]
    #[inline]
    pub(super) unsafe fn pixel_neon(
        &self,
        ox: usize,
        kx_lo: usize,
        kx_hi: usize,
        bias: *const f32,
    ) {
        // SAFETY: guaranteed by the caller.
        unsafe {
            let mut ch = self.chans.start;
            while ch + 16 <= self.vec_end() {
                self.pixel_vectors::<4>(ox, kx_lo, kx_hi, bias, ch);
                ch += 16;
            }
            while ch < self.vec_end() {
                self.pixel_vectors::<1>(ox, kx_lo, kx_hi, bias, ch);
                ch += 4;
            }
            self.tail(ox, kx_lo, kx_hi, bias);
        }
    }

    /// Channels `ch0..ch0 + 4 * NV` of output pixel `ox`, taps summed in `(ky, kx)` order.
    ///
    /// # Safety
    /// As [`DwRow::pixels_neon`] for `NX = 1`; `ch0 + 4 * NV <= self.vec_end()`.
    #[target_feature(enable = "neon")]
    #[inline]
    unsafe fn pixel_vectors<const NV: usize>(
        &self,
        ox: usize,
        kx_lo: usize,
        kx_hi: usize,
        bias: *const f32,
        ch0: usize,
    ) {
        let c = self.c;
        // SAFETY: guaranteed by the caller.
        unsafe {
            let mut acc: [float32x4_t; NV] =
                std::array::from_fn(|i| vld1q_f32(bias.add(ch0 + 4 * i)));
            for j in 0..self.nky {
                let row = self.rows[j].add(ch0);
                let wrow = self.wrows[j].add(ch0);
                for kx in kx_lo..kx_hi {
                    let ix = ox * self.sw + kx * self.dw - self.pl;
                    let (f, x) = (wrow.add(kx * c), row.add(ix * c));
                    for (i, a) in acc.iter_mut().enumerate() {
                        *a = vfmaq_f32(*a, vld1q_f32(x.add(4 * i)), vld1q_f32(f.add(4 * i)));
                    }
                }
            }
            let out = self.at(ox, ch0);
            for (i, a) in acc.iter().enumerate() {
                vst1q_f32(out.add(4 * i), *a);
            }
        }
    }
}
