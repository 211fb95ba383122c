//! MediaPipe's custom op `TransformLandmarks` (version 2): applies a 4×4 matrix
//! ([`super::landmarks_to_transform`]) to `[1, N, 2|3]` landmarks.

use serde::Serialize;

use crate::shape::{OpShapes, check_matrix4};

/// Options of `TransformLandmarks` (version 2).
///
/// Version 2 carries no options (the model stores an empty `custom_options`): the landmark
/// dimensionality (2 or 3) is the last dimension of the landmarks tensor and no scale is applied.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TransformLandmarksAttrs {}

/// Output shape of `TransformLandmarks`: the landmarks' shape `[1, N, D]`, `D` ∈ {2, 3}.
///
/// Input 0 is the landmarks `[1, N, D]`, input 1 the matrix `[1, 4, 4]`.
pub fn infer(_attrs: &TransformLandmarksAttrs, io: &OpShapes) -> Result<Vec<usize>, String> {
    const OP: &str = "TransformLandmarks";
    io.expect_inputs(OP, 2)?;
    let lm = io.inputs[0];
    if lm.len() != 3 || lm[0] != 1 || !(lm[2] == 2 || lm[2] == 3) {
        return Err(format!(
            "{OP}: landmarks must have shape [1, N, 2] or [1, N, 3], got {lm:?}"
        ));
    }
    check_matrix4(OP, io.inputs[1])?;
    Ok(lm.to_vec())
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

    #[test]
    fn tl_shapes() {
        let a = TransformLandmarksAttrs {};
        assert_eq!(
            infer(&a, &io(&[&[1, 80, 2], &[1, 4, 4]])),
            Ok(vec![1, 80, 2])
        );
        assert_eq!(infer(&a, &io(&[&[1, 5, 3], &[1, 4, 4]])), Ok(vec![1, 5, 3]));
        assert!(infer(&a, &io(&[&[1, 5, 4], &[1, 4, 4]])).is_err());
        assert!(infer(&a, &io(&[&[2, 5, 2], &[1, 4, 4]])).is_err());
        assert!(infer(&a, &io(&[&[1, 5, 2], &[1, 16]])).is_err());
    }
}
