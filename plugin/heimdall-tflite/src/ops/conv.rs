//! CONV_2D and DEPTHWISE_CONV_2D: SAME/VALID padding resolved, the depth multiplier checked
//! against the shapes.

use heimdall_ir::{ConvAttrs, OpKind};

use super::operator::{Converted, Operator};
use crate::builtin::B;
use crate::error::ImportError;

/// Converts CONV_2D or DEPTHWISE_CONV_2D.
pub(crate) fn convert(cx: &Operator, builtin: B) -> Result<Converted, ImportError> {
    let mut inputs = vec![cx.input(0)?, cx.input(1)?];
    inputs.extend(cx.optional(2));
    let (x, f) = (cx.shape(inputs[0]), cx.shape(inputs[1]));
    cx.dims(&f, 4, "filter")?;
    let (s, d, p, a, mult) = if builtin == B::CONV_2D {
        let o = cx
            .op
            .builtin_options_as_conv_2_doptions()
            .ok_or_else(|| cx.missing())?;
        (
            cx.stride(o.stride_h(), o.stride_w())?,
            cx.stride(o.dilation_h_factor(), o.dilation_w_factor())?,
            o.padding(),
            o.fused_activation_function(),
            0,
        )
    } else {
        let o = cx
            .op
            .builtin_options_as_depthwise_conv_2_doptions()
            .ok_or_else(|| cx.missing())?;
        (
            cx.stride(o.stride_h(), o.stride_w())?,
            cx.stride(o.dilation_h_factor(), o.dilation_w_factor())?,
            o.padding(),
            o.fused_activation_function(),
            o.depth_multiplier(),
        )
    };
    let activation = cx.activation(a)?;
    let pad = cx.window_pad(&x, [f[1], f[2]], s, d, p)?;
    let attrs = ConvAttrs {
        stride: s,
        dilation: d,
        pad,
    };
    let kind = if builtin == B::CONV_2D {
        OpKind::Conv2d(attrs)
    } else {
        let channels = x.get(3).copied().unwrap_or(0);
        // Some converters write 0: the multiplier then follows from the shapes.
        let multiplier = if mult > 0 {
            mult as usize
        } else {
            f[3].checked_div(channels).unwrap_or(0)
        };
        if multiplier == 0 || channels * multiplier != f[3] {
            return Err(cx.fail(format!(
                "depth multiplier {mult} does not fit {channels} input channels and filter {f:?}"
            )));
        }
        OpKind::DepthwiseConv2d { attrs, multiplier }
    };
    Ok(Converted {
        kind,
        inputs,
        activation,
    })
}
