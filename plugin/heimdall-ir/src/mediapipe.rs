//! Attributes of the MediaPipe custom ops.
//!
//! `face_landmark_with_attention.tflite` (MediaPipe 0.10.21) crops three regions (lips, left eye,
//! right eye) out of an intermediate feature map and maps the landmarks predicted inside each crop
//! back to the full frame with three TFLite custom ops, all registered as **version 2** in the
//! model's operator codes:
//!
//! * [`LANDMARKS_TO_TRANSFORM_MATRIX`]: landmarks `[1, N, 3]` → 4×4 matrix `[1, 4, 4]` mapping a
//!   pixel of an `output_width × output_height` crop to a point of the source frame.
//! * [`TRANSFORM_TENSOR_BILINEAR`]: samples an NHWC tensor through such a matrix (bilinear,
//!   pixel-centre convention, zero outside the source).
//! * [`TRANSFORM_LANDMARKS`]: applies such a matrix to `[1, N, 2|3]` landmarks.
//!
//! Matrices are row-major 4×4 `f32`; only the first two rows are read by the consumers, and a
//! point `(x, y)` maps to `(m[0]·x + m[1]·y + m[3], m[4]·x + m[5]·y + m[7])`.
//!
//! Version 1 of these ops has different options and semantics (no pixel-centre correction,
//! rank-4 landmarks, a `scale` option): importers must check that the operator code's version is
//! [`MEDIAPIPE_OP_VERSION`] before using these attributes.

use serde::Serialize;

/// Custom-op name of the landmarks-to-matrix op in TFLite operator codes.
pub const LANDMARKS_TO_TRANSFORM_MATRIX: &str = "Landmarks2TransformMatrix";
/// Custom-op name of the bilinear tensor-warp op in TFLite operator codes.
pub const TRANSFORM_TENSOR_BILINEAR: &str = "TransformTensorBilinear";
/// Custom-op name of the landmark-transform op in TFLite operator codes.
pub const TRANSFORM_LANDMARKS: &str = "TransformLandmarks";
/// The operator-code version whose semantics this module (and the CPU kernels) implement.
pub const MEDIAPIPE_OP_VERSION: i32 = 2;

/// Options of `Landmarks2TransformMatrix` (version 2).
///
/// The op estimates a rotation from two landmarks, the rotated bounding box of a landmark subset,
/// and produces the matrix `Shift(centre) · Rot(-rotation) · Scale(s) · Shift(-output_size / 2)`
/// that maps crop pixels to source coordinates (see `heimdall_cpu::mediapipe`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Landmarks2TransformMatrixAttrs {
    /// Landmark indices whose `x, y` span the bounding box of the crop. MediaPipe stores them
    /// as a flat list that it groups into pairs (a trailing odd element is paired with itself);
    /// every listed landmark contributes to the box either way. Never empty after parsing.
    pub subset_idxs: Vec<usize>,
    /// Index of the landmark at the "left" end of the rotation axis (`left_rotation_idx`).
    pub left_rotation_idx: usize,
    /// Index of the landmark at the "right" end of the rotation axis (`right_rotation_idx`).
    pub right_rotation_idx: usize,
    /// Angle, in radians, the left→right axis should have in the crop
    /// (`target_rotation_radians`; 0 = horizontal). Defaults to 0 when absent.
    pub target_rotation_radians: f32,
    /// Height in pixels of the crop the matrix is built for (`output_height`, > 0).
    pub output_height: usize,
    /// Width in pixels of the crop the matrix is built for (`output_width`, > 0).
    pub output_width: usize,
    /// Horizontal enlargement of the rotated bounding box (`scale_x`, finite and > 0).
    pub scale_x: f32,
    /// Vertical enlargement of the rotated bounding box (`scale_y`, finite and > 0).
    pub scale_y: f32,
}

/// Options of `TransformTensorBilinear` (version 2).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TransformTensorBilinearAttrs {
    /// Height of the output tensor (`output_height`, > 0).
    pub output_height: usize,
    /// Width of the output tensor (`output_width`, > 0).
    pub output_width: usize,
}

/// Options of `TransformLandmarks` (version 2).
///
/// Version 2 carries no options (the model stores an empty `custom_options`): the landmark
/// dimensionality (2 or 3) is the last dimension of the landmarks tensor and no scale is applied.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TransformLandmarksAttrs {}

/// Checks that `shape` holds one 4×4 matrix (`[1, 4, 4]`, `[4, 4]` or `[1, 1, 4, 4]`).
fn check_matrix_shape(op: &str, shape: &[usize]) -> Result<(), String> {
    let ok = shape.len() >= 2
        && shape.len() <= 4
        && shape[shape.len() - 2..] == [4, 4]
        && shape[..shape.len() - 2].iter().all(|&d| d == 1);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{op}: the matrix input must have shape [1, 4, 4], got {shape:?}"
        ))
    }
}

fn check_input_count(op: &str, input_shapes: &[&[usize]], n: usize) -> Result<(), String> {
    if input_shapes.len() == n {
        Ok(())
    } else {
        Err(format!(
            "{op}: expected {n} input(s), got {}",
            input_shapes.len()
        ))
    }
}

/// Output shape of `Landmarks2TransformMatrix`: always `[1, 4, 4]`.
///
/// Input 0 must be the landmarks `[1, N, 3]` (the kernel reads `x, y` with a stride of 3, as
/// MediaPipe does); every index in `attrs` must be `< N`, the subset must not be empty and the
/// output size and scales must be positive.
pub fn landmarks_to_transform_matrix_output_shape(
    attrs: &Landmarks2TransformMatrixAttrs,
    input_shapes: &[&[usize]],
) -> Result<Vec<usize>, String> {
    const OP: &str = LANDMARKS_TO_TRANSFORM_MATRIX;
    check_input_count(OP, input_shapes, 1)?;
    let shape = input_shapes[0];
    if shape.len() != 3 || shape[0] != 1 || shape[2] != 3 {
        return Err(format!(
            "{OP}: landmarks must have shape [1, N, 3], got {shape:?}"
        ));
    }
    let n = shape[1];
    if attrs.subset_idxs.is_empty() {
        return Err(format!("{OP}: subset_idxs is empty"));
    }
    for (name, idx) in [
        ("left_rotation_idx", attrs.left_rotation_idx),
        ("right_rotation_idx", attrs.right_rotation_idx),
    ] {
        if idx >= n {
            return Err(format!(
                "{OP}: {name} = {idx} is out of range for {n} landmarks"
            ));
        }
    }
    if let Some((pos, &idx)) = attrs.subset_idxs.iter().enumerate().find(|&(_, &i)| i >= n) {
        return Err(format!(
            "{OP}: subset_idxs[{pos}] = {idx} is out of range for {n} landmarks"
        ));
    }
    if attrs.output_height == 0 || attrs.output_width == 0 {
        return Err(format!(
            "{OP}: output size must be positive, got {}x{}",
            attrs.output_height, attrs.output_width
        ));
    }
    let positive = |v: f32| v.is_finite() && v > 0.0;
    if !(positive(attrs.scale_x) && positive(attrs.scale_y)) {
        return Err(format!(
            "{OP}: scale_x and scale_y must be finite and > 0, got {} and {}",
            attrs.scale_x, attrs.scale_y
        ));
    }
    if !attrs.target_rotation_radians.is_finite() {
        return Err(format!(
            "{OP}: target_rotation_radians must be finite, got {}",
            attrs.target_rotation_radians
        ));
    }
    Ok(vec![1, 4, 4])
}

/// Output shape of `TransformTensorBilinear`: `[1, output_height, output_width, C]`.
///
/// Input 0 is the NHWC source `[1, H, W, C]` (all dimensions ≥ 1), input 1 the matrix
/// `[1, 4, 4]`.
pub fn transform_tensor_bilinear_output_shape(
    attrs: &TransformTensorBilinearAttrs,
    input_shapes: &[&[usize]],
) -> Result<Vec<usize>, String> {
    const OP: &str = TRANSFORM_TENSOR_BILINEAR;
    check_input_count(OP, input_shapes, 2)?;
    let src = input_shapes[0];
    if src.len() != 4 || src[0] != 1 || src[1..].contains(&0) {
        return Err(format!(
            "{OP}: input must be NHWC [1, H, W, C] with H, W, C >= 1, got {src:?}"
        ));
    }
    check_matrix_shape(OP, input_shapes[1])?;
    if attrs.output_height == 0 || attrs.output_width == 0 {
        return Err(format!(
            "{OP}: output size must be positive, got {}x{}",
            attrs.output_height, attrs.output_width
        ));
    }
    if attrs
        .output_height
        .checked_mul(attrs.output_width)
        .and_then(|n| n.checked_mul(src[3]))
        .is_none()
    {
        return Err(format!(
            "{OP}: output {}x{}x{} overflows usize",
            attrs.output_height, attrs.output_width, src[3]
        ));
    }
    Ok(vec![1, attrs.output_height, attrs.output_width, src[3]])
}

/// Output shape of `TransformLandmarks`: the landmarks' shape `[1, N, D]`, `D` ∈ {2, 3}.
///
/// Input 0 is the landmarks `[1, N, D]`, input 1 the matrix `[1, 4, 4]`.
pub fn transform_landmarks_output_shape(
    _attrs: &TransformLandmarksAttrs,
    input_shapes: &[&[usize]],
) -> Result<Vec<usize>, String> {
    const OP: &str = TRANSFORM_LANDMARKS;
    check_input_count(OP, input_shapes, 2)?;
    let lm = input_shapes[0];
    if lm.len() != 3 || lm[0] != 1 || !(lm[2] == 2 || lm[2] == 3) {
        return Err(format!(
            "{OP}: landmarks must have shape [1, N, 2] or [1, N, 3], got {lm:?}"
        ));
    }
    check_matrix_shape(OP, input_shapes[1])?;
    Ok(lm.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l2tm() -> Landmarks2TransformMatrixAttrs {
        Landmarks2TransformMatrixAttrs {
            subset_idxs: vec![0, 5, 9],
            left_rotation_idx: 1,
            right_rotation_idx: 2,
            target_rotation_radians: 0.0,
            output_height: 16,
            output_width: 16,
            scale_x: 1.5,
            scale_y: 1.5,
        }
    }

    #[test]
    fn l2tm_shapes() {
        let a = l2tm();
        assert_eq!(
            landmarks_to_transform_matrix_output_shape(&a, &[&[1, 10, 3]]),
            Ok(vec![1, 4, 4])
        );
        let e = landmarks_to_transform_matrix_output_shape(&a, &[&[1, 9, 3]]).unwrap_err();
        assert!(e.contains("subset_idxs[2] = 9"), "{e}");
        assert!(landmarks_to_transform_matrix_output_shape(&a, &[&[1, 10, 2]]).is_err());
        assert!(landmarks_to_transform_matrix_output_shape(&a, &[&[10, 3]]).is_err());
        assert!(landmarks_to_transform_matrix_output_shape(&a, &[]).is_err());
        let mut b = a.clone();
        b.right_rotation_idx = 10;
        let e = landmarks_to_transform_matrix_output_shape(&b, &[&[1, 10, 3]]).unwrap_err();
        assert!(e.contains("right_rotation_idx"), "{e}");
        let mut c = a.clone();
        c.subset_idxs.clear();
        assert!(landmarks_to_transform_matrix_output_shape(&c, &[&[1, 10, 3]]).is_err());
        let mut d = a.clone();
        d.scale_y = 0.0;
        assert!(landmarks_to_transform_matrix_output_shape(&d, &[&[1, 10, 3]]).is_err());
        let mut f = a;
        f.output_width = 0;
        assert!(landmarks_to_transform_matrix_output_shape(&f, &[&[1, 10, 3]]).is_err());
    }

    #[test]
    fn ttb_shapes() {
        let a = TransformTensorBilinearAttrs {
            output_height: 16,
            output_width: 8,
        };
        assert_eq!(
            transform_tensor_bilinear_output_shape(&a, &[&[1, 48, 48, 32], &[1, 4, 4]]),
            Ok(vec![1, 16, 8, 32])
        );
        assert!(transform_tensor_bilinear_output_shape(&a, &[&[1, 48, 48, 32], &[4, 4]]).is_ok());
        assert!(
            transform_tensor_bilinear_output_shape(&a, &[&[1, 48, 48, 32], &[1, 3, 4]]).is_err()
        );
        assert!(
            transform_tensor_bilinear_output_shape(&a, &[&[1, 48, 48, 32], &[2, 4, 4]]).is_err()
        );
        assert!(transform_tensor_bilinear_output_shape(&a, &[&[48, 48, 32], &[1, 4, 4]]).is_err());
        assert!(
            transform_tensor_bilinear_output_shape(&a, &[&[1, 0, 48, 32], &[1, 4, 4]]).is_err()
        );
        assert!(transform_tensor_bilinear_output_shape(&a, &[&[1, 48, 48, 32]]).is_err());
    }

    #[test]
    fn tl_shapes() {
        let a = TransformLandmarksAttrs {};
        assert_eq!(
            transform_landmarks_output_shape(&a, &[&[1, 80, 2], &[1, 4, 4]]),
            Ok(vec![1, 80, 2])
        );
        assert_eq!(
            transform_landmarks_output_shape(&a, &[&[1, 5, 3], &[1, 4, 4]]),
            Ok(vec![1, 5, 3])
        );
        assert!(transform_landmarks_output_shape(&a, &[&[1, 5, 4], &[1, 4, 4]]).is_err());
        assert!(transform_landmarks_output_shape(&a, &[&[2, 5, 2], &[1, 4, 4]]).is_err());
        assert!(transform_landmarks_output_shape(&a, &[&[1, 5, 2], &[1, 16]]).is_err());
    }
}
