//! Element-wise functions of one tensor: the TFLite activations (ReLU, ReLU6, ReLU-1..1,
//! logistic, hard-swish, tanh), applied as an epilogue over the copied input, and the ONNX
//! math functions, applied by a closure chosen at compile time (one dynamic call per slice, so
//! the loop inside is monomorphic and vectorisable).
//!
//! Dispatch: [`prepare`] picks the activation or the closure.

use heimdall_ir::UnaryKind;

use crate::kernels::{Act, Epilogue, Par, vmath};
use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

/// Values a part must have at least before the rows are split over threads
/// (about 3 µs of one core's time: a job costs the pool ~1 µs when its threads spin, and a
/// thread's parts are the rows it wrote in the op before, `crate::kernels::threads`).
const MIN_VALUES_PER_PART: usize = 1 << 13;

/// `output = ep(input)`: a standalone activation (put it in `ep.act`), optionally with a
/// residual. `channels` is the innermost dimension (for per-channel PReLU alphas).
pub fn activation(par: &Par, input: &[f32], output: &mut [f32], channels: usize, ep: &Epilogue) {
    debug_assert_eq!(input.len(), output.len());
    let channels = channels.max(1);
    let min_rows = MIN_VALUES_PER_PART.div_ceil(channels);
    par.for_rows(output, channels, min_rows, |rows, out| {
        let start = rows.start * channels;
        let piece = (4096 / channels).max(1) * channels;
        for (i, chunk) in out.chunks_mut(piece).enumerate() {
            let off = start + i * piece;
            chunk.copy_from_slice(&input[off..off + chunk.len()]);
            ep.apply(chunk, off, channels);
        }
    });
}

/// A scalar function applied to a whole slice (one dynamic call per slice, so the loop
/// inside is monomorphic and vectorisable).
pub type SliceFn = dyn Fn(&[f32], &mut [f32]) + Send + Sync;

/// Wraps a scalar function as a [`SliceFn`].
pub fn slice_fn(f: impl Fn(f32) -> f32 + Send + Sync + 'static) -> Box<SliceFn> {
    Box::new(move |x: &[f32], y: &mut [f32]| {
        for (o, v) in y.iter_mut().zip(x) {
            *o = f(*v);
        }
    })
}

/// `output[i] = f(input[i])`, split over [`Par`].
pub fn map(par: &Par, input: &[f32], output: &mut [f32], f: &SliceFn) {
    debug_assert_eq!(input.len(), output.len());
    par.for_rows(output, 1, MIN_VALUES_PER_PART, |rows, out| {
        f(&input[rows], out)
    });
}

/// The function of an element-wise op, applied slice by slice.
fn slice_fn_of(f: UnaryKind) -> Box<SliceFn> {
    match f {
        UnaryKind::Clip { min, max } => slice_fn(move |x| x.max(min).min(max)),
        UnaryKind::LeakyRelu { alpha } => slice_fn(move |x| if x >= 0.0 { x } else { alpha * x }),
        UnaryKind::HardSigmoid { alpha, beta } => {
            slice_fn(move |x| (alpha * x + beta).clamp(0.0, 1.0))
        }
        UnaryKind::Elu { alpha } => {
            slice_fn(move |x| if x >= 0.0 { x } else { alpha * x.exp_m1() })
        }
        UnaryKind::Erf => Box::new(vmath::erf_slice),
        UnaryKind::Gelu => Box::new(vmath::gelu_slice),
        UnaryKind::Sqrt => slice_fn(f32::sqrt),
        UnaryKind::Exp => slice_fn(f32::exp),
        UnaryKind::Log => slice_fn(f32::ln),
        UnaryKind::Abs => slice_fn(f32::abs),
        UnaryKind::Neg => slice_fn(|x: f32| -x),
        UnaryKind::Reciprocal => slice_fn(f32::recip),
        UnaryKind::Floor => slice_fn(f32::floor),
        UnaryKind::Ceil => slice_fn(f32::ceil),
        UnaryKind::Softplus => slice_fn(|x: f32| if x > 20.0 { x } else { x.exp().ln_1p() }),
        UnaryKind::Softsign => slice_fn(|x: f32| x / (1.0 + x.abs())),
        UnaryKind::Identity => slice_fn(|x| x),
        UnaryKind::Relu
        | UnaryKind::Relu6
        | UnaryKind::ReluN1To1
        | UnaryKind::Logistic
        | UnaryKind::HardSwish
        | UnaryKind::Tanh => unreachable!("{} runs as an activation", f.name()),
    }
}

/// A TFLite activation on its own.
struct Activation {
    act: Act<'static>,
    channels: usize,
}

impl Kernel for Activation {
    fn run(&self, io: StepIo<'_>) {
        activation(
            io.par,
            io.inputs.get(0),
            io.out,
            self.channels,
            &Epilogue::act(self.act),
        );
    }
}

/// An element-wise function applied by a closure.
struct Map(Box<SliceFn>);

impl Kernel for Map {
    fn run(&self, io: StepIo<'_>) {
        map(io.par, io.inputs.get(0), io.out, &*self.0);
    }
}

/// Prepares an element-wise function.
pub(crate) fn prepare(cx: &PrepareCx, f: UnaryKind) -> Result<Prepared, String> {
    Ok(match Act::of(f) {
        Some(act) => Prepared::new(Activation {
            act,
            channels: cx.out_shape().last().copied().unwrap_or(1),
        }),
        None => Prepared::new(Map(slice_fn_of(f))),
    })
}

#[cfg(test)]
mod activation_tests {
    use super::*;
    use crate::kernels::Act;

    #[test]
    fn activations_hand_computed() {
        let x = [-4.0f32, -1.0, -0.5, 0.0, 0.5, 3.0, 7.0];
        let run = |act: Act| {
            let mut out = [0.0; 7];
            activation(&Par::new(1), &x, &mut out, 7, &Epilogue::act(act));
            out
        };
        assert_eq!(run(Act::Relu), [0.0, 0.0, 0.0, 0.0, 0.5, 3.0, 7.0]);
        assert_eq!(run(Act::Relu6), [0.0, 0.0, 0.0, 0.0, 0.5, 3.0, 6.0]);
        assert_eq!(run(Act::ReluN1To1), [-1.0, -1.0, -0.5, 0.0, 0.5, 1.0, 1.0]);
        assert_eq!(
            run(Act::HardSwish),
            [
                0.0,
                -2.0 / 6.0,
                -0.5 * 2.5 / 6.0,
                0.0,
                0.5 * 3.5 / 6.0,
                3.0,
                7.0
            ]
        );
        let l = run(Act::Logistic);
        assert!((l[3] - 0.5).abs() < 1e-7 && (l[5] - 0.952_574_1).abs() < 1e-6);
        let t = run(Act::Tanh);
        assert!((t[1] + 0.761_594_2).abs() < 1e-6);
        let alpha = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7];
        assert_eq!(
            run(Act::Prelu(&alpha)),
            [-0.4, -0.2, -0.15, 0.0, 0.5, 3.0, 7.0]
        );
        assert_eq!(
            run(Act::Prelu(&[0.5])),
            [-2.0, -0.5, -0.25, 0.0, 0.5, 3.0, 7.0]
        );
    }
}

#[cfg(test)]
mod math_tests {
    use super::*;
    use crate::kernels::testutil::data;

    #[test]
    fn map_and_erf_match_reference() {
        let x: Vec<f32> = data(3, 70_000).iter().map(|v| v * 4.0).collect();
        let mut out = vec![0.0; x.len()];
        map(&Par::new(2), &x, &mut out, &vmath::erf_slice);
        for (o, v) in out.iter().zip(&x) {
            // Reference: the Abramowitz-Stegun series in f64 (converges for |x| <= 4).
            let v = *v as f64;
            let mut term = v;
            let mut sum = v;
            for n in 1..200 {
                term *= -v * v / n as f64;
                sum += term / (2 * n + 1) as f64;
            }
            let reference = 2.0 / std::f64::consts::PI.sqrt() * sum;
            assert!(
                (*o as f64 - reference).abs() < 1e-6,
                "erf({v}) = {o}, expected {reference}"
            );
        }
    }
}
