//! PAD of a tensor of rank at most 4: with a constant (a plain copy into a filled output) or a
//! reflected or replicated border.
//!
//! Dispatch: [`prepare`] picks the constant kernel or the border kernel.

use heimdall_ir::PadMode;

use crate::kernels::Par;
use crate::kernels::nd::{dims4, strides4};
use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

/// Values a part must have at least before the rows are split over threads
/// (about 3 µs of one core's time: a job costs the pool ~1 µs when its threads spin, and a
/// thread's parts are the rows it wrote in the op before, `crate::kernels::threads`).
const MIN_VALUES_PER_PART: usize = 1 << 13;

/// Pads `input` (shape `in_shape`) with `value`: `pads[d] = (before, after)` along dimension
/// `d`. The output shape is `in_shape[d] + before + after`. Output rows (the innermost axis) are
/// split over [`Par`].
pub fn pad(
    par: &Par,
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
    par.for_rows(
        output,
        row,
        MIN_VALUES_PER_PART.div_ceil(row),
        |rows, part| {
            if inner > 0 && p[..3].iter().all(|&(b, a)| b == 0 && a == 0) {
                // Only the innermost axis is padded (channels of an NHWC tensor, before a
                // residual add): output row `r` is input row `r`, no index arithmetic.
                let src = &input[rows.start * inner..rows.end * inner];
                for (out_row, x) in part.chunks_exact_mut(row).zip(src.chunks_exact(inner)) {
                    out_row[..left].fill(value);
                    out_row[left..left + inner].copy_from_slice(x);
                    out_row[left + inner..].fill(value);
                }
                return;
            }
            for (r, out_row) in rows.zip(part.chunks_exact_mut(row)) {
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
                out_row[left..left + inner]
                    .copy_from_slice(&input[src_row * inner..(src_row + 1) * inner]);
                out_row[left + inner..].fill(value);
            }
        },
    );
}

/// How padded positions are filled.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fill {
    /// A constant.
    Constant(f32),
    /// Mirror without repeating the edge.
    Reflect,
    /// Repeat the edge.
    Edge,
}

/// The input index that output index `x` (before subtracting the leading pad) reads along an
/// axis of `n` values, or `None` for a constant fill.
fn source(x: isize, n: isize, fill: Fill) -> Option<isize> {
    if (0..n).contains(&x) {
        return Some(x);
    }
    match fill {
        Fill::Constant(_) => None,
        Fill::Edge => Some(x.clamp(0, n - 1)),
        Fill::Reflect => {
            // Period 2(n-1); n == 1 reflects onto itself.
            let period = (2 * (n - 1)).max(1);
            let m = x.rem_euclid(period);
            Some(if m < n { m } else { period - m })
        }
    }
}

/// Pads `input` of `shape` by `pads[d] = (before, after)` into `output`. Rows of the innermost
/// axis are copied whole where that axis is not padded (NHWC images padded in H and W); output
/// rows are split over [`Par`].
pub fn pad_with(
    par: &Par,
    input: &[f32],
    shape: &[usize],
    pads: &[(usize, usize)],
    fill: Fill,
    output: &mut [f32],
) {
    let off = 4 - shape.len();
    let d = dims4(shape);
    let s = strides4(&d);
    let mut before = [0usize; 4];
    let mut od = d;
    for (i, p) in pads.iter().enumerate() {
        before[off + i] = p.0;
        od[off + i] += p.0 + p.1;
    }
    let value = match fill {
        Fill::Constant(v) => v,
        _ => 0.0,
    };
    let inner_padded = od[3] != d[3];
    let row = od[3];
    if row == 0 {
        return;
    }
    par.for_rows(
        output,
        row,
        MIN_VALUES_PER_PART.div_ceil(row),
        |rows, part| {
            for (r, out) in rows.zip(part.chunks_exact_mut(row)) {
                let abc = [r / (od[1] * od[2]), (r / od[2]) % od[1], r % od[2]];
                let src = abc.iter().enumerate().try_fold(0usize, |acc, (k, &x)| {
                    source(x as isize - before[k] as isize, d[k] as isize, fill)
                        .map(|i| acc + i as usize * s[k])
                });
                let Some(base) = src else {
                    out.fill(value);
                    continue;
                };
                if !inner_padded {
                    out.copy_from_slice(&input[base..base + row]);
                    continue;
                }
                for (x, v) in out.iter_mut().enumerate() {
                    *v = match source(x as isize - before[3] as isize, d[3] as isize, fill) {
                        Some(i) => input[base + i as usize],
                        None => value,
                    };
                }
            }
        },
    );
}

/// A constant (zero) pad.
struct ZeroPad {
    shape: Vec<usize>,
    pads: Vec<(usize, usize)>,
}

impl Kernel for ZeroPad {
    fn run(&self, io: StepIo<'_>) {
        pad(
            io.par,
            io.inputs.get(0),
            &self.shape,
            &self.pads,
            0.0,
            io.out,
        );
    }
}

/// A pad with a fill mode.
struct PadWith {
    shape: Vec<usize>,
    pads: Vec<(usize, usize)>,
    fill: Fill,
}

impl Kernel for PadWith {
    fn run(&self, io: StepIo<'_>) {
        pad_with(
            io.par,
            io.inputs.get(0),
            &self.shape,
            &self.pads,
            self.fill,
            io.out,
        );
    }
}

/// Prepares a PAD.
pub(crate) fn prepare(
    cx: &PrepareCx,
    pads: &[[usize; 2]],
    mode: PadMode,
) -> Result<Prepared, String> {
    let shape = cx.shape(0);
    let pads = pads.iter().map(|p| (p[0], p[1])).collect();
    let fill = match mode {
        m if m.is_zero() => return Ok(Prepared::new(ZeroPad { shape, pads })),
        PadMode::Constant(v) => Fill::Constant(v),
        PadMode::Reflect => Fill::Reflect,
        PadMode::Edge => Fill::Edge,
    };
    Ok(Prepared::new(PadWith { shape, pads, fill }))
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // naive references index on purpose
mod zero_pad_tests {
    use super::*;
    use crate::kernels::testutil::*;
    use proptest::prelude::*;

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
            pad(&Par::new(1), &input, &shape, pads, 0.5, &mut out);
            prop_assert_eq!(out, reference);
        }
    }
}

#[cfg(test)]
mod channel_pad_tests {
    use super::*;
    use crate::kernels::testutil::data;

    /// Padding only the innermost axis (the channel pads before MediaPipe's residual adds)
    /// takes the copy-per-row path: every pixel's channels, then the fill, on any threads.
    #[test]
    fn channel_only_pads_match_per_pixel_copy() {
        for (shape, pads) in [
            ([1usize, 64, 64, 24], (0usize, 4usize)),
            ([1, 9, 7, 5], (2, 1)),
            ([1, 12, 12, 128], (0, 128)),
        ] {
            let input = data(3, shape.iter().product());
            let (c, oc) = (shape[3], shape[3] + pads.0 + pads.1);
            let mut want = vec![0.25; input.len() / c * oc];
            for (o, x) in want.chunks_exact_mut(oc).zip(input.chunks_exact(c)) {
                o[pads.0..pads.0 + c].copy_from_slice(x);
            }
            let all = [(0, 0), (0, 0), (0, 0), pads];
            for threads in [1, 3] {
                let mut out = vec![f32::NAN; want.len()];
                pad(&Par::new(threads), &input, &shape, &all, 0.25, &mut out);
                assert_eq!(out, want, "{shape:?} {pads:?} {threads} threads");
            }
        }
    }
}

#[cfg(test)]
mod fill_tests {
    use super::*;

    #[test]
    fn reflect_edge_constant_on_a_row() {
        let x = [1.0, 2.0, 3.0];
        let mut out = [0.0; 7];
        pad_with(&Par::new(1), &x, &[3], &[(2, 2)], Fill::Reflect, &mut out);
        assert_eq!(out, [3.0, 2.0, 1.0, 2.0, 3.0, 2.0, 1.0]);
        pad_with(&Par::new(1), &x, &[3], &[(2, 2)], Fill::Edge, &mut out);
        assert_eq!(out, [1.0, 1.0, 1.0, 2.0, 3.0, 3.0, 3.0]);
        pad_with(
            &Par::new(1),
            &x,
            &[3],
            &[(1, 3)],
            Fill::Constant(-1.0),
            &mut out,
        );
        assert_eq!(out, [-1.0, 1.0, 2.0, 3.0, -1.0, -1.0, -1.0]);
    }

    #[test]
    fn nhwc_rows_match_per_element_reference() {
        // [1, 3, 4, 2] padded by 2 in H and W, every mode, against a per-element walk.
        let shape = [1, 3, 4, 2];
        let x: Vec<f32> = (0..24).map(|v| v as f32).collect();
        let pads = [(0, 0), (2, 1), (1, 2), (0, 0)];
        for fill in [Fill::Reflect, Fill::Edge, Fill::Constant(7.0)] {
            let mut out = vec![0.0; 6 * 7 * 2];
            pad_with(&Par::new(1), &x, &shape, &pads, fill, &mut out);
            for y in 0..6isize {
                for xx in 0..7isize {
                    for c in 0..2 {
                        let sy = source(y - 2, 3, fill);
                        let sx = source(xx - 1, 4, fill);
                        let expect = match (sy, sx) {
                            (Some(a), Some(b)) => x[(a as usize * 4 + b as usize) * 2 + c],
                            _ => 7.0,
                        };
                        assert_eq!(out[(y as usize * 7 + xx as usize) * 2 + c], expect);
                    }
                }
            }
        }
    }

    #[test]
    fn rows_split_over_threads_match_one_thread() {
        // Large enough to be split: 70 x 70 x 16 padded to 74 x 74 x 16 (87 616 values).
        let shape = [1, 70, 70, 16];
        let x = crate::kernels::testutil::data(7, 70 * 70 * 16);
        let pads = [(0, 0), (2, 2), (2, 2), (0, 0)];
        let len = 74 * 74 * 16;
        for fill in [Fill::Reflect, Fill::Edge, Fill::Constant(-3.0)] {
            let (mut one, mut three) = (vec![0.0; len], vec![f32::NAN; len]);
            pad_with(&Par::new(1), &x, &shape, &pads, fill, &mut one);
            pad_with(&Par::new(3), &x, &shape, &pads, fill, &mut three);
            assert_eq!(one, three, "{fill:?}");
        }
        let (mut one, mut three) = (vec![0.0; len], vec![f32::NAN; len]);
        pad(&Par::new(1), &x, &shape, &pads, 0.5, &mut one);
        pad(&Par::new(3), &x, &shape, &pads, 0.5, &mut three);
        assert_eq!(one, three);
    }

    #[test]
    fn reflect_2d_matches_numpy() {
        // np.pad(np.arange(6).reshape(2,3), ((1,1),(2,0)), 'reflect')
        let x: Vec<f32> = (0..6).map(|v| v as f32).collect();
        let mut out = vec![0.0; 4 * 5];
        pad_with(
            &Par::new(1),
            &x,
            &[2, 3],
            &[(1, 1), (2, 0)],
            Fill::Reflect,
            &mut out,
        );
        let expect = [
            5., 4., 3., 4., 5., 2., 1., 0., 1., 2., 5., 4., 3., 4., 5., 2., 1., 0., 1., 2.,
        ];
        assert_eq!(out, expect);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::space_depth::depth_to_space;
    use crate::ops::strided_slice::strided_slice;

    #[test]
    fn channel_pad_and_depth_to_space_hand_computed() {
        // Channel zero-extension of a residual: [1, 1, 2, 2] -> [1, 1, 2, 3].
        let mut out = [f32::NAN; 6];
        pad(
            &Par::new(1),
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
