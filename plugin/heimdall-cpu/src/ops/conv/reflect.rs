//! Reflect padding of a convolution that took over the `PAD_REFLECT` before it.
//!
//! The output rows of a part read a ring of padded rows (in the caller's scratch): the rows a
//! window spans, each an input row mirrored at the top or bottom, copied whole and mirrored at
//! its left and right ends. The next output row loads only the rows its window adds (one per
//! stride). Every pixel of a row is then an interior pixel of the ring: one segmented product
//! over the whole row whose segments point at the ring's rows, exactly the one the unfused
//! convolution runs over the padded tensor (the same taps in the same order, so the same bits),
//! for the price of copying each input row about once instead of writing and reading a padded
//! copy of the whole tensor.

use std::ops::Range;

use crate::kernels::gemm::PackedB;
use crate::kernels::{Epilogue, Window};

/// Segments of a window at most (its rows, or its taps with a horizontal dilation) for which
/// the ring's segment offsets fit on the stack; a window with more (never seen in practice)
/// loads its rows into the ring anew for each output row.
const MAX_SEGS: usize = 256;

/// The padded rows the output rows of a reflect-padded convolution read.
#[derive(Clone, Debug)]
pub(super) struct Band {
    /// Columns of a padded row: the left padding, the input's width, the right padding.
    width: usize,
    /// Offsets of the window's contiguous runs when its `k_h` rows are loaded in order, one
    /// per ring row (the fallback of a window of more than [`MAX_SEGS`] segments).
    segs: Vec<usize>,
}

/// Index `i` (a padded index minus the padding, wrapped below zero) of an axis of `n` values,
/// mirrored at the axis' ends without repeating them (`-1 -> 1`, `n -> n - 2`); right for
/// indices less than `n` outside the axis.
#[inline(always)]
fn mirror(i: usize, n: usize) -> usize {
    let (i, n) = (i as isize, n as isize);
    (if i < 0 {
        -i
    } else if i >= n {
        2 * (n - 1) - i
    } else {
        i
    }) as usize
}

/// Padded rows a window spans.
fn span(w: &Window) -> usize {
    (w.k_h - 1) * w.dil_h + 1
}

impl Band {
    /// The band of geometry `w`, whose padding (`pad_top`, `pad_left`, and after the input what
    /// the output size implies) must be less than the input along each axis.
    pub(super) fn new(w: &Window) -> Band {
        let width = Band::width(w);
        let bottom =
            ((w.out_h.max(1) - 1) * w.stride_h + span(w)).saturating_sub(w.pad_top + w.in_h);
        let right = width.saturating_sub(w.pad_left + w.in_w);
        assert!(
            w.out_h * w.out_w == 0
                || w.pad_top.max(bottom) < w.in_h && w.pad_left.max(right) < w.in_w,
            "reflect padding of {w:?} reaches past the mirrored input"
        );
        let row = width * w.in_c;
        let segs = (0..w.k_h)
            .flat_map(|ky| Band::row_segs(w, ky * row))
            .collect();
        Band { width, segs }
    }

    /// The segments of one window row loaded at `at`: the row's run, or with a horizontal
    /// dilation its taps.
    fn row_segs(w: &Window, at: usize) -> impl Iterator<Item = usize> + '_ {
        let taps = if w.dil_w == 1 { 1 } else { w.k_w };
        (0..taps).map(move |kx| at + kx * w.dil_w * w.in_c)
    }

    /// Padded columns the output's pixels read.
    fn width(w: &Window) -> usize {
        (w.out_w.max(1) - 1) * w.stride_w + (w.k_w - 1) * w.dil_w + 1
    }

    /// Values of the ring of geometry `w` (the rows a window spans).
    pub(super) fn len(w: &Window) -> usize {
        span(w) * Band::width(w) * w.in_c
    }

    /// Padded row `r` (of the padded tensor the convolution reads) into `dst`.
    fn load(&self, w: &Window, input: &[f32], r: usize, dst: &mut [f32]) {
        let c = w.in_c;
        let in_row = w.in_w * c;
        let iy = mirror(r.wrapping_sub(w.pad_top), w.in_h);
        let src = &input[iy * in_row..(iy + 1) * in_row];
        // Columns of the input the band holds (all but those past its last tap, at a stride
        // that skips them), then the mirrored ones.
        let left = w.pad_left.min(self.width);
        let inside = (self.width - left).min(w.in_w);
        dst[left * c..(left + inside) * c].copy_from_slice(&src[..inside * c]);
        for j in (0..left).chain(left + inside..self.width) {
            let ix = mirror(j.wrapping_sub(w.pad_left), w.in_w);
            dst[j * c..(j + 1) * c].copy_from_slice(&src[ix * c..(ix + 1) * c]);
        }
    }

    /// Output rows `rows` of the convolution of window `w` and packed weights `b` (segments of
    /// `seg_len` values) into `out` (those rows, in order), then `ep` over each, through a ring
    /// in `scratch` (at least [`Band::len`] values).
    pub(super) fn rows(
        &self,
        (w, b, seg_len): (&Window, &PackedB, usize),
        input: &[f32],
        rows: Range<usize>,
        out: &mut [f32],
        scratch: &mut [f32],
        ep: &Epilogue,
    ) {
        let (c, n) = (w.in_c, w.out_c);
        let (row, row_len, span) = (self.width * c, w.out_w * n, span(w));
        let ring_fits = self.segs.len() <= MAX_SEGS;
        let ring = &mut scratch[..span * row];
        let mut segs = [0usize; MAX_SEGS];
        // Padded rows `loaded` (the last window's) are in the ring, row `r` at slot `r % span`.
        let mut loaded = 0..0;
        for (oy, out_row) in rows.zip(out.chunks_exact_mut(row_len)) {
            let top = oy * w.stride_h;
            let segs: &[usize] = if ring_fits {
                // Rows go down: the rows of the last window from `top` on are still there.
                let kept = loaded.start <= top && top <= loaded.end;
                for r in if kept { loaded.end } else { top }..top + span {
                    self.load(w, input, r, &mut ring[(r % span) * row..][..row]);
                }
                loaded = top..top + span;
                let at = (0..w.k_h)
                    .flat_map(|ky| Band::row_segs(w, ((top + ky * w.dil_h) % span) * row));
                for (s, a) in segs.iter_mut().zip(at) {
                    *s = a;
                }
                &segs[..self.segs.len()]
            } else {
                for ky in 0..w.k_h {
                    let r = top + ky * w.dil_h;
                    self.load(w, input, r, &mut ring[ky * row..][..row]);
                }
                &self.segs
            };
            // SAFETY: the ring holds `span` rows of `width` pixels and the segments point at
            // the window's rows in it; pixel `x < out_w` of the row reads columns
            // `x * stride_w + kx * dil_w < width` of each, so every segment of every pixel lies
            // in the ring.
            unsafe {
                b.gemm_segmented(
                    ring.as_ptr(),
                    w.stride_w * c,
                    segs,
                    seg_len,
                    w.out_w,
                    out_row,
                );
            }
            if !ep.is_identity() {
                ep.apply(out_row, oy * row_len, n);
            }
        }
    }
}
