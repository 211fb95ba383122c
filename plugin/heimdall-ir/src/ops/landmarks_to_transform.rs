//! MediaPipe's custom op `Landmarks2TransformMatrix` (version 2) of
//! face_landmark_with_attention: landmarks `[1, N, 3]` → the 4×4 matrix `[1, 4, 4]` that maps
//! a pixel of an `output_width × output_height` crop to a point of the source frame.
//!
//! Matrices are row-major 4×4 `f32`; only the first two rows are read by the consumers
//! ([`super::transform_tensor_bilinear`], [`super::transform_landmarks`]), and a point `(x, y)`
//! maps to `(m[0]·x + m[1]·y + m[3], m[4]·x + m[5]·y + m[7])`. Version 1 of these ops has
//! different options and semantics: the TFLite importer checks the operator code's version.

use serde::Serialize;

use crate::shape::OpShapes;

/// Options of `Landmarks2TransformMatrix` (version 2).
///
/// The op estimates a rotation from two landmarks, the rotated bounding box of a landmark subset,
/// and produces the matrix `Shift(centre) · Rot(-rotation) · Scale(s) · Shift(-output_size / 2)`
/// that maps crop pixels to source coordinates.
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

/// Output shape of `Landmarks2TransformMatrix`: always `[1, 4, 4]`.
///
/// Input 0 must be the landmarks `[1, N, 3]` (the kernel reads `x, y` with a stride of 3, as
/// MediaPipe does); every index in `attrs` must be `< N`, the subset must not be empty and the
/// output size and scales must be positive.
pub fn infer(attrs: &Landmarks2TransformMatrixAttrs, io: &OpShapes) -> Result<Vec<usize>, String> {
    const OP: &str = "Landmarks2TransformMatrix";
    io.expect_inputs(OP, 1)?;
    let shape = io.inputs[0];
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

#[cfg(test)]
mod tests {
    use super::*;

    fn io<'a>(inputs: &[&'a [usize]]) -> OpShapes<'a> {
        OpShapes {
            inputs: inputs.to_vec(),
            outputs: vec![],
        }
    }

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
        assert_eq!(infer(&a, &io(&[&[1, 10, 3]])), Ok(vec![1, 4, 4]));
        let e = infer(&a, &io(&[&[1, 9, 3]])).unwrap_err();
        assert!(e.contains("subset_idxs[2] = 9"), "{e}");
        assert!(infer(&a, &io(&[&[1, 10, 2]])).is_err());
        assert!(infer(&a, &io(&[&[10, 3]])).is_err());
        assert!(infer(&a, &io(&[])).is_err());
        let mut b = a.clone();
        b.right_rotation_idx = 10;
        let e = infer(&b, &io(&[&[1, 10, 3]])).unwrap_err();
        assert!(e.contains("right_rotation_idx"), "{e}");
        let mut c = a.clone();
        c.subset_idxs.clear();
        assert!(infer(&c, &io(&[&[1, 10, 3]])).is_err());
        let mut d = a.clone();
        d.scale_y = 0.0;
        assert!(infer(&d, &io(&[&[1, 10, 3]])).is_err());
        let mut f = a;
        f.output_width = 0;
        assert!(infer(&f, &io(&[&[1, 10, 3]])).is_err());
    }
}
