//! MediaPipe's custom op `TransformLandmarks` (version 2), f32, batch 1, no allocation: applies
//! a 4×4 matrix to `[1, N, 2|3]` landmarks.
//!
//! The arithmetic follows MediaPipe's reference CPU kernel
//! (`mediapipe/util/tflite/operations/transform_landmarks.cc`) down to the evaluation order and the places where
//! C++ promotes to `double`, so results agree with it to the last bit or so (transcendental
//! functions come from the platform's libm in both).
//!
//! Dispatch: [`prepare`].

use heimdall_ir::TransformLandmarksAttrs;

use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

/// Computes `TransformLandmarks` (version 2): each landmark `(x, y[, z])` of `[1, N, D]`,
/// `D` ∈ {2, 3}, becomes `(m0·x + m1·y + m3, m4·x + m5·y + m7[, z])`, `z` copied unchanged.
///
/// Only the first two rows of `matrix` (16 values, row-major) are used. `out` has the shape of
/// `landmarks`.
///
/// # Panics
///
/// If `landmarks_shape` is not `[1, N, 2]` or `[1, N, 3]`, `matrix` holds fewer than 8 values,
/// or `landmarks`/`out` are shorter than `N·D`.
pub fn transform_landmarks(
    _attrs: &TransformLandmarksAttrs,
    landmarks: &[f32],
    landmarks_shape: &[usize],
    matrix: &[f32],
    out: &mut [f32],
) {
    assert!(
        landmarks_shape.len() == 3
            && landmarks_shape[0] == 1
            && (landmarks_shape[2] == 2 || landmarks_shape[2] == 3),
        "TransformLandmarks: landmarks shape {landmarks_shape:?} is not [1, N, 2|3]"
    );
    assert!(matrix.len() >= 8, "TransformLandmarks: matrix too short");
    let (n, d) = (landmarks_shape[1], landmarks_shape[2]);
    let src = &landmarks[..n * d];
    let dst = &mut out[..n * d];
    let [m0, m1, m2, m3, m4, m5, m6, m7] = [
        matrix[0], matrix[1], matrix[2], matrix[3], matrix[4], matrix[5], matrix[6], matrix[7],
    ];
    for (p, q) in src.chunks_exact(d).zip(dst.chunks_exact_mut(d)) {
        let (x, y) = (p[0], p[1]);
        // The point is (x, y, 0, 1): the third column meets a zero.
        q[0] = m0 * x + m1 * y + m2 * 0.0 + m3;
        q[1] = m4 * x + m5 * y + m6 * 0.0 + m7;
        if d == 3 {
            q[2] = p[2];
        }
    }
}

/// The transform of landmarks of a known shape.
struct TransformLandmarks {
    attrs: TransformLandmarksAttrs,
    shape: Vec<usize>,
}

impl Kernel for TransformLandmarks {
    fn run(&self, io: StepIo<'_>) {
        let (x, m) = (io.inputs.get(0), io.inputs.get(1));
        transform_landmarks(&self.attrs, x, &self.shape, m, io.out);
    }
}

/// Prepares a `TransformLandmarks`.
pub(crate) fn prepare(cx: &PrepareCx, a: &TransformLandmarksAttrs) -> Result<Prepared, String> {
    Ok(Prepared::new(TransformLandmarks {
        attrs: a.clone(),
        shape: cx.shape(0),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::mat;

    #[test]
    fn tl_rotate_scale_translate_2d() {
        // x' = -2y + 10, y' = 2x + 20 (rotation by 90°, scale 2, shift (10, 20)); the third
        // column (5, 7) meets z = 0 and the last two rows are ignored.
        let m = [
            0.0, -2.0, 5.0, 10.0, 2.0, 0.0, 7.0, 20.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0,
        ];
        let lm = [1.0, 2.0, -3.0, 0.5, 0.0, 0.0];
        let mut out = [f32::NAN; 6];
        transform_landmarks(&TransformLandmarksAttrs {}, &lm, &[1, 3, 2], &m, &mut out);
        // (1, 2) → (-4 + 10, 2 + 20) = (6, 22); (-3, 0.5) → (-1 + 10, -6 + 20) = (9, 14);
        // (0, 0) → (10, 20).
        assert_eq!(out, [6.0, 22.0, 9.0, 14.0, 10.0, 20.0]);
    }

    #[test]
    fn tl_3d_copies_z() {
        // x' = 0.5x + 0.25y + 1, y' = -x + 3y - 2; z is passed through untouched.
        let m = mat(0.5, 0.25, 1.0, -1.0, 3.0, -2.0);
        let lm = [4.0, 8.0, -7.5, 2.0, -2.0, 123.0];
        let mut out = [f32::NAN; 6];
        transform_landmarks(&TransformLandmarksAttrs {}, &lm, &[1, 2, 3], &m, &mut out);
        // (4, 8) → (2 + 2 + 1, -4 + 24 - 2) = (5, 18); (2, -2) → (1 - 0.5 + 1, -2 - 6 - 2)
        // = (1.5, -10).
        assert_eq!(out, [5.0, 18.0, -7.5, 1.5, -10.0, 123.0]);
    }
}
