//! INSTANCE_NORM of an NHWC tensor (batch 1): per channel, over H and W; scale and bias may be
//! computed at run time.
//!
//! Dispatch: [`prepare`].

use crate::kernels::Par;
use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

/// Pixels per block of the statistics. Each block's sum and centred sum of squares are computed
/// on their own (in f64, the block in cache for its second pass) and the blocks are combined in
/// block order, so the statistics do not depend on the thread count.
const BLOCK_PIXELS: usize = 256;

/// Values a part of the normalising pass must have at least before it is split over threads.
const MIN_VALUES_PER_PART: usize = 1 << 15;

/// Per channel of `input [hw, c]`, the mean and the sum of squared deviations from it, in f64:
/// each block of pixels gives its sum and its sum of squares around its own mean (two passes
/// over a block that stays in cache), computed over [`Par`] into `partial` (`blocks * 2c`
/// values); the blocks are then merged in order (Chan et al.'s pairwise update:
/// `M2 = Σ M2_b + n_b (mean_b - mean)²`).
fn channel_stats(par: &Par, input: &[f32], c: usize, partial: &mut [f64]) -> (Vec<f64>, Vec<f64>) {
    let hw = input.len() / c;
    par.for_chunks(partial, 2 * c, 1, |b, acc| {
        let (sum, m2) = acc.split_at_mut(c);
        let end = ((b + 1) * BLOCK_PIXELS).min(hw);
        let block = &input[b * BLOCK_PIXELS * c..end * c];
        sum.fill(0.0);
        for px in block.chunks_exact(c) {
            for (a, x) in sum.iter_mut().zip(px) {
                *a += *x as f64;
            }
        }
        let n = (end - b * BLOCK_PIXELS) as f64;
        sum.iter_mut().for_each(|s| *s /= n); // now the block's mean
        m2.fill(0.0);
        for px in block.chunks_exact(c) {
            for ((a, x), m) in m2.iter_mut().zip(px).zip(sum.iter()) {
                let d = *x as f64 - m;
                *a += d * d;
            }
        }
    });
    let mut mean = vec![0f64; c];
    for (b, block) in partial.chunks_exact(2 * c).enumerate() {
        let n = (((b + 1) * BLOCK_PIXELS).min(hw) - b * BLOCK_PIXELS) as f64;
        for (m, bm) in mean.iter_mut().zip(&block[..c]) {
            *m += bm * n;
        }
    }
    mean.iter_mut().for_each(|m| *m /= hw as f64);
    let mut m2 = vec![0f64; c];
    for (b, block) in partial.chunks_exact(2 * c).enumerate() {
        let n = (((b + 1) * BLOCK_PIXELS).min(hw) - b * BLOCK_PIXELS) as f64;
        let (bm, bm2) = block.split_at(c);
        for (((t, m), bm), bm2) in m2.iter_mut().zip(&mean).zip(bm).zip(bm2) {
            *t += bm2 + n * (bm - m) * (bm - m);
        }
    }
    (mean, m2)
}

/// `output = (x - mean) / sqrt(var + eps) * scale + bias` per channel of `input [hw, c]`;
/// statistics are accumulated in f64 around block means (no cancellation). The statistics are
/// computed in blocks of pixels and the normalisation split by rows, both over [`Par`]; the
/// result is the same for every thread count.
pub fn instance_norm(
    par: &Par,
    input: &[f32],
    channels: usize,
    scale: Option<&[f32]>,
    bias: Option<&[f32]>,
    eps: f32,
    output: &mut [f32],
) {
    let c = channels.max(1);
    let hw = input.len() / c;
    if hw == 0 {
        return;
    }
    let mut partial = vec![0f64; hw.div_ceil(BLOCK_PIXELS) * 2 * c];
    let (mean, m2) = channel_stats(par, input, c, &mut partial);
    let mul: Vec<f32> = (0..c)
        .map(|i| {
            let inv = 1.0 / (m2[i] / hw as f64 + eps as f64).sqrt();
            (inv * scale.map_or(1.0, |s| s[i] as f64)) as f32
        })
        .collect();
    let mean: Vec<f32> = mean.iter().map(|&m| m as f32).collect();
    let add: Vec<f32> = (0..c).map(|i| bias.map_or(0.0, |b| b[i])).collect();
    let min_rows = MIN_VALUES_PER_PART.div_ceil(c);
    par.for_rows(output, c, min_rows, |rows, out| {
        let x = &input[rows.start * c..rows.end * c];
        for (o, x) in out.chunks_exact_mut(c).zip(x.chunks_exact(c)) {
            for ((((o, x), m), k), a) in o.iter_mut().zip(x).zip(&mean).zip(&mul).zip(&add) {
                *o = (x - m) * k + a;
            }
        }
    });
}

/// An instance normalisation with optional scale and bias inputs.
struct InstanceNorm {
    channels: usize,
    epsilon: f32,
    scale: bool,
    bias: bool,
}

impl Kernel for InstanceNorm {
    fn run(&self, io: StepIo<'_>) {
        let i = io.inputs;
        instance_norm(
            io.par,
            i.get(0),
            self.channels,
            self.scale.then(|| i.get(1)),
            self.bias.then(|| i.get(2)),
            self.epsilon,
            io.out,
        );
    }
}

/// Prepares an INSTANCE_NORM.
pub(crate) fn prepare(cx: &PrepareCx, epsilon: f32) -> Result<Prepared, String> {
    Ok(Prepared::new(InstanceNorm {
        channels: cx.shape(0).last().copied().unwrap_or(1),
        epsilon,
        scale: cx.op.inputs.len() > 1,
        bias: cx.op.inputs.len() > 2,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::{assert_close, data};
    use proptest::prelude::*;

    /// The normalisation computed per channel in f64.
    fn reference(x: &[f32], hw: usize, c: usize, s: &[f32], b: &[f32]) -> Vec<f32> {
        let mut reference = vec![0.0; x.len()];
        for ch in 0..c {
            let vals: Vec<f64> = (0..hw).map(|p| x[p * c + ch] as f64).collect();
            let m = vals.iter().sum::<f64>() / hw as f64;
            let v = vals.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / hw as f64;
            for p in 0..hw {
                reference[p * c + ch] =
                    ((vals[p] - m) / (v + 1e-5).sqrt() * s[ch] as f64 + b[ch] as f64) as f32;
            }
        }
        reference
    }

    proptest! {
        #[test]
        fn instance_norm_matches_reference(hw in 1..40usize, c in 1..9usize, seed in 0u64..100) {
            let x = data(seed, hw * c);
            let s = data(seed + 1, c);
            let b = data(seed + 2, c);
            let mut out = vec![0.0; x.len()];
            instance_norm(&Par::new(1), &x, c, Some(&s), Some(&b), 1e-5, &mut out);
            assert_close(&out, &reference(&x, hw, c, &s, &b));
        }
    }

    #[test]
    fn threads_give_the_same_result() {
        // 3000 pixels: three blocks of statistics, rows split over the pool.
        let (hw, c) = (3000, 12);
        let x: Vec<f32> = data(5, hw * c).iter().map(|v| v * 40.0 + 7.0).collect();
        let (s, b) = (data(6, c), data(8, c));
        let mut one = vec![0.0; x.len()];
        instance_norm(&Par::new(1), &x, c, Some(&s), Some(&b), 1e-5, &mut one);
        assert_close(&one, &reference(&x, hw, c, &s, &b));
        for threads in [2, 3, 5] {
            let mut many = vec![f32::NAN; x.len()];
            instance_norm(
                &Par::new(threads),
                &x,
                c,
                Some(&s),
                Some(&b),
                1e-5,
                &mut many,
            );
            assert_eq!(one, many, "{threads} threads");
        }
    }
}
