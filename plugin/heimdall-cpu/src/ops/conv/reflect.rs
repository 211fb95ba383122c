//! Reflect padding of a convolution that took over the `PAD_REFLECT` before it.
//!
//! Each output row reads the `k_h` input rows of its window, mirrored at the top and bottom,
//! each copied whole into a band of padded rows (in the caller's scratch) and mirrored at its
//! left and right ends. Every pixel of the row is then an interior pixel of the band: one
//! segmented product over the whole row, exactly the one the unfused convolution runs over the
//! padded tensor (the same taps in the same order, so the same bits), for the price of copying
//! `k_h` rows of the input per output row instead of writing and reading a padded copy of the
//! whole tensor.

use super::PackedConv;
use crate::kernels::Window;

/// The band of padded rows one output row of a reflect-padded convolution reads.
#[derive(Clone, Debug)]
pub(super) struct Band {
    /// Columns of a padded row: the left padding, the input's width, the right padding.
    width: usize,
    /// Offsets in the band of the window's contiguous runs (as `PackedConv::segs` in the
    /// input).
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

impl Band {
    /// The band of geometry `w`, whose padding (`pad_top`, `pad_left`, and after the input what
    /// the output size implies) must be less than the input along each axis.
    pub(super) fn new(w: &Window) -> Band {
        let width = Band::width(w);
        let bottom = ((w.out_h.max(1) - 1) * w.stride_h + (w.k_h - 1) * w.dil_h + 1)
            .saturating_sub(w.pad_top + w.in_h);
        let right = width.saturating_sub(w.pad_left + w.in_w);
        assert!(
            w.out_h * w.out_w == 0
                || w.pad_top.max(bottom) < w.in_h && w.pad_left.max(right) < w.in_w,
            "reflect padding of {w:?} reaches past the mirrored input"
        );
        let row = width * w.in_c;
        let segs = if w.dil_w == 1 {
            (0..w.k_h).map(|ky| ky * row).collect()
        } else {
            (0..w.k_h)
                .flat_map(|ky| (0..w.k_w).map(move |kx| ky * row + kx * w.dil_w * w.in_c))
                .collect()
        };
        Band { width, segs }
    }

    /// Padded columns the output's pixels read.
    fn width(w: &Window) -> usize {
        (w.out_w.max(1) - 1) * w.stride_w + (w.k_w - 1) * w.dil_w + 1
    }

    /// Values of a band of geometry `w`.
    pub(super) fn len(w: &Window) -> usize {
        w.k_h * Band::width(w) * w.in_c
    }

    /// Output row `oy` of `conv` into `out_row`, through a band in `scratch` (at least
    /// [`Band::len`] values).
    pub(super) fn row(
        &self,
        conv: &PackedConv,
        input: &[f32],
        oy: usize,
        out_row: &mut [f32],
        scratch: &mut [f32],
    ) {
        let w = &conv.w;
        let c = w.in_c;
        let (in_row, row) = (w.in_w * c, self.width * c);
        let band = &mut scratch[..w.k_h * row];
        for (ky, dst) in band.chunks_exact_mut(row).enumerate() {
            let iy = mirror(
                (oy * w.stride_h + ky * w.dil_h).wrapping_sub(w.pad_top),
                w.in_h,
            );
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
        // SAFETY: the band holds `k_h` rows of `width` pixels; pixel `x < out_w` of the row
        // reads columns `x * stride_w + kx * dil_w < width` of each, so every segment of every
        // pixel lies in the band.
        unsafe {
            conv.b.gemm_segmented(
                band.as_ptr(),
                w.stride_w * c,
                &self.segs,
                conv.seg_len,
                w.out_w,
                out_row,
            );
        }
    }
}
