//! CPU kernels of the MediaPipe custom ops (version 2), f32, batch 1, no allocation.
//!
//! * [`landmarks_to_transform_matrix`]: landmarks `[1, N, 3]` → row-major 4×4 matrix that maps a
//!   pixel `(x, y)` of an `output_width × output_height` crop to source coordinates.
//! * [`transform_tensor_bilinear`]: warps an NHWC tensor through such a matrix, bilinear, with
//!   MediaPipe's version-2 pixel-centre correction, zero for samples outside the source.
//! * [`transform_landmarks`]: applies such a matrix to `[1, N, 2|3]` landmarks.
//!
//! The arithmetic follows MediaPipe's reference CPU kernels
//! (`mediapipe/util/tflite/operations/{landmarks_to_transform_matrix,transform_tensor_bilinear,
//! transform_landmarks}.cc`) down to the evaluation order and the places where C++ promotes to
//! `double`, so results agree with them to the last bit or so (transcendental functions come from
//! the platform's libm in both).

use heimdall_ir::{
    Landmarks2TransformMatrixAttrs, TransformLandmarksAttrs, TransformTensorBilinearAttrs,
};

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
/// `heimdall_ir::mediapipe::landmarks_to_transform_matrix_output_shape`).
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

/// Computes `TransformTensorBilinear` (version 2): `out[0, y, x, c]` samples `input` at the
/// source point the matrix assigns to output pixel `(x, y)`.
///
/// Only the first two rows of `matrix` (16 values, row-major) are used. Version 2 treats pixels
/// as unit squares: it applies the matrix to the pixel centre `(x + ½, y + ½)` and subtracts ½
/// again, i.e. the source point is
/// `(m0·x + m1·y + m3 + (m0 + m1 - 1)/2,  m4·x + m5·y + m7 + (m4 + m5 - 1)/2)`.
/// If that point lies outside `[0, W-1] × [0, H-1]` (or is NaN) the output pixel is 0 in every
/// channel; otherwise it is the bilinear mix of the 4 surrounding source pixels, a neighbour
/// beyond the last row/column (only reached with weight 0, on the boundary) counting as 0.
///
/// `out_shape` (`[1, out_h, out_w, C]`) sets the output size, as in MediaPipe; `attrs` is
/// only used by shape inference.
///
/// # Panics
///
/// If `input_shape` is not `[1, H, W, C]`, `out_shape` not `[1, _, _, C]`, `matrix` holds fewer
/// than 8 values, or a buffer is shorter than its shape.
pub fn transform_tensor_bilinear(
    _attrs: &TransformTensorBilinearAttrs,
    input: &[f32],
    input_shape: &[usize],
    matrix: &[f32],
    out: &mut [f32],
    out_shape: &[usize],
) {
    assert!(
        input_shape.len() == 4 && input_shape[0] == 1,
        "TransformTensorBilinear: input shape {input_shape:?} is not [1, H, W, C]"
    );
    assert!(
        out_shape.len() == 4 && out_shape[0] == 1 && out_shape[3] == input_shape[3],
        "TransformTensorBilinear: output shape {out_shape:?} does not match input {input_shape:?}"
    );
    let (in_h, in_w, ch) = (input_shape[1], input_shape[2], input_shape[3]);
    let (out_h, out_w) = (out_shape[1], out_shape[2]);
    let input = &input[..in_h * in_w * ch];
    let out = &mut out[..out_h * out_w * ch];
    assert!(
        matrix.len() >= 8,
        "TransformTensorBilinear: matrix too short"
    );

    // Pixel-centre correction folded into the translation column (computed in double, as the
    // C++ `+=` with double constants does).
    let [m0, m1, m2, m3, m4, m5, m6, m7] = [
        matrix[0], matrix[1], matrix[2], matrix[3], matrix[4], matrix[5], matrix[6], matrix[7],
    ];
    let m3 = (f64::from(m3) + (f64::from(m0) * 0.5 + f64::from(m1) * 0.5 - 0.5)) as f32;
    let m7 = (f64::from(m7) + (f64::from(m4) * 0.5 + f64::from(m5) * 0.5 - 0.5)) as f32;
    let max_x = (in_w - 1) as f32;
    let max_y = (in_h - 1) as f32;
    let row = in_w * ch;

    for (oy, out_row) in out.chunks_exact_mut(out_w * ch).enumerate() {
        let y = oy as f32;
        for (ox, px) in out_row.chunks_exact_mut(ch).enumerate() {
            let x = ox as f32;
            let sx = m0 * x + m1 * y + m2 * 0.0 + m3;
            let sy = m4 * x + m5 * y + m6 * 0.0 + m7;
            // Written so that NaN lands in the zero branch.
            let inside = sx >= 0.0 && sx <= max_x && sy >= 0.0 && sy <= max_y;
            if !inside {
                px.fill(0.0);
                continue;
            }
            let (fx, fy) = (sx.floor(), sy.floor());
            let (wx, wy) = (sx - fx, sy - fy);
            let (x0, y0) = (fx as usize, fy as usize);
            let has_right = x0 + 1 < in_w;
            let has_below = y0 + 1 < in_h;
            // Offsets of the four corners; a missing right/lower neighbour reads as 0.
            let i11 = y0 * row + x0 * ch;
            let i12 = i11 + row;
            let (wx64, wy64) = (f64::from(wx), f64::from(wy));
            for (c, o) in px.iter_mut().enumerate() {
                let q11 = input[i11 + c];
                let q21 = if has_right { input[i11 + ch + c] } else { 0.0 };
                let q12 = if has_below { input[i12 + c] } else { 0.0 };
                let q22 = if has_below && has_right {
                    input[i12 + ch + c]
                } else {
                    0.0
                };
                // `(1.0 - w) * q` is a double product in the C++ source, `w * q` a float one.
                let upper = ((1.0 - wx64) * f64::from(q11) + f64::from(wx * q21)) as f32;
                let lower = ((1.0 - wx64) * f64::from(q12) + f64::from(wx * q22)) as f32;
                *o = (f64::from(wy * lower) + (1.0 - wy64) * f64::from(upper)) as f32;
            }
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: &[f32], want: &[f32], tol: f32) {
        assert_eq!(got.len(), want.len(), "length: got {got:?}, want {want:?}");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                (g - w).abs() <= tol * (1.0 + w.abs()),
                "element {i}: got {g}, want {w}\n got  {got:?}\n want {want:?}"
            );
        }
    }

    // ---------------------------------------------------------------- TransformTensorBilinear

    /// 3×4 image (H = 3, W = 4), 2 channels: channel 0 is `10·y + x`, channel 1 is `B[y][x]`.
    const B: [[f32; 4]; 3] = [
        [1.0, 5.0, 2.0, 8.0],
        [3.0, 0.0, 7.0, 4.0],
        [6.0, 9.0, 1.0, 2.0],
    ];

    fn image() -> Vec<f32> {
        let mut v = Vec::new();
        for (y, row) in B.iter().enumerate() {
            for (x, &b) in row.iter().enumerate() {
                v.push(10.0 * y as f32 + x as f32);
                v.push(b);
            }
        }
        v
    }

    fn mat(m0: f32, m1: f32, m3: f32, m4: f32, m5: f32, m7: f32) -> [f32; 16] {
        [
            m0, m1, 0.0, m3, m4, m5, 0.0, m7, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0,
        ]
    }

    fn warp(m: &[f32], out_h: usize, out_w: usize) -> Vec<f32> {
        let attrs = TransformTensorBilinearAttrs {
            output_height: out_h,
            output_width: out_w,
        };
        let mut out = vec![f32::NAN; out_h * out_w * 2];
        transform_tensor_bilinear(
            &attrs,
            &image(),
            &[1, 3, 4, 2],
            m,
            &mut out,
            &[1, out_h, out_w, 2],
        );
        out
    }

    /// Pixel (y, x) of a 2-channel result.
    fn px(v: &[f32], w: usize, y: usize, x: usize) -> [f32; 2] {
        [v[(y * w + x) * 2], v[(y * w + x) * 2 + 1]]
    }

    #[test]
    fn ttb_identity_copies_and_zero_pads() {
        // Identity: correction m3 += (1 + 0 - 1)/2 = 0, so pixel (x, y) samples (x, y) exactly.
        // A 4×5 output over the 3×4 image: row 3 and column 4 fall outside → 0.
        let out = warp(&mat(1.0, 0.0, 0.0, 0.0, 1.0, 0.0), 4, 5);
        for y in 0..4 {
            for x in 0..5 {
                let want = match B.get(y).and_then(|r| r.get(x)) {
                    Some(&b) => [10.0 * y as f32 + x as f32, b],
                    None => [0.0, 0.0],
                };
                assert_eq!(px(&out, 5, y, x), want, "pixel y={y} x={x}");
            }
        }
    }

    #[test]
    fn ttb_translation_bilinear_weights() {
        // Source point = (x + 0.5, y + 0.25) (correction is 0 for a unit linear part).
        let out = warp(&mat(1.0, 0.0, 0.5, 0.0, 1.0, 0.25), 3, 4);
        // (0, 0) → (0.5, 0.25): channel 1 corners q11 = 1, q21 = 5, q12 = 3, q22 = 0;
        // upper = 0.5·1 + 0.5·5 = 3, lower = 0.5·3 + 0.5·0 = 1.5, result = 0.75·3 + 0.25·1.5
        // = 2.625. Channel 0 is linear: 10·0.25 + 0.5 = 3.
        close(&px(&out, 4, 0, 0), &[3.0, 2.625], 1e-6);
        // (x=2, y=1) → (2.5, 1.25): q11 = B[1][2] = 7, q21 = B[1][3] = 4, q12 = B[2][2] = 1,
        // q22 = B[2][3] = 2; upper = 5.5, lower = 1.5, result = 0.75·5.5 + 0.25·1.5 = 4.5.
        // Channel 0: 12.5 + 2.5 = 15.
        close(&px(&out, 4, 1, 2), &[15.0, 4.5], 1e-6);
        // x = 3 → source x = 3.5 > W - 1 = 3: zero. y = 2 → source y = 2.25 > 2: zero.
        assert_eq!(px(&out, 4, 0, 3), [0.0, 0.0]);
        assert_eq!(px(&out, 4, 2, 0), [0.0, 0.0]);
        assert_eq!(px(&out, 4, 2, 3), [0.0, 0.0]);
    }

    #[test]
    fn ttb_negative_translation_is_out_of_bounds() {
        // Source point = (x - 0.5, y): column 0 samples x = -0.5 < 0 → zero.
        let out = warp(&mat(1.0, 0.0, -0.5, 0.0, 1.0, 0.0), 1, 2);
        assert_eq!(px(&out, 2, 0, 0), [0.0, 0.0]);
        // (1, 0) → (0.5, 0): 0.5·1 + 0.5·5 = 3 (channel 1), 0.5 (channel 0).
        close(&px(&out, 2, 0, 1), &[0.5, 3.0], 1e-6);
    }

    #[test]
    fn ttb_right_and_bottom_edges_are_inclusive() {
        // One output pixel sampling (3, 0.5): x = W - 1 exactly, so the right neighbours are
        // outside but weigh 0: 0.5·B[0][3] + 0.5·B[1][3] = 0.5·8 + 0.5·4 = 6; channel 0: 8.
        let out = warp(&mat(1.0, 0.0, 3.0, 0.0, 1.0, 0.5), 1, 1);
        close(&out, &[8.0, 6.0], 1e-6);
        // (3.25, 2): now past the last column → zero.
        let out = warp(&mat(1.0, 0.0, 3.25, 0.0, 1.0, 2.0), 1, 1);
        assert_eq!(out, [0.0, 0.0]);
        // (2.5, 2): on the last row, x fractional: 0.5·B[2][2] + 0.5·B[2][3] = 1.5; ch 0: 22.5.
        let out = warp(&mat(1.0, 0.0, 2.5, 0.0, 1.0, 2.0), 1, 1);
        close(&out, &[22.5, 1.5], 1e-6);
    }

    #[test]
    fn ttb_scale_down_by_two_uses_pixel_centres() {
        // Scale 2: correction m3 += (2 + 0 - 1)/2 = 0.5, so pixel (x, y) samples
        // (2x + 0.5, 2y + 0.5): the centre of the 2×2 source block it covers.
        let out = warp(&mat(2.0, 0.0, 0.0, 0.0, 2.0, 0.0), 2, 2);
        // (0, 0) → (0.5, 0.5): mean of 1, 5, 3, 0 = 2.25; channel 0: 5.5.
        close(&px(&out, 2, 0, 0), &[5.5, 2.25], 1e-6);
        // (1, 0) → (2.5, 0.5): mean of 2, 8, 7, 4 = 5.25; channel 0: 7.5.
        close(&px(&out, 2, 0, 1), &[7.5, 5.25], 1e-6);
        // Row 1 → y = 2.5 > 2: zero.
        assert_eq!(px(&out, 2, 1, 0), [0.0, 0.0]);
        assert_eq!(px(&out, 2, 1, 1), [0.0, 0.0]);
    }

    #[test]
    fn ttb_scale_up_by_two_shifts_by_a_quarter() {
        // Scale ½: correction m3 += (0.5 - 1)/2 = -0.25, so pixel x samples x/2 - 0.25:
        // column 0 → -0.25 (outside, zero), column 1 → 0.25, column 2 → 0.75.
        let out = warp(&mat(0.5, 0.0, 0.0, 0.0, 0.5, 0.0), 3, 3);
        assert_eq!(px(&out, 3, 0, 0), [0.0, 0.0]);
        assert_eq!(px(&out, 3, 1, 0), [0.0, 0.0]);
        assert_eq!(px(&out, 3, 0, 1), [0.0, 0.0]);
        // (1, 1) → (0.25, 0.25): upper = 0.75·1 + 0.25·5 = 2, lower = 0.75·3 + 0.25·0 = 2.25,
        // result = 0.75·2 + 0.25·2.25 = 2.0625; channel 0: 2.5 + 0.25 = 2.75.
        close(&px(&out, 3, 1, 1), &[2.75, 2.0625], 1e-6);
        // (2, 1) → (0.75, 0.25): upper = 0.25·1 + 0.75·5 = 4, lower = 0.25·3 + 0 = 0.75,
        // result = 0.75·4 + 0.25·0.75 = 3.1875; channel 0: 2.5 + 0.75 = 3.25.
        close(&px(&out, 3, 1, 2), &[3.25, 3.1875], 1e-6);
        // (2, 2) → (0.75, 0.75): upper = 4 (row 0), lower = 0.75 (row 1),
        // result = 0.25·4 + 0.75·0.75 = 1.5625; channel 0: 7.5 + 0.75 = 8.25.
        close(&px(&out, 3, 2, 2), &[8.25, 1.5625], 1e-6);
    }

    #[test]
    fn ttb_rotation_by_90_degrees() {
        // Linear part [[0, -1], [1, 0]] with m3 = 4, m7 = 0. Correction: m3 += (0 - 1 - 1)/2 = -1,
        // m7 += (1 + 0 - 1)/2 = 0, so output (x, y) samples source (3 - y, x): a 4×3 output
        // (H = 4, W = 3) holding the image turned by 90°: out[y][x] = in[x][3 - y].
        let out = warp(&mat(0.0, -1.0, 4.0, 1.0, 0.0, 0.0), 4, 3);
        for y in 0..4 {
            for x in 0..3 {
                let (sy, sx) = (x, 3 - y);
                let want = [10.0 * sy as f32 + sx as f32, B[sy][sx]];
                assert_eq!(px(&out, 3, y, x), want, "pixel y={y} x={x}");
            }
        }
        // Spot check written out: output row 0 is source column 3 = [8, 4, 2].
        assert_eq!([out[1], out[3], out[5]], [8.0, 4.0, 2.0]);
    }

    #[test]
    fn ttb_nan_matrix_gives_zeros() {
        let out = warp(&mat(f32::NAN, 0.0, 0.0, 0.0, 1.0, 0.0), 2, 2);
        assert!(out.iter().all(|&v| v == 0.0), "{out:?}");
        let out = warp(&mat(1e30, 0.0, 0.0, 0.0, 1.0, 0.0), 2, 2);
        // Column 0 samples x = 0 + (1e30 - 1)/2 ≫ 3 → zero everywhere.
        assert!(out.iter().all(|&v| v == 0.0), "{out:?}");
    }

    // --------------------------------------------------------------------- TransformLandmarks

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

    // -------------------------------------------------------------- Landmarks2TransformMatrix

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
