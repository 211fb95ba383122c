//! MediaPipe's custom op `TransformTensorBilinear` (version 2): samples an NHWC tensor through
//! a 4×4 matrix ([`super::landmarks_to_transform`]), bilinear, pixel-centre convention, zero
//! outside the source.

use serde::Serialize;

use crate::shape::{OpShapes, check_matrix4};

/// Options of `TransformTensorBilinear` (version 2).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TransformTensorBilinearAttrs {
    /// Height of the output tensor (`output_height`, > 0).
    pub output_height: usize,
    /// Width of the output tensor (`output_width`, > 0).
    pub output_width: usize,
}

/// Output shape of `TransformTensorBilinear`: `[1, output_height, output_width, C]`.
///
/// Input 0 is the NHWC source `[1, H, W, C]` (all dimensions ≥ 1), input 1 the matrix
/// `[1, 4, 4]`.
pub fn infer(attrs: &TransformTensorBilinearAttrs, io: &OpShapes) -> Result<Vec<usize>, String> {
    const OP: &str = "TransformTensorBilinear";
    io.expect_inputs(OP, 2)?;
    let src = io.inputs[0];
    if src.len() != 4 || src[0] != 1 || src[1..].contains(&0) {
        return Err(format!(
            "{OP}: input must be NHWC [1, H, W, C] with H, W, C >= 1, got {src:?}"
        ));
    }
    check_matrix4(OP, io.inputs[1])?;
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
    fn ttb_shapes() {
        let a = TransformTensorBilinearAttrs {
            output_height: 16,
            output_width: 8,
        };
        assert_eq!(
            infer(&a, &io(&[&[1, 48, 48, 32], &[1, 4, 4]])),
            Ok(vec![1, 16, 8, 32])
        );
        assert!(infer(&a, &io(&[&[1, 48, 48, 32], &[4, 4]])).is_ok());
        assert!(infer(&a, &io(&[&[1, 48, 48, 32], &[1, 3, 4]])).is_err());
        assert!(infer(&a, &io(&[&[1, 48, 48, 32], &[2, 4, 4]])).is_err());
        assert!(infer(&a, &io(&[&[48, 48, 32], &[1, 4, 4]])).is_err());
        assert!(infer(&a, &io(&[&[1, 0, 48, 32], &[1, 4, 4]])).is_err());
        assert!(infer(&a, &io(&[&[1, 48, 48, 32]])).is_err());
    }
}
