//! INSTANCE_NORM of an NHWC tensor (batch 1): per channel, over H and W; scale and bias may be
//! computed at run time; the fused epilogue (a residual add, an activation) is applied while
//! each block of the output is in cache.
//!
//! Two passes over the input: the statistics ([`stats`]), then the normalisation, both on whole
//! vectors of the widest ISA whatever the channel count (lane patterns of
//! [`stats::lanes`] values).
//!
//! Dispatch: [`prepare`].

mod normalise;
mod padded;
mod stats;

pub use padded::PaddedOutput;

use crate::kernels::{Epilogue, Par};
use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

/// `output = ep((x - mean) / sqrt(var + eps) * scale + bias)` per channel of `input [hw, c]`;
/// statistics are accumulated in f64 around block means (no cancellation). The statistics are
/// computed in blocks of pixels and the normalisation split by rows, both over [`Par`]; the
/// result is the same for every thread count. With `padded`, `output` is the reflect-padded
/// image instead ([`PaddedOutput`]), border included.
#[allow(clippy::too_many_arguments)] // the op's inputs, attribute, epilogue and layout
pub fn instance_norm(
    par: &Par,
    input: &[f32],
    channels: usize,
    scale: Option<&[f32]>,
    bias: Option<&[f32]>,
    eps: f32,
    output: &mut [f32],
    ep: &Epilogue,
    padded: Option<PaddedOutput>,
) {
    let c = channels.max(1);
    if input.len() < c {
        return;
    }
    let map = normalise::affine(par, input, c, scale, bias, eps);
    match padded {
        None => normalise::normalise_dense(par, input, c, &map, ep, output),
        Some(p) => padded::normalise_padded(par, input, c, &map, ep, p, output),
    }
}

/// An instance normalisation with optional scale and bias inputs, writing a dense or a
/// reflect-padded output.
struct InstanceNorm {
    channels: usize,
    epsilon: f32,
    scale: bool,
    bias: bool,
    padded: Option<PaddedOutput>,
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
            io.ep,
            self.padded,
        );
    }
}

/// Prepares an INSTANCE_NORM; one that took over the `PAD_REFLECT` after it
/// ([`PrepareCx::pad_output`]) writes the padded image, whose shape its output has.
pub(crate) fn prepare(cx: &PrepareCx, epsilon: f32) -> Result<Prepared, String> {
    let x = cx.shape(0);
    let padded = match (cx.pad_output, &x[..]) {
        (None, _) => None,
        (Some([rows, cols]), &[1, h, w, c]) => {
            let p = PaddedOutput { h, w, rows, cols };
            let [ph, pw] = p.padded_hw();
            if !p.is_valid() || cx.out_shape() != [1, ph, pw, c] {
                return Err(format!("reflect padding {p:?} into {:?}", cx.out_shape()));
            }
            Some(p)
        }
        (Some(_), _) => return Err(format!("reflect padding of an input of shape {x:?}")),
    };
    Ok(Prepared::new(InstanceNorm {
        channels: x.last().copied().unwrap_or(1),
        epsilon,
        scale: cx.op.inputs.len() > 1,
        bias: cx.op.inputs.len() > 2,
        padded,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::Act;
    use crate::kernels::testutil::{assert_close, data};
    use proptest::prelude::*;

    /// The normalisation computed per channel in f64, then `act(y + residual)`.
    fn reference(
        x: &[f32],
        c: usize,
        s: &[f32],
        b: &[f32],
        residual: Option<&[f32]>,
        act: fn(f64) -> f64,
    ) -> Vec<f32> {
        let hw = x.len() / c;
        let mut reference = vec![0.0; x.len()];
        for ch in 0..c {
            let vals: Vec<f64> = (0..hw).map(|p| x[p * c + ch] as f64).collect();
            let m = vals.iter().sum::<f64>() / hw as f64;
            let v = vals.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / hw as f64;
            for (p, val) in vals.iter().enumerate() {
                let i = p * c + ch;
                let y = (val - m) / (v + 1e-5).sqrt() * s[ch] as f64 + b[ch] as f64;
                reference[i] = act(y + residual.map_or(0.0, |r| r[i] as f64)) as f32;
            }
        }
        reference
    }

    fn run(par: &Par, x: &[f32], c: usize, s: &[f32], b: &[f32], ep: &Epilogue) -> Vec<f32> {
        let mut out = vec![f32::NAN; x.len()];
        instance_norm(par, x, c, Some(s), Some(b), 1e-5, &mut out, ep, None);
        out
    }

    proptest! {
        #[test]
        fn instance_norm_matches_reference(hw in 1..40usize, c in 1..9usize, seed in 0u64..100) {
            let x = data(seed, hw * c);
            let s = data(seed + 1, c);
            let b = data(seed + 2, c);
            let out = run(&Par::new(1), &x, c, &s, &b, &Epilogue::NONE);
            assert_close(&out, &reference(&x, c, &s, &b, None, |y| y));
        }

        /// The fused epilogue (residual and ReLU, or the logistic) against the reference, on
        /// channel counts whose lane groups span several pixels (3, 4, 8) or none (32, 48),
        /// with images big enough for several statistics blocks and epilogue blocks.
        #[test]
        fn instance_norm_with_epilogue_matches_reference(
            hw in 1..1200usize,
            c in prop::sample::select(vec![1usize, 3, 4, 8, 32, 48]),
            seed in 0u64..100,
            logistic: bool,
        ) {
            let x: Vec<f32> = data(seed, hw * c).iter().map(|v| v * 3.0 + 0.5).collect();
            let (s, b, r) = (data(seed + 1, c), data(seed + 2, c), data(seed + 3, hw * c));
            let (ep, act): (Epilogue, fn(f64) -> f64) = if logistic {
                (Epilogue::act(Act::Logistic), |y| 1.0 / (1.0 + (-y).exp()))
            } else {
                (Epilogue { residual: Some(&r), act: Act::Relu }, |y| y.max(0.0))
            };
            let out = run(&Par::new(1), &x, c, &s, &b, &ep);
            let residual = (!logistic).then_some(&r[..]);
            assert_close(&out, &reference(&x, c, &s, &b, residual, act));
        }
    }

    /// A hand-computed case: channel 0 is 1, 2, 3, 4 (mean 2.5, variance 1.25), channel 1 is
    /// constant (variance 0: the output is the bias); scale 2 and 1, bias 0.5 and -1, then a
    /// residual of 1 and ReLU.
    #[test]
    fn instance_norm_hand_computed() {
        let x = [1.0, 7.0, 2.0, 7.0, 3.0, 7.0, 4.0, 7.0];
        let ep = Epilogue {
            residual: Some(&[1.0; 8]),
            act: Act::Relu,
        };
        let out = run(&Par::new(1), &x, 2, &[2.0, 1.0], &[0.5, -1.0], &ep);
        let inv = 1.0 / (1.25f64 + 1e-5).sqrt();
        let ch0: Vec<f32> = [-1.5, -0.5, 0.5, 1.5]
            .iter()
            .map(|d| ((d * inv * 2.0 + 0.5 + 1.0) as f32).max(0.0))
            .collect();
        for p in 0..4 {
            assert!((out[2 * p] - ch0[p]).abs() <= 1e-6, "{out:?} {ch0:?}");
            assert_eq!(out[2 * p + 1], 0.0);
        }
    }

    /// The normalisation written into a reflect-padded image is, bit for bit, the dense
    /// normalisation padded by the pad kernel (checked against NumPy in `pad.rs`), with a
    /// residual and ReLU, on every thread count.
    #[test]
    fn padded_output_is_the_padded_dense_output() {
        use crate::ops::pad::{Fill, pad_with};
        for (h, w, c, rows, cols) in [
            (5, 7, 3, [1, 2], [3, 1]),
            (64, 64, 32, [1, 1], [1, 1]),
            (40, 33, 4, [4, 4], [4, 4]),
            (2, 2, 1, [0, 1], [1, 0]),
        ] {
            let x: Vec<f32> = data(7, h * w * c).iter().map(|v| v * 4.0 - 1.0).collect();
            let (s, b, r) = (data(8, c), data(9, c), data(10, h * w * c));
            let ep = Epilogue {
                residual: Some(&r),
                act: Act::Relu,
            };
            let dense = run(&Par::new(1), &x, c, &s, &b, &ep);
            let p = PaddedOutput { h, w, rows, cols };
            let [ph, pw] = p.padded_hw();
            let mut want = vec![f32::NAN; ph * pw * c];
            let pads = [(0, 0), (rows[0], rows[1]), (cols[0], cols[1]), (0, 0)];
            pad_with(
                &Par::new(1),
                &dense,
                &[1, h, w, c],
                &pads,
                Fill::Reflect,
                &mut want,
            );
            for threads in [1, 2, 3] {
                let mut got = vec![f32::NAN; want.len()];
                let par = Par::new(threads);
                instance_norm(
                    &par,
                    &x,
                    c,
                    Some(&s),
                    Some(&b),
                    1e-5,
                    &mut got,
                    &ep,
                    Some(p),
                );
                assert_eq!(got, want, "{p:?}, {threads} threads");
            }
        }
    }

    #[test]
    fn threads_give_the_same_result() {
        // 3000 pixels: twelve blocks of statistics, rows split over the pool.
        for c in [3, 12, 32] {
            let hw = 3000;
            let x: Vec<f32> = data(5, hw * c).iter().map(|v| v * 40.0 + 7.0).collect();
            let (s, b, r) = (data(6, c), data(8, c), data(9, hw * c));
            let ep = Epilogue {
                residual: Some(&r),
                act: Act::Relu,
            };
            let one = run(&Par::new(1), &x, c, &s, &b, &ep);
            assert_close(&one, &reference(&x, c, &s, &b, Some(&r), |y| y.max(0.0)));
            for threads in [2, 3, 5] {
                let many = run(&Par::new(threads), &x, c, &s, &b, &ep);
                assert_eq!(one, many, "{threads} threads, {c} channels");
            }
        }
    }
}
