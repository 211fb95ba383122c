//! MediaPipe's custom op `TransformTensorBilinear` (version 2), f32, batch 1, no allocation:
//! warps an NHWC tensor through a 4×4 matrix, bilinear, with MediaPipe's version-2 pixel-centre
//! correction, zero for samples outside the source.
//!
//! The arithmetic follows MediaPipe's reference CPU kernel
//! (`mediapipe/util/tflite/operations/transform_tensor_bilinear.cc`) down to the evaluation order and the places where
//! C++ promotes to `double`, so results agree with it to the last bit or so (transcendental
//! functions come from the platform's libm in both).
//!
//! Dispatch: [`prepare`].

use heimdall_ir::TransformTensorBilinearAttrs;

use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

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

/// A warp of an input of known shape to an output of known shape.
struct TransformTensor {
    attrs: TransformTensorBilinearAttrs,
    shape: Vec<usize>,
    out_shape: Vec<usize>,
}

impl Kernel for TransformTensor {
    fn run(&self, io: StepIo<'_>) {
        let (x, m) = (io.inputs.get(0), io.inputs.get(1));
        transform_tensor_bilinear(&self.attrs, x, &self.shape, m, io.out, &self.out_shape);
    }
}

/// Prepares a `TransformTensorBilinear`.
pub(crate) fn prepare(
    cx: &PrepareCx,
    a: &TransformTensorBilinearAttrs,
) -> Result<Prepared, String> {
    Ok(Prepared::new(TransformTensor {
        attrs: a.clone(),
        shape: cx.shape(0),
        out_shape: cx.out_shape(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::{close, mat};

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
}
