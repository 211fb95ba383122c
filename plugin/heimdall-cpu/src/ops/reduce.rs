//! Reductions over any set of axes of a tensor of rank at most 4: the mean (TFLite MEAN, ONNX
//! `ReduceMean`), summed in input order in f32 as TFLite does, and the other ONNX reductions
//! (`ReduceSum`, `ReduceMax`, ...), accumulated in f64.
//!
//! Dispatch: [`prepare`] picks the mean kernel or the fold of the reduction.

use heimdall_ir::ReduceKind;

use crate::kernels::Par;
use crate::kernels::nd::{dims4, for_each4, strides4};
use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

/// `output = mean of input over axes` for `input` of shape `shape` (rank <= 4). `axes` are
/// non-negative axis indices (duplicates allowed); `output` holds the product of the kept
/// dimensions (its layout is the same with or without keep_dims). Sums run in input order.
pub fn mean(input: &[f32], shape: &[usize], axes: &[usize], output: &mut [f32]) {
    debug_assert!(shape.len() <= 4);
    debug_assert_eq!(input.len(), shape.iter().product::<usize>());
    // Pad to rank 4 at the front.
    let mut dims = [1usize; 4];
    let mut reduced = [false; 4];
    let off = 4 - shape.len();
    dims[off..].copy_from_slice(shape);
    for &a in axes {
        debug_assert!(a < shape.len());
        reduced[off + a] = true;
    }
    // Output strides (0 along reduced axes).
    let mut ostride = [0usize; 4];
    let mut s = 1;
    for d in (0..4).rev() {
        if !reduced[d] {
            ostride[d] = s;
            s *= dims[d];
        }
    }
    debug_assert_eq!(output.len(), s);
    output.fill(0.0);
    let count: usize = (0..4).filter(|&d| reduced[d]).map(|d| dims[d]).product();
    let inner = dims[3];
    let mut i = 0;
    for a in 0..dims[0] {
        for b in 0..dims[1] {
            for c in 0..dims[2] {
                let base = a * ostride[0] + b * ostride[1] + c * ostride[2];
                let src = &input[i..i + inner];
                if reduced[3] {
                    output[base] += src.iter().sum::<f32>();
                } else {
                    for (o, x) in output[base..base + inner].iter_mut().zip(src) {
                        *o += *x;
                    }
                }
                i += inner;
            }
        }
    }
    let n = count as f32;
    if count > 0 {
        output.iter_mut().for_each(|o| *o /= n);
    }
}

/// Values a part of a split [`mean_on`] sums at least (about 2 µs of one core).
const MIN_VALUES_PER_PART: usize = 8192;

/// Channels a part of a split [`mean_on`] sums: one cache line of each pixel, so that no two
/// parts read the same lines.
const CHANNELS_PER_GROUP: usize = 16;

/// [`mean`] split over `par`'s threads where only the innermost axis is kept (a global
/// average over pixels, `[1, H, W, C]` to `C`): each part sums its groups of
/// `CHANNELS_PER_GROUP` channels over every pixel, in the same order, so the bits are
/// [`mean`]'s. The pixels were written by every thread in the op before; one thread reading
/// them all ran slower on 4 threads of a 16-core host than alone (hand_landmark_lite's 7x7x672
/// average: 7.5 µs on 1 thread, 12.5 µs on 4). Groups of whole cache lines: parts of a few
/// channels each read every line of the map (PP-OCR's 184x328x48 averages: 8 parts of 6
/// channels on 2 threads, each streaming the whole 11.6 MB). Other axes, and fewer than two
/// parts of `MIN_VALUES_PER_PART` values, run [`mean`] on the calling thread.
pub fn mean_on(par: &Par, input: &[f32], shape: &[usize], axes: &[usize], output: &mut [f32]) {
    let inner = shape.last().copied().unwrap_or(1);
    let last = shape.len().wrapping_sub(1);
    let pixels = input.len().checked_div(inner).unwrap_or(0);
    let global = !shape.is_empty()
        && !axes.contains(&last)
        && output.len() == inner
        && (0..last).all(|d| shape[d] == 1 || axes.contains(&d));
    if !global || par.chunks(input.len(), MIN_VALUES_PER_PART) < 2 {
        return mean(input, shape, axes, output);
    }
    let n = pixels as f32;
    par.for_chunks(output, CHANNELS_PER_GROUP, 1, |g, out| {
        let c0 = g * CHANNELS_PER_GROUP;
        crate::kernels::isa::widest(|| sum_group(input, inner, c0, out));
        if pixels > 0 {
            out.iter_mut().for_each(|o| *o /= n);
        }
    });
}

/// `out[k] = sum over pixels of input[pixel][c0 + k]`, pixels in order (`inner` channels a
/// pixel): a whole group as one vector of [`CHANNELS_PER_GROUP`] sums, a partial one channel
/// by channel.
#[inline(always)]
fn sum_group(input: &[f32], inner: usize, c0: usize, out: &mut [f32]) {
    if let Ok(out) = <&mut [f32; CHANNELS_PER_GROUP]>::try_from(&mut *out) {
        let mut acc = [0f32; CHANNELS_PER_GROUP];
        for px in input.chunks_exact(inner) {
            let src: &[f32; CHANNELS_PER_GROUP] = px[c0..c0 + CHANNELS_PER_GROUP]
                .try_into()
                .expect("a group of channels");
            for (a, x) in acc.iter_mut().zip(src) {
                *a += *x;
            }
        }
        *out = acc;
        return;
    }
    out.fill(0.0);
    let len = out.len();
    for px in input.chunks_exact(inner) {
        for (o, x) in out.iter_mut().zip(&px[c0..c0 + len]) {
            *o += *x;
        }
    }
}

/// How values combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fold {
    /// Sum.
    Sum,
    /// Mean.
    Mean,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
    /// Product.
    Prod,
    /// Sum of squares.
    SumSquare,
    /// Sum of absolute values.
    L1,
    /// Euclidean norm.
    L2,
    /// Log of the sum.
    LogSum,
    /// Log of the sum of exponentials.
    LogSumExp,
}

/// Reduces `input` of `shape` over `axes` into `output` (the kept dimensions, row-major).
pub fn reduce(input: &[f32], shape: &[usize], axes: &[usize], fold: Fold, output: &mut [f32]) {
    let off = 4 - shape.len();
    let d = dims4(shape);
    let mut od = d;
    for &a in axes {
        od[off + a] = 1;
    }
    let os = strides4(&od);
    let init = match fold {
        Fold::Max => f64::NEG_INFINITY,
        Fold::Min => f64::INFINITY,
        Fold::Prod => 1.0,
        _ => 0.0,
    };
    let mut acc = vec![init; output.len()];
    for_each4(&d, |i, c| {
        let o = (0..4).map(|k| c[k].min(od[k] - 1) * os[k]).sum::<usize>();
        let x = input[i] as f64;
        let a = &mut acc[o];
        *a = match fold {
            Fold::Sum | Fold::Mean | Fold::LogSum => *a + x,
            Fold::Max => a.max(x),
            Fold::Min => a.min(x),
            Fold::Prod => *a * x,
            Fold::SumSquare | Fold::L2 => *a + x * x,
            Fold::L1 => *a + x.abs(),
            Fold::LogSumExp => *a + x.exp(),
        };
    });
    let count: usize = axes.iter().map(|&a| shape[a]).product();
    for (o, a) in output.iter_mut().zip(acc) {
        *o = match fold {
            Fold::Mean => a / count.max(1) as f64,
            Fold::L2 => a.sqrt(),
            Fold::LogSum | Fold::LogSumExp => a.ln(),
            _ => a,
        } as f32;
    }
}

/// A mean over axes.
struct Mean {
    shape: Vec<usize>,
    axes: Vec<usize>,
}

impl Kernel for Mean {
    fn run(&self, io: StepIo<'_>) {
        mean_on(io.par, io.inputs.get(0), &self.shape, &self.axes, io.out);
    }
}

/// Another reduction over axes.
struct Reduce {
    shape: Vec<usize>,
    axes: Vec<usize>,
    fold: Fold,
}

impl Kernel for Reduce {
    fn run(&self, io: StepIo<'_>) {
        reduce(io.inputs.get(0), &self.shape, &self.axes, self.fold, io.out);
    }
}

/// Prepares a reduction of `kind` over `axes`.
pub(crate) fn prepare(
    cx: &PrepareCx,
    kind: ReduceKind,
    axes: &[usize],
) -> Result<Prepared, String> {
    let (shape, axes) = (cx.shape(0), axes.to_vec());
    let fold = match kind {
        ReduceKind::Mean => return Ok(Prepared::new(Mean { shape, axes })),
        ReduceKind::Sum => Fold::Sum,
        ReduceKind::Max => Fold::Max,
        ReduceKind::Min => Fold::Min,
        ReduceKind::Prod => Fold::Prod,
        ReduceKind::SumSquare => Fold::SumSquare,
        ReduceKind::L1 => Fold::L1,
        ReduceKind::L2 => Fold::L2,
        ReduceKind::LogSum => Fold::LogSum,
        ReduceKind::LogSumExp => Fold::LogSumExp,
    };
    Ok(Prepared::new(Reduce { shape, axes, fold }))
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // naive references index on purpose
mod mean_tests {
    use super::*;
    use crate::kernels::testutil::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn mean_matches_reference(shape in proptest::collection::vec(1..7usize, 1..=4), mask in 0u8..16, seed in 0u64..1000) {
            let rank = shape.len();
            let axes: Vec<usize> = (0..rank).filter(|a| mask & (1 << a) != 0).collect();
            let input = data(seed, shape.iter().product());
            let out_shape: Vec<usize> = (0..rank).map(|d| if axes.contains(&d) { 1 } else { shape[d] }).collect();
            let out_len: usize = out_shape.iter().product();
            // Reference: for each output index, visit every input index and compare coordinates.
            let mut reference = vec![0.0f64; out_len];
            let mut abs_sum = vec![0.0f64; out_len];
            let mut counts = vec![0usize; out_len];
            for flat in 0..input.len() {
                let mut rem = flat;
                let mut coord = vec![0; rank];
                for d in (0..rank).rev() {
                    coord[d] = rem % shape[d];
                    rem /= shape[d];
                }
                let mut o = 0;
                for d in 0..rank {
                    o = o * out_shape[d] + if axes.contains(&d) { 0 } else { coord[d] };
                }
                reference[o] += input[flat] as f64;
                abs_sum[o] += input[flat].abs() as f64;
                counts[o] += 1;
            }
            let reference: Vec<f32> = reference.iter().zip(&counts).map(|(s, c)| (s / *c as f64) as f32).collect();
            let scale: Vec<f32> = abs_sum.iter().zip(&counts).map(|(s, c)| (s / *c as f64) as f32).collect();
            let mut out = vec![f32::NAN; out_len];
            mean(&input, &shape, &axes, &mut out);
            assert_close_scaled(&out, &reference, &scale);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Global averages (`[1, H, W, C]` over H and W, `[H, W, C]` over both, with leading
        /// ones) split over 2, 3 and 4 threads: [`mean`]'s bits.
        #[test]
        fn split_mean_is_the_mean(h in 1..12usize, w in 1..12usize, c in 1..1200usize, lead: bool, seed in 0u64..1000) {
            let (shape, axes) = if lead { (vec![1, h, w, c], vec![1, 2]) } else { (vec![h, w, c], vec![0, 1]) };
            let input = data(seed, h * w * c);
            let mut one = vec![f32::NAN; c];
            mean(&input, &shape, &axes, &mut one);
            for threads in [2, 3, 4] {
                let mut many = vec![f32::NAN; c];
                mean_on(&Par::new(threads), &input, &shape, &axes, &mut many);
                prop_assert_eq!(&one, &many, "{} threads", threads);
            }
        }
    }

    /// Other reductions (the channels reduced, a kept outer axis) and the split one on a 7x7x672
    /// map: [`mean`]'s values on 4 threads.
    #[test]
    fn mean_on_threads_matches() {
        let par = Par::new(4);
        for (shape, axes) in [
            (vec![1, 7, 7, 672], vec![1, 2]),
            (vec![1, 7, 7, 672], vec![3]),
            (vec![4, 7, 7, 64], vec![1, 2]),
            (vec![1, 7, 7, 672], vec![1]),
            (vec![7, 7, 672], vec![0, 1, 2]),
        ] {
            let input = data(3, shape.iter().product());
            let len = (0..shape.len())
                .filter(|d| !axes.contains(d))
                .map(|d| shape[d])
                .product();
            let (mut one, mut many) = (vec![f32::NAN; len], vec![f32::NAN; len]);
            mean(&input, &shape, &axes, &mut one);
            mean_on(&par, &input, &shape, &axes, &mut many);
            assert_eq!(one, many, "{shape:?} over {axes:?}");
        }
    }

    #[test]
    fn spatial_mean_hand_computed() {
        // [1, 2, 2, 2]: mean over H and W per channel.
        let input = [1.0, 10.0, 2.0, 20.0, 3.0, 30.0, 4.0, 40.0];
        let mut out = [0.0; 2];
        mean(&input, &[1, 2, 2, 2], &[1, 2], &mut out);
        assert_eq!(out, [2.5, 25.0]);
    }
}

#[cfg(test)]
mod fold_tests {
    use super::*;

    #[test]
    fn reduce_over_axes_matches_reference() {
        // shape [2, 3]: rows 0..3 and 3..6.
        let x = [1.0, -2.0, 3.0, 4.0, 5.0, -6.0];
        let mut out = [0.0; 3];
        reduce(&x, &[2, 3], &[0], Fold::Sum, &mut out);
        assert_eq!(out, [5.0, 3.0, -3.0]);
        let mut out = [0.0; 2];
        reduce(&x, &[2, 3], &[1], Fold::Max, &mut out);
        assert_eq!(out, [3.0, 5.0]);
        reduce(&x, &[2, 3], &[1], Fold::L1, &mut out);
        assert_eq!(out, [6.0, 15.0]);
        let mut one = [0.0; 1];
        reduce(&x, &[2, 3], &[0, 1], Fold::Prod, &mut one);
        assert_eq!(one, [720.0]);
        reduce(&x, &[2, 3], &[0, 1], Fold::Mean, &mut one);
        assert_eq!(one, [5.0 / 6.0]);
    }
}
