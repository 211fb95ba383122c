//! Error metrics of the workspace's tests, written once: every test that compares tensors uses
//! one of these three.
//!
//! - [`rel_l2`]: `||out - ref|| / ||ref||`, the metric of the goldens and of most kernel tests.
//! - [`rel_l2_floored`]: the same with a floor on the denominator (an RMS per value), for
//!   references whose norm is near zero (sigmoid flags of about 1e-4 in the GPU golden suites).
//! - [`rel_l2_scaled`]: the error relative to the larger of the reference's norm and the norm of
//!   the same computation on absolute values (sums whose terms cancel).
//!
//! All three accumulate in f64 and panic on tensors of different lengths.

/// `(||out - reference||, ||reference||)`, accumulated in f64.
fn diff_and_norm(out: &[f32], reference: &[f32]) -> (f64, f64) {
    assert_eq!(
        out.len(),
        reference.len(),
        "comparing tensors of different sizes"
    );
    let (mut num, mut den) = (0f64, 0f64);
    for (&a, &b) in out.iter().zip(reference) {
        num += (a as f64 - b as f64).powi(2);
        den += (b as f64).powi(2);
    }
    (num.sqrt(), den.sqrt())
}

/// Relative L2 error `||out - reference|| / ||reference||`. Against an all-zero reference the
/// error is absolute (`||out||`), so it is 0 only when `out` is all zero too. NaN anywhere in
/// `out` gives NaN (which fails every `err <= bound` check).
pub fn rel_l2(out: &[f32], reference: &[f32]) -> f64 {
    let (diff, norm) = diff_and_norm(out, reference);
    if norm == 0.0 { diff } else { diff / norm }
}

/// Relative L2 error with an absolute floor: the denominator is at least `floor_rms` per value
/// (`floor_rms · sqrt(len)`), so references whose values are all near zero (sigmoid flags of
/// about 1e-4) are compared absolutely at that scale instead of relatively.
pub fn rel_l2_floored(out: &[f32], reference: &[f32], floor_rms: f64) -> f64 {
    let (diff, norm) = diff_and_norm(out, reference);
    let floor = floor_rms * (reference.len() as f64).sqrt();
    let den = norm.max(floor);
    if den == 0.0 { diff } else { diff / den }
}

/// `||out - reference|| / max(||reference||, ||scale||)`, where `scale` is the same
/// computation on absolute values: a sum whose terms cancel (a dot product of random signs, a
/// mean of zero-mean data landing near zero) has a small result but carries the rounding of its
/// large terms, so its error is measured against the norm-wise bound of the sum.
pub fn rel_l2_scaled(out: &[f32], reference: &[f32], scale: &[f32]) -> f64 {
    let (diff, norm) = diff_and_norm(out, reference);
    let (_, scale_norm) = diff_and_norm(scale, scale);
    let den = norm.max(scale_norm);
    if den == 0.0 { diff } else { diff / den }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_absolute_and_floored() {
        assert_eq!(rel_l2(&[1.0, 2.0], &[1.0, 2.0]), 0.0);
        assert!((rel_l2(&[3.0, 4.0], &[0.0, 8.0]) - 5.0 / 8.0).abs() < 1e-12);
        // An all-zero reference compares absolutely.
        assert_eq!(rel_l2(&[3.0, 4.0], &[0.0, 0.0]), 5.0);
        assert_eq!(rel_l2(&[0.0, 0.0], &[0.0, 0.0]), 0.0);
        assert!(rel_l2(&[f32::NAN], &[1.0]).is_nan());
        // A floor of 1 per value over 4 values: the denominator is 2, not 1e-4.
        let err = rel_l2_floored(&[0.0, 0.0, 0.0, 1e-4], &[0.0, 0.0, 0.0, 2e-4], 1.0);
        assert!((err - 0.5e-4).abs() < 1e-9, "{err}");
        // Above the floor it is the plain relative error.
        assert_eq!(rel_l2_floored(&[3.0, 4.0], &[0.0, 8.0], 1e-3), 5.0 / 8.0);
        // Scaled: the larger norm wins.
        assert_eq!(rel_l2_scaled(&[1.0], &[0.5], &[2.0]), 0.25);
    }

    #[test]
    #[should_panic(expected = "different sizes")]
    fn lengths_must_match() {
        rel_l2(&[1.0], &[1.0, 2.0]);
    }
}
