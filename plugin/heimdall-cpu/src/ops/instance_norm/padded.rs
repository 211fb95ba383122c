//! The normalisation written straight into a reflect-padded image: a `PAD_REFLECT` after the
//! normalisation fused into it (`crate::fuse`), so that the padded copy costs no pass of its
//! own over the tensor.
//!
//! Each interior row is normalised into the middle of its padded row, the epilogue runs over
//! it, and its left and right borders are mirrored from it while it is in cache (rows split
//! over [`Par`]); the top and bottom rows are then mirrored from the finished interior rows.

use super::normalise::{Affine, MIN_VALUES_PER_PART, normalise_widest};
use crate::kernels::{Epilogue, Par};

/// An `h x w` image reflect-padded by `rows` (`[top, bottom]`) and `cols` (`[left, right]`),
/// each padding less than the image along its axis (`abc` -> `cb|abc|ba`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PaddedOutput {
    /// Rows of the image.
    pub h: usize,
    /// Columns of the image.
    pub w: usize,
    /// Rows mirrored above and below.
    pub rows: [usize; 2],
    /// Columns mirrored left and right.
    pub cols: [usize; 2],
}

impl PaddedOutput {
    /// Rows and columns of the padded image.
    pub fn padded_hw(&self) -> [usize; 2] {
        [
            self.h + self.rows[0] + self.rows[1],
            self.w + self.cols[0] + self.cols[1],
        ]
    }

    /// Whether every padding is less than the image along its axis.
    pub fn is_valid(&self) -> bool {
        self.rows.iter().all(|&p| p < self.h) && self.cols.iter().all(|&p| p < self.w)
    }
}

/// Mirrors the left and right borders of padded row `row` (`c` channels) from its interior.
fn mirror_columns(row: &mut [f32], p: &PaddedOutput, c: usize) {
    let [left, right] = p.cols;
    for j in 0..left {
        let src = 2 * left - j;
        row.copy_within(src * c..(src + 1) * c, j * c);
    }
    let last = left + p.w - 1;
    for j in last + 1..last + 1 + right {
        let src = 2 * last - j;
        row.copy_within(src * c..(src + 1) * c, j * c);
    }
}

/// The normalisation of `input [h * w, c]` by `map` into the padded image `output`, border
/// included.
pub(super) fn normalise_padded(
    par: &Par,
    input: &[f32],
    c: usize,
    map: &Affine,
    ep: &Epilogue,
    p: PaddedOutput,
    output: &mut [f32],
) {
    assert!(p.is_valid(), "reflect padding {p:?} reaches past the image");
    let [ph, pw] = p.padded_hw();
    let (row, x_row) = (pw * c, p.w * c);
    assert_eq!(output.len(), ph * row, "padded output of {p:?}");
    assert_eq!(input.len(), p.h * x_row, "input of {p:?}");
    let top = p.rows[0];
    par.for_rows(
        output,
        row,
        MIN_VALUES_PER_PART.div_ceil(row),
        |rows, out| {
            for (r, dst) in rows.zip(out.chunks_exact_mut(row)) {
                let Some(y) = r.checked_sub(top).filter(|&y| y < p.h) else {
                    continue;
                };
                let offset = y * x_row;
                let o = &mut dst[p.cols[0] * c..p.cols[0] * c + x_row];
                let (m, k, a) = map.at(offset);
                normalise_widest(&input[offset..offset + x_row], o, m, k, a);
                if !ep.is_identity() {
                    ep.apply(o, offset, c);
                }
                mirror_columns(dst, &p, c);
            }
        },
    );
    let last = top + p.h - 1;
    for r in (0..top).chain(last + 1..ph) {
        let src = if r < top { 2 * top - r } else { 2 * last - r };
        output.copy_within(src * row..(src + 1) * row, r * row);
    }
}
