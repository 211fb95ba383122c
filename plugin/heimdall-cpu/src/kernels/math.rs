//! Element-wise functions applied by a closure (ONNX math and activations beyond the fused
//! epilogue ones): the executor picks the function, the kernel maps it over the tensor.

use super::Par;

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
    par.for_rows(output, 1, 1 << 15, |rows, out| f(&input[rows], out));
}

/// The Gauss error function, to about 2e-7 absolute (and 1e-6 relative near 0): a Taylor series
/// for `|x| < 0.5`, Abramowitz & Stegun 7.1.26 (one `exp`) above.
pub fn erf(x: f32) -> f32 {
    let a = x.abs();
    if a < 0.5 {
        let x2 = x * x;
        // 2/sqrt(pi) * (x - x^3/3 + x^5/10 - x^7/42 + x^9/216 - x^11/1320)
        let p = 1.0
            + x2 * (-1.0 / 3.0
                + x2 * (1.0 / 10.0 + x2 * (-1.0 / 42.0 + x2 * (1.0 / 216.0 - x2 / 1320.0))));
        return std::f32::consts::FRAC_2_SQRT_PI * x * p;
    }
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_7 + t * (-1.453_152_1 + t * 1.061_405_4))));
    let y = 1.0 - poly * (-a * a).exp();
    y.copysign(x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::data;

    #[test]
    fn map_and_erf_match_reference() {
        let x: Vec<f32> = data(3, 70_000).iter().map(|v| v * 4.0).collect();
        let mut out = vec![0.0; x.len()];
        map(&Par::new(2), &x, &mut out, &*slice_fn(erf));
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
