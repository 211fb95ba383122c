//! TRANSPOSE_CONV and MediaPipe's `Convolution2DTransposeBias` (the same op with a bias and
//! raw options): the cropping of the full transposed output resolved from the shapes.

use heimdall_ir::{ConvAttrs, OpKind, Pad2d, TensorId};

use super::operator::{Converted, Operator};
use crate::error::ImportError;
use crate::schema_generated::tflite;

/// Converts TRANSPOSE_CONV (inputs: output shape, filter, x, optional bias).
pub(crate) fn convert(cx: &Operator) -> Result<Converted, ImportError> {
    let mut inputs = vec![cx.input(2)?, cx.input(1)?];
    inputs.extend(cx.optional(3));
    let o = cx
        .op
        .builtin_options_as_transpose_conv_options()
        .ok_or_else(|| cx.missing())?;
    let activation = cx.activation(o.fused_activation_function())?;
    let s = cx.stride(o.stride_h(), o.stride_w())?;
    let kind = transpose_conv(
        &cx.shape(inputs[0]),
        &cx.shape(inputs[1]),
        &cx.shape(cx.outputs[0]),
        s,
        o.padding() == tflite::Padding::VALID,
    )
    .map_err(|e| cx.fail(e))?;
    Ok(Converted {
        kind,
        inputs,
        activation,
    })
}

/// Converts MediaPipe's `Convolution2DTransposeBias` (inputs: x, filter, bias).
pub(crate) fn convert_with_bias(
    cx: &Operator,
    inputs: Vec<TensorId>,
    options: &[u8],
) -> Result<Converted, ImportError> {
    if inputs.len() != 3 {
        return Err(cx.fail(format!(
            "expected 3 inputs (x, filter, bias), got {}",
            inputs.len()
        )));
    }
    let (valid, s) = transpose_conv_bias_options(options).map_err(|e| cx.fail(e))?;
    let s = cx.stride(s[0], s[1])?;
    let kind = transpose_conv(
        &cx.shape(inputs[0]),
        &cx.shape(inputs[1]),
        &cx.shape(cx.outputs[0]),
        s,
        valid,
    )
    .map_err(|e| cx.fail(e))?;
    Ok(Converted::new(kind, inputs))
}

/// MediaPipe's `Convolution2DTransposeBias` stores a raw `TfLiteTransposeConvParams`
/// (`padding` enum, `stride_width`, `stride_height`, all 32-bit little endian; padding 1 = SAME,
/// 2 = VALID). Returns (valid, [stride_h, stride_w]).
fn transpose_conv_bias_options(bytes: &[u8]) -> Result<(bool, [i32; 2]), String> {
    if bytes.len() < 12 {
        return Err(format!("options of {} bytes, expected 12", bytes.len()));
    }
    let word = |i: usize| {
        i32::from_le_bytes([
            bytes[4 * i],
            bytes[4 * i + 1],
            bytes[4 * i + 2],
            bytes[4 * i + 3],
        ])
    };
    let valid = match word(0) {
        1 => false,
        2 => true,
        p => return Err(format!("unknown padding {p}")),
    };
    Ok((valid, [word(2), word(1)]))
}

/// A transposed convolution producing `out` from `x` and `filter [Co,kh,kw,Ci]`.
fn transpose_conv(
    x: &[usize],
    f: &[usize],
    out: &[usize],
    s: [usize; 2],
    valid: bool,
) -> Result<OpKind, String> {
    if x.len() != 4 || f.len() != 4 || out.len() != 4 {
        return Err(format!(
            "expected 4-D input, filter and output, got {x:?}, {f:?}, {out:?}"
        ));
    }
    if x[1] == 0 || x[2] == 0 {
        return Err(format!("empty input {x:?}"));
    }
    let full = [(x[1] - 1) * s[0] + f[1], (x[2] - 1) * s[1] + f[2]];
    let total_h = full[0]
        .checked_sub(out[1])
        .ok_or("output larger than the full transposed output")?;
    let total_w = full[1]
        .checked_sub(out[2])
        .ok_or("output larger than the full transposed output")?;
    if valid && (total_h > 0 || total_w > 0) && (out[1] != x[1] * s[0] || out[2] != x[2] * s[1]) {
        // VALID keeps the full output; anything else is inconsistent.
        return Err(format!(
            "VALID transposed conv of {x:?} cannot give {out:?}"
        ));
    }
    let pad = Pad2d {
        top: total_h / 2,
        bottom: total_h - total_h / 2,
        left: total_w / 2,
        right: total_w - total_w / 2,
    };
    Ok(OpKind::TransposeConv2d(ConvAttrs {
        stride: s,
        dilation: [1, 1],
        pad,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose_conv_same_2x2() {
        // 2x2 stride 2 SAME: 8x8 -> 16x16, no cropping.
        let k = transpose_conv(
            &[1, 8, 8, 16],
            &[4, 2, 2, 16],
            &[1, 16, 16, 4],
            [2, 2],
            false,
        )
        .unwrap();
        assert_eq!(
            k,
            OpKind::TransposeConv2d(ConvAttrs {
                stride: [2, 2],
                dilation: [1, 1],
                pad: Pad2d::default()
            })
        );
        // 3x3 stride 2 SAME: full 17, output 16, crop 0 before and 1 after.
        let k = transpose_conv(
            &[1, 8, 8, 16],
            &[4, 3, 3, 16],
            &[1, 16, 16, 4],
            [2, 2],
            false,
        )
        .unwrap();
        assert_eq!(
            k,
            OpKind::TransposeConv2d(ConvAttrs {
                stride: [2, 2],
                dilation: [1, 1],
                pad: Pad2d {
                    top: 0,
                    bottom: 1,
                    left: 0,
                    right: 1
                }
            })
        );
    }
}
