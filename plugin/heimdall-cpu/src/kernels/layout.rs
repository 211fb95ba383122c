//! Data movement (TFLite PAD, CONCATENATION, DEPTH_TO_SPACE, STRIDED_SLICE, RESHAPE): exact
//! copies, no arithmetic. Shapes have rank at most 4; lower ranks are right-aligned.

/// Right-aligns `shape` into rank 4.
fn dims4(shape: &[usize]) -> [usize; 4] {
    debug_assert!(shape.len() <= 4);
    let mut d = [1usize; 4];
    d[4 - shape.len()..].copy_from_slice(shape);
    d
}

/// `output = input`, e.g. for RESHAPE.
pub fn copy(input: &[f32], output: &mut [f32]) {
    output.copy_from_slice(input);
}

/// Pads `input` (shape `in_shape`) with `value`: `pads[d] = (before, after)` along dimension
/// `d`. The output shape is `in_shape[d] + before + after`.
pub fn pad(
    input: &[f32],
    in_shape: &[usize],
    pads: &[(usize, usize)],
    value: f32,
    output: &mut [f32],
) {
    debug_assert_eq!(in_shape.len(), pads.len());
    let ind = dims4(in_shape);
    let mut p = [(0usize, 0usize); 4];
    p[4 - pads.len()..].copy_from_slice(pads);
    let od: [usize; 4] = std::array::from_fn(|d| ind[d] + p[d].0 + p[d].1);
    debug_assert_eq!(output.len(), od.iter().product::<usize>());
    let row = od[3];
    if row == 0 {
        return;
    }
    let (left, inner) = (p[3].0, ind[3]);
    for (r, out_row) in output.chunks_exact_mut(row).enumerate() {
        let o2 = r % od[2];
        let o1 = (r / od[2]) % od[1];
        let o0 = r / (od[2] * od[1]);
        let inside = |o: usize, d: usize| o >= p[d].0 && o - p[d].0 < ind[d];
        if !(inside(o0, 0) && inside(o1, 1) && inside(o2, 2)) {
            out_row.fill(value);
            continue;
        }
        let src_row = (((o0 - p[0].0) * ind[1] + (o1 - p[1].0)) * ind[2]) + (o2 - p[2].0);
        out_row[..left].fill(value);
        out_row[left..left + inner].copy_from_slice(&input[src_row * inner..(src_row + 1) * inner]);
        out_row[left + inner..].fill(value);
    }
}

/// Concatenates `inputs` (each a tensor and its shape, all of one rank, equal except along
/// `axis`) along `axis` into `output`.
pub fn concat(inputs: &[(&[f32], &[usize])], axis: usize, output: &mut [f32]) {
    let Some((_, first)) = inputs.first() else {
        return;
    };
    debug_assert!(axis < first.len());
    let outer: usize = first[..axis].iter().product();
    let mut o = 0;
    for i in 0..outer {
        for (data, shape) in inputs {
            let chunk: usize = shape[axis..].iter().product();
            output[o..o + chunk].copy_from_slice(&data[i * chunk..(i + 1) * chunk]);
            o += chunk;
        }
    }
    debug_assert_eq!(o, output.len());
}

/// TFLite DEPTH_TO_SPACE (DCR order): input `[h, w, c]` to output `[h * block, w * block,
/// c / (block * block)]`, `out[y * block + by, x * block + bx, oc] = in[y, x, (by * block + bx)
/// * (c / block^2) + oc]`.
pub fn depth_to_space(
    input: &[f32],
    h: usize,
    w: usize,
    c: usize,
    block: usize,
    output: &mut [f32],
) {
    debug_assert!(block > 0 && c.is_multiple_of(block * block));
    debug_assert_eq!(input.len(), h * w * c);
    debug_assert_eq!(output.len(), input.len());
    let oc = c / (block * block);
    let ow = w * block;
    for y in 0..h {
        for by in 0..block {
            let out_row = &mut output[(y * block + by) * ow * oc..][..ow * oc];
            for x in 0..w {
                let src = &input[(y * w + x) * c + by * block * oc..][..block * oc];
                out_row[x * block * oc..(x + 1) * block * oc].copy_from_slice(src);
            }
        }
    }
}

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

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // naive references index on purpose
mod tests {
    use super::*;
    use crate::kernels::testutil::*;
    use proptest::prelude::*;

    /// Coordinates of flat index `i` in `shape`.
    fn coords(mut i: usize, shape: &[usize]) -> Vec<usize> {
        let mut c = vec![0; shape.len()];
        for d in (0..shape.len()).rev() {
            c[d] = i % shape[d];
            i /= shape[d];
        }
        c
    }

    fn flat(c: &[usize], shape: &[usize]) -> usize {
        c.iter().zip(shape).fold(0, |acc, (c, d)| acc * d + c)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn pad_matches_reference(shape in proptest::collection::vec(1..5usize, 1..=4), pads in proptest::collection::vec((0..3usize, 0..3usize), 4), seed in 0u64..1000) {
            let pads = &pads[..shape.len()];
            let input = data(seed, shape.iter().product());
            let oshape: Vec<usize> = shape.iter().zip(pads).map(|(d, p)| d + p.0 + p.1).collect();
            let total: usize = oshape.iter().product();
            let reference: Vec<f32> = (0..total).map(|i| {
                let c = coords(i, &oshape);
                let src: Option<Vec<usize>> = c.iter().zip(pads).zip(&shape).map(|((c, p), d)| (*c >= p.0 && c - p.0 < *d).then(|| c - p.0)).collect();
                src.map_or(0.5, |s| input[flat(&s, &shape)])
            }).collect();
            let mut out = vec![f32::NAN; total];
            pad(&input, &shape, pads, 0.5, &mut out);
            prop_assert_eq!(out, reference);
        }

        #[test]
        fn concat_matches_reference(shape in proptest::collection::vec(1..4usize, 1..=4), axis_pick in 0..4usize, sizes in proptest::collection::vec(1..4usize, 1..4), seed in 0u64..1000) {
            let axis = axis_pick % shape.len();
            let tensors: Vec<(Vec<f32>, Vec<usize>)> = sizes.iter().enumerate().map(|(i, &s)| {
                let mut sh = shape.clone();
                sh[axis] = s;
                (data(seed + i as u64, sh.iter().product()), sh)
            }).collect();
            let mut oshape = shape.clone();
            oshape[axis] = sizes.iter().sum();
            let total: usize = oshape.iter().product();
            let reference: Vec<f32> = (0..total).map(|i| {
                let mut c = coords(i, &oshape);
                for (data, sh) in &tensors {
                    if c[axis] < sh[axis] { return data[flat(&c, sh)]; }
                    c[axis] -= sh[axis];
                }
                unreachable!()
            }).collect();
            let inputs: Vec<(&[f32], &[usize])> = tensors.iter().map(|(d, s)| (d.as_slice(), s.as_slice())).collect();
            let mut out = vec![f32::NAN; total];
            concat(&inputs, axis, &mut out);
            prop_assert_eq!(out, reference);
        }

        #[test]
        fn depth_to_space_matches_reference(h in 1..5usize, w in 1..5usize, oc in 1..4usize, block in 1..4usize, seed in 0u64..1000) {
            let c = oc * block * block;
            let input = data(seed, h * w * c);
            let mut reference = vec![0.0; input.len()];
            for y in 0..h * block { for x in 0..w * block { for o in 0..oc {
                reference[(y * w * block + x) * oc + o] = input[((y / block) * w + x / block) * c + ((y % block) * block + x % block) * oc + o];
            }}}
            let mut out = vec![f32::NAN; input.len()];
            depth_to_space(&input, h, w, c, block, &mut out);
            prop_assert_eq!(out, reference);
        }

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

    #[test]
    fn channel_pad_and_depth_to_space_hand_computed() {
        // Channel zero-extension of a residual: [1, 1, 2, 2] -> [1, 1, 2, 3].
        let mut out = [f32::NAN; 6];
        pad(
            &[1.0, 2.0, 3.0, 4.0],
            &[1, 1, 2, 2],
            &[(0, 0), (0, 0), (0, 0), (0, 1)],
            0.0,
            &mut out,
        );
        assert_eq!(out, [1.0, 2.0, 0.0, 3.0, 4.0, 0.0]);
        // DCR: one pixel of 4 channels to 2x2 of one channel.
        let mut out = [0.0; 4];
        depth_to_space(&[1.0, 2.0, 3.0, 4.0], 1, 1, 4, 2, &mut out);
        assert_eq!(out, [1.0, 2.0, 3.0, 4.0]);
        let mut out = [0.0; 3];
        strided_slice(
            &[0.0, 1.0, 2.0, 3.0, 4.0],
            &[5],
            &[4],
            &[-1],
            &[-2],
            &mut out,
        );
        assert_eq!(out, [4.0, 2.0, 0.0]);
    }
}
