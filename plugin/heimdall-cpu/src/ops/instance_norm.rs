//! INSTANCE_NORM of an NHWC tensor (batch 1): per channel, over H and W; scale and bias may be
//! computed at run time.
//!
//! Dispatch: [`prepare`].

use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

/// `output = (x - mean) / sqrt(var + eps) * scale + bias` per channel of `input [hw, c]`;
/// statistics are accumulated in f64, the centring is done before the scaling (no cancellation).
pub fn instance_norm(
    input: &[f32],
    channels: usize,
    scale: Option<&[f32]>,
    bias: Option<&[f32]>,
    eps: f32,
    output: &mut [f32],
) {
    let c = channels.max(1);
    let hw = input.len() / c;
    let mut mean = vec![0f64; c];
    for px in input.chunks_exact(c) {
        for (m, x) in mean.iter_mut().zip(px) {
            *m += *x as f64;
        }
    }
    mean.iter_mut().for_each(|m| *m /= hw.max(1) as f64);
    let mut var = vec![0f64; c];
    for px in input.chunks_exact(c) {
        for ((v, x), m) in var.iter_mut().zip(px).zip(&mean) {
            *v += (*x as f64 - m).powi(2);
        }
    }
    let mul: Vec<f32> = (0..c)
        .map(|i| {
            let inv = 1.0 / (var[i] / hw.max(1) as f64 + eps as f64).sqrt();
            (inv * scale.map_or(1.0, |s| s[i] as f64)) as f32
        })
        .collect();
    let mean: Vec<f32> = mean.iter().map(|&m| m as f32).collect();
    let add: Vec<f32> = (0..c).map(|i| bias.map_or(0.0, |b| b[i])).collect();
    for (o, x) in output.chunks_exact_mut(c).zip(input.chunks_exact(c)) {
        for i in 0..c {
            o[i] = (x[i] - mean[i]) * mul[i] + add[i];
        }
    }
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

    proptest! {
        #[test]
        fn instance_norm_matches_reference(hw in 1..40usize, c in 1..9usize, seed in 0u64..100) {
            let x = data(seed, hw * c);
            let s = data(seed + 1, c);
            let b = data(seed + 2, c);
            let mut out = vec![0.0; x.len()];
            instance_norm(&x, c, Some(&s), Some(&b), 1e-5, &mut out);
            let mut reference = vec![0.0; x.len()];
            for ch in 0..c {
                let vals: Vec<f64> = (0..hw).map(|p| x[p * c + ch] as f64).collect();
                let m = vals.iter().sum::<f64>() / hw as f64;
                let v = vals.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / hw as f64;
                for p in 0..hw {
                    reference[p * c + ch] = ((vals[p] - m) / (v + 1e-5).sqrt() * s[ch] as f64 + b[ch] as f64) as f32;
                }
            }
            assert_close(&out, &reference);
        }
    }
}
