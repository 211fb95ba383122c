//! MAX_POOL_2D and AVERAGE_POOL_2D: SAME/VALID padding resolved (no fused activation).

use heimdall_ir::{OpKind, PoolAttrs};

use super::operator::{Converted, Operator};
use crate::builtin::B;
use crate::error::ImportError;
use crate::schema_generated::tflite;

/// Converts MAX_POOL_2D or AVERAGE_POOL_2D.
pub(crate) fn convert(cx: &Operator, builtin: B) -> Result<Converted, ImportError> {
    let inputs = vec![cx.input(0)?];
    let o = cx
        .op
        .builtin_options_as_pool_2_doptions()
        .ok_or_else(|| cx.missing())?;
    let f = cx.stride(o.filter_height(), o.filter_width())?;
    let s = cx.stride(o.stride_h(), o.stride_w())?;
    if o.fused_activation_function() != tflite::ActivationFunctionType::NONE {
        return Err(cx.unsupported("fused activation on a pool".into()));
    }
    let pad = cx.window_pad(&cx.shape(inputs[0]), f, s, [1, 1], o.padding())?;
    let attrs = PoolAttrs {
        filter: f,
        stride: s,
        pad,
    };
    let kind = if builtin == B::MAX_POOL_2D {
        OpKind::MaxPool2d(attrs)
    } else {
        OpKind::AvgPool2d(attrs)
    };
    Ok(Converted::new(kind, inputs))
}
