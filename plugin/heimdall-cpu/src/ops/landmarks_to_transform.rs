//! MediaPipe's custom op `Landmarks2TransformMatrix` (version 2), f32, batch 1, no allocation:
//! landmarks `[1, N, 3]` → row-major 4×4 matrix that maps a pixel `(x, y)` of an
//! `output_width × output_height` crop to source coordinates.
//!
//! The arithmetic follows MediaPipe's reference CPU kernel
//! (`mediapipe/util/tflite/operations/landmarks_to_transform_matrix.cc`) down to the evaluation order and the places where
//! C++ promotes to `double`, so results agree with it to the last bit or so (transcendental
//! functions come from the platform's libm in both).
//!
//! Dispatch: [`prepare`].

use heimdall_ir::Landmarks2TransformMatrixAttrs;

use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

/// Computes `Landmarks2TransformMatrix` (version 2) into `out` (16 values, row-major 4×4).
///
/// With `L`/`R` the landmarks `left_rotation_idx`/`right_rotation_idx` (only `x, y` are read):
///
/// 1. `rotation = target_rotation_radians - atan2(R.y - L.y, R.x - L.x)`.
/// 2. The `subset_idxs` landmarks are rotated by `rotation` about the origin; their axis-aligned
///    box gives `w × h` and a middle point, which rotated back by `-rotation` is the centre `c`.
/// 3. With `r = -rotation`, `s_x = scale_x · w / output_width`, `s_y = scale_y · h /
///    output_height`, the result is
///    `Shift(c) · Rot(r) · Scale(s_x, s_y) · Shift(-output_width / 2, -output_height / 2)`, i.e.
///
/// ```text
/// [ cos r·s_x  -sin r·s_y  0  c.x - (cos r·s_x·ow/2 - sin r·s_y·oh/2) ]
/// [ sin r·s_x   cos r·s_y  0  c.y - (sin r·s_x·ow/2 + cos r·s_y·oh/2) ]
/// [ 0           0          1  0                                      ]
/// [ 0           0          0  1                                      ]
/// ```
///
/// so the crop's centre `(ow/2, oh/2)` maps to `c` and the crop's x axis runs along `L → R`
/// (turned by `target_rotation_radians`).
///
/// # Panics
///
/// If `landmarks_shape` is not `[1, N, 3]`, `landmarks` is shorter than `3·N`, an index in
/// `attrs` is `≥ N`, `subset_idxs` is empty or `out.len() != 16` (all excluded by
/// `heimdall_ir::ops::landmarks_to_transform::infer`).
pub fn landmarks_to_transform_matrix(
    attrs: &Landmarks2TransformMatrixAttrs,
    landmarks: &[f32],
    landmarks_shape: &[usize],
    out: &mut [f32],
) {
    assert!(
        landmarks_shape.len() == 3 && landmarks_shape[0] == 1 && landmarks_shape[2] == 3,
        "Landmarks2TransformMatrix: landmarks shape {landmarks_shape:?} is not [1, N, 3]"
    );
    let n = landmarks_shape[1];
    assert!(
        landmarks.len() >= 3 * n,
        "Landmarks2TransformMatrix: landmarks too short"
    );
    assert_eq!(
        out.len(),
        16,
        "Landmarks2TransformMatrix: output must hold 16 values"
    );
    let landmarks = &landmarks[..3 * n];
    let xy = |i: usize| (landmarks[3 * i], landmarks[3 * i + 1]);

    // Rotation that brings the left→right axis to the target angle.
    let (lx, ly) = xy(attrs.left_rotation_idx);
    let (rx, ry) = xy(attrs.right_rotation_idx);
    let rotation = attrs.target_rotation_radians - (ry - ly).atan2(rx - lx);

    // Axis-aligned box of the subset after rotating it by `rotation`. Strict comparisons from the
    // first point, as in MediaPipe (a NaN coordinate is skipped unless it is the first).
    let (cos_a, sin_a) = (rotation.cos(), rotation.sin());
    let rotate = |(x, y): (f32, f32)| (cos_a * x + -sin_a * y, sin_a * x + cos_a * y);
    let (first, rest) = attrs
        .subset_idxs
        .split_first()
        .expect("Landmarks2TransformMatrix: subset_idxs is empty");
    let (mut min_x, mut min_y) = rotate(xy(*first));
    let (mut max_x, mut max_y) = (min_x, min_y);
    for &i in rest {
        let (x, y) = rotate(xy(i));
        if max_x < x {
            max_x = x;
        }
        if max_y < y {
            max_y = y;
        }
        if min_x > x {
            min_x = x;
        }
        if min_y > y {
            min_y = y;
        }
    }
    let crop_w = max_x - min_x;
    let crop_h = max_y - min_y;
    let mid_x = (min_x + max_x) / 2.0;
    let mid_y = (min_y + max_y) / 2.0;
    // Middle of the box, rotated back into source coordinates.
    let (cos_b, sin_b) = ((-rotation).cos(), (-rotation).sin());
    let centre_x = cos_b * mid_x + -sin_b * mid_y;
    let centre_y = sin_b * mid_x + cos_b * mid_y;

    // Shift(centre) · Rot(r) · Scale(s) · Shift(-out/2), r = -rotation, multiplied out. Each
    // entry is rounded the way the step-by-step 4×4 products round it.
    let r = -rotation;
    let (cos_r, sin_r) = (r.cos(), r.sin());
    let s_x = attrs.scale_x * crop_w / attrs.output_width as f32;
    let s_y = attrs.scale_y * crop_h / attrs.output_height as f32;
    let half_w = -((attrs.output_width as f64 / 2.0) as f32);
    let half_h = -((attrs.output_height as f64 / 2.0) as f32);
    let m00 = cos_r * s_x;
    let m01 = -sin_r * s_y;
    let m10 = sin_r * s_x;
    let m11 = cos_r * s_y;
    let m03 = m00 * half_w + m01 * half_h + centre_x;
    let m13 = m10 * half_w + m11 * half_h + centre_y;
    out.copy_from_slice(&[
        m00, m01, 0.0, m03, //
        m10, m11, 0.0, m13, //
        0.0, 0.0, 1.0, 0.0, //
        0.0, 0.0, 0.0, 1.0,
    ]);
}

/// The matrix of landmarks of a known shape.
struct LandmarksToTransform {
    attrs: Landmarks2TransformMatrixAttrs,
    shape: Vec<usize>,
}

impl Kernel for LandmarksToTransform {
    fn run(&self, io: StepIo<'_>) {
        landmarks_to_transform_matrix(&self.attrs, io.inputs.get(0), &self.shape, io.out);
    }
}

/// Prepares a `Landmarks2TransformMatrix`.
pub(crate) fn prepare(
    cx: &PrepareCx,
    a: &Landmarks2TransformMatrixAttrs,
) -> Result<Prepared, String> {
    Ok(Prepared::new(LandmarksToTransform {
        attrs: a.clone(),
        shape: cx.shape(0),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::{close, mat};
    use crate::ops::transform_landmarks::transform_landmarks;
    use crate::ops::transform_tensor_bilinear::transform_tensor_bilinear;
    use heimdall_ir::{TransformLandmarksAttrs, TransformTensorBilinearAttrs};

    fn l2tm_attrs(
        subset: &[usize],
        out_h: usize,
        out_w: usize,
        sx: f32,
        sy: f32,
        target: f32,
    ) -> Landmarks2TransformMatrixAttrs {
        Landmarks2TransformMatrixAttrs {
            subset_idxs: subset.to_vec(),
            left_rotation_idx: 0,
            right_rotation_idx: 1,
            target_rotation_radians: target,
            output_height: out_h,
            output_width: out_w,
            scale_x: sx,
            scale_y: sy,
        }
    }

    /// Landmarks: 0 = left, 1 = right end of the axis, 2..6 = the corners of a rectangle with
    /// half-sizes `a` (along the axis) and `b` (across), centred on `c`, the axis turned by
    /// `theta`; 6 = a decoy far away that is not in the subset.
    fn rotated_rect(c: (f32, f32), a: f32, b: f32, theta: f64) -> Vec<f32> {
        let (s, co) = theta.sin_cos();
        let p = |u: f64, v: f64| {
            [
                (f64::from(c.0) + co * u - s * v) as f32,
                (f64::from(c.1) + s * u + co * v) as f32,
                0.0,
            ]
        };
        let (a, b) = (f64::from(a), f64::from(b));
        [
            p(-a, 0.0),
            p(a, 0.0),
            p(a, b),
            p(-a, b),
            p(-a, -b),
            p(a, -b),
            [1000.0, -1000.0, 0.0],
        ]
        .concat()
    }

    fn l2tm(attrs: &Landmarks2TransformMatrixAttrs, lm: &[f32]) -> [f32; 16] {
        let mut out = [f32::NAN; 16];
        landmarks_to_transform_matrix(attrs, lm, &[1, lm.len() / 3, 3], &mut out);
        out
    }

    #[test]
    fn l2tm_square_rotated_30_degrees() {
        // Square of side 8 (a = b = 4) centred on (20, 12), axis at θ = 30°; the real model's
        // options: 16×16 crop, scale 1.5, target 0. Rotating by -30° makes the square
        // axis-aligned: w = h = 8, centre (20, 12). s = 1.5·8/16 = 0.75, r = 30°:
        //   m00 = cos30·0.75 = 0.649519, m01 = -sin30·0.75 = -0.375,
        //   m10 = 0.375,                 m11 = 0.649519,
        //   m03 = 20 - 8·0.649519 + 8·0.375 = 17.803848,
        //   m13 = 12 - 8·0.375 - 8·0.649519 = 3.803848.
        let lm = rotated_rect((20.0, 12.0), 4.0, 4.0, 30f64.to_radians());
        let got = l2tm(&l2tm_attrs(&[2, 3, 4, 5], 16, 16, 1.5, 1.5, 0.0), &lm);
        let want = [
            0.649519, -0.375, 0.0, 17.803848, //
            0.375, 0.649519, 0.0, 3.803848, //
            0.0, 0.0, 1.0, 0.0, //
            0.0, 0.0, 0.0, 1.0,
        ];
        close(&got, &want, 2e-6);
        // The axis landmarks inside the subset do not change the box (they lie on its edges'
        // midlines), and an odd-length subset works the same.
        let got = l2tm(
            &l2tm_attrs(&[0, 1, 2, 3, 4, 5, 5], 16, 16, 1.5, 1.5, 0.0),
            &lm,
        );
        close(&got, &want, 2e-6);
    }

    #[test]
    fn l2tm_rectangle_rotated_90_degrees_anisotropic() {
        // Axis along +y (θ = 90°): a = 4 along it, b = 2 across, centre (30, 40). After rotating
        // by -90° the box is w = 2a = 8 by h = 2b = 4. 16 wide × 8 high crop, scale_x = 1.5,
        // scale_y = 2: s_x = 1.5·8/16 = 0.75, s_y = 2·4/8 = 1. r = 90°:
        //   m00 = 0, m01 = -1, m03 = 30 - (0·8 - 1·4) = 34,
        //   m10 = 0.75, m11 = 0, m13 = 40 - (0.75·8 + 0·4) = 34.
        let lm = rotated_rect((30.0, 40.0), 4.0, 2.0, 90f64.to_radians());
        let got = l2tm(&l2tm_attrs(&[2, 3, 4, 5], 8, 16, 1.5, 2.0, 0.0), &lm);
        let want = [
            0.0, -1.0, 0.0, 34.0, //
            0.75, 0.0, 0.0, 34.0, //
            0.0, 0.0, 1.0, 0.0, //
            0.0, 0.0, 0.0, 1.0,
        ];
        close(&got, &want, 1e-5);
        // The crop centre (8, 4) maps to the rectangle's centre.
        let mut c = [0.0f32; 2];
        transform_landmarks(
            &TransformLandmarksAttrs {},
            &[8.0, 4.0],
            &[1, 1, 2],
            &got,
            &mut c,
        );
        close(&c, &[30.0, 40.0], 1e-5);
    }

    #[test]
    fn l2tm_target_rotation_cancels_axis_rotation() {
        // Same rectangle, axis at 90°, but target 90°: rotation = 90° - 90° = 0, so the box is
        // taken in source axes: w = 2b = 4, h = 2a = 8, centre (30, 40). 16×16 crop, scales 1:
        //   s_x = 4/16 = 0.25, s_y = 8/16 = 0.5, matrix = [[0.25, 0, 30 - 2], [0, 0.5, 40 - 4]].
        let lm = rotated_rect((30.0, 40.0), 4.0, 2.0, 90f64.to_radians());
        let target = std::f32::consts::FRAC_PI_2;
        let got = l2tm(&l2tm_attrs(&[2, 3, 4, 5], 16, 16, 1.0, 1.0, target), &lm);
        let want = [
            0.25, 0.0, 0.0, 28.0, //
            0.0, 0.5, 0.0, 36.0, //
            0.0, 0.0, 1.0, 0.0, //
            0.0, 0.0, 0.0, 1.0,
        ];
        close(&got, &want, 1e-5);
    }

    #[test]
    fn l2tm_then_warp_samples_the_rotated_square() {
        // End to end: a 48×48 one-channel image that is 1 on source pixels x ∈ 17..=24,
        // y ∈ 9..=16 and 0 elsewhere; the landmark square has side 8, centre (20.5, 12.5), axis at
        // 0°, so its corners are x ∈ [16.5, 24.5], y ∈ [8.5, 16.5]. Scale 1, 8×8 crop.
        let lm = rotated_rect((20.5, 12.5), 4.0, 4.0, 0.0);
        let attrs = l2tm_attrs(&[2, 3, 4, 5], 8, 8, 1.0, 1.0, 0.0);
        let m = l2tm(&attrs, &lm);
        // s = 8/8 = 1, r = 0: pure translation by c - 4 = (16.5, 8.5).
        close(&m, &mat(1.0, 0.0, 16.5, 0.0, 1.0, 8.5), 1e-6);
        let mut img = vec![0.0f32; 48 * 48];
        for y in 9..17 {
            for x in 17..25 {
                img[y * 48 + x] = 1.0;
            }
        }
        let mut out = vec![f32::NAN; 64];
        let tattrs = TransformTensorBilinearAttrs {
            output_height: 8,
            output_width: 8,
        };
        transform_tensor_bilinear(&tattrs, &img, &[1, 48, 48, 1], &m, &mut out, &[1, 8, 8, 1]);
        // Correction (1 + 0 - 1)/2 = 0: crop pixel (x, y) samples (x + 16.5, y + 8.5), halfway
        // between two source pixels. Column 0 mixes pixel 16 (0) and 17 (1) → 0.5, columns 1..8
        // mix two 1s; likewise row 0 → 0.5. So out = (x == 0 ? ½ : 1) · (y == 0 ? ½ : 1).
        for y in 0..8 {
            for x in 0..8 {
                let wx = if x == 0 { 0.5 } else { 1.0 };
                let wy = if y == 0 { 0.5 } else { 1.0 };
                close(&[out[y * 8 + x]], &[wx * wy], 1e-6);
            }
        }
    }
}
