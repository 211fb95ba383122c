//! STRIDED_SLICE with resolved per-axis begin, end and stride: exact copies, rank at most 4.
//!
//! Dispatch: [`prepare`] turns the IR's begin/stride/count into begin/end/stride.

use heimdall_ir::StridedSliceAttrs;

use crate::kernels::nd::dims4;
use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

/// Number of elements of a resolved slice `begin, begin + stride, ...` stopping before `end`
/// (exclusive; `end` may be `-1` for a negative stride running down to index 0).
pub fn strided_slice_len(begin: isize, end: isize, stride: isize) -> usize {
    debug_assert!(stride != 0);
    if stride > 0 {
        if end > begin {
            (end - begin).div_euclid(stride) as usize + usize::from((end - begin) % stride != 0)
        } else {
            0
        }
    } else if begin > end {
        let s = -stride;
        (begin - end).div_euclid(s) as usize + usize::from((begin - end) % s != 0)
    } else {
        0
    }
}

/// TFLite STRIDED_SLICE with resolved per-axis `begin` (a valid index), `end` (exclusive) and
/// non-zero `strides` (positive or negative), rank <= 4; `output` holds
/// `prod(strided_slice_len(begin[d], end[d], strides[d]))` values.
pub fn strided_slice(
    input: &[f32],
    in_shape: &[usize],
    begin: &[isize],
    end: &[isize],
    strides: &[isize],
    output: &mut [f32],
) {
    let rank = in_shape.len();
    debug_assert!(rank <= 4 && begin.len() == rank && end.len() == rank && strides.len() == rank);
    let ind = dims4(in_shape);
    let mut b = [0isize; 4];
    let mut s = [1isize; 4];
    let mut n = [1usize; 4];
    for d in 0..rank {
        let d4 = 4 - rank + d;
        b[d4] = begin[d];
        s[d4] = strides[d];
        n[d4] = strided_slice_len(begin[d], end[d], strides[d]);
    }
    debug_assert_eq!(output.len(), n.iter().product::<usize>());
    let istr = [ind[1] * ind[2] * ind[3], ind[2] * ind[3], ind[3], 1];
    let mut o = 0;
    for i0 in 0..n[0] {
        let p0 = (b[0] + i0 as isize * s[0]) as usize * istr[0];
        for i1 in 0..n[1] {
            let p1 = p0 + (b[1] + i1 as isize * s[1]) as usize * istr[1];
            for i2 in 0..n[2] {
                let p2 = p1 + (b[2] + i2 as isize * s[2]) as usize * istr[2];
                if s[3] == 1 {
                    let start = p2 + b[3] as usize;
                    output[o..o + n[3]].copy_from_slice(&input[start..start + n[3]]);
                } else {
                    for (i3, out) in output[o..o + n[3]].iter_mut().enumerate() {
                        *out = input[p2 + (b[3] + i3 as isize * s[3]) as usize];
                    }
                }
                o += n[3];
            }
        }
    }
}

/// A slice of an input of known shape.
struct Slice {
    shape: Vec<usize>,
    begin: Vec<isize>,
    end: Vec<isize>,
    stride: Vec<isize>,
}

impl Kernel for Slice {
    fn run(&self, io: StepIo<'_>) {
        let i = io.inputs.get(0);
        strided_slice(i, &self.shape, &self.begin, &self.end, &self.stride, io.out);
    }
}

/// Prepares a STRIDED_SLICE.
pub(crate) fn prepare(cx: &PrepareCx, a: &StridedSliceAttrs) -> Result<Prepared, String> {
    let end = a
        .begin
        .iter()
        .zip(&a.stride)
        .zip(&a.count)
        .map(|((&b, &s), &n)| (b + s * n as i64) as isize)
        .collect();
    Ok(Prepared::new(Slice {
        shape: cx.shape(0),
        begin: a.begin.iter().map(|&b| b as isize).collect(),
        end,
        stride: a.stride.iter().map(|&s| s as isize).collect(),
    }))
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // naive references index on purpose
mod tests {
    use super::*;
    use crate::kernels::testutil::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn strided_slice_matches_reference(shape in proptest::collection::vec(1..6usize, 1..=4), picks in proptest::collection::vec((0..6usize, 0..7usize, -3..4isize), 4), seed in 0u64..1000) {
            let rank = shape.len();
            let mut begin = vec![]; let mut end = vec![]; let mut strides = vec![];
            for d in 0..rank {
                let (b, e, s) = picks[d];
                let s = if s == 0 { 1 } else { s };
                let b = (b % shape[d]) as isize;
                // exclusive end in -1..=dim
                let e = (e % (shape[d] + 2)) as isize - 1;
                begin.push(b); end.push(e); strides.push(s);
            }
            let lens: Vec<usize> = (0..rank).map(|d| strided_slice_len(begin[d], end[d], strides[d])).collect();
            // Reference: walk each axis with a while loop.
            let idx: Vec<Vec<usize>> = (0..rank).map(|d| {
                let mut v = vec![]; let mut i = begin[d];
                while (strides[d] > 0 && i < end[d]) || (strides[d] < 0 && i > end[d]) { v.push(i as usize); i += strides[d]; }
                v
            }).collect();
            prop_assert_eq!(idx.iter().map(Vec::len).collect::<Vec<_>>(), lens.clone());
            let input = data(seed, shape.iter().product());
            let total: usize = lens.iter().product();
            let reference: Vec<f32> = (0..total).map(|i| {
                let c = coords(i, &lens);
                let src: Vec<usize> = (0..rank).map(|d| idx[d][c[d]]).collect();
                input[flat(&src, &shape)]
            }).collect();
            let mut out = vec![f32::NAN; total];
            strided_slice(&input, &shape, &begin, &end, &strides, &mut out);
            prop_assert_eq!(out, reference);
        }
    }
}
