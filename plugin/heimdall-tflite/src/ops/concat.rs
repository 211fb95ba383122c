//! CONCATENATION along one axis (no fused activation).

use heimdall_ir::{Activation, OpKind};

use super::operator::{Converted, Operator};
use crate::error::ImportError;

/// Converts a CONCATENATION.
pub(crate) fn convert(cx: &Operator) -> Result<Converted, ImportError> {
    let inputs = cx.all_inputs("a concatenation")?;
    if inputs.is_empty() {
        return Err(cx.fail("no inputs".into()));
    }
    let o = cx
        .op
        .builtin_options_as_concatenation_options()
        .ok_or_else(|| cx.missing())?;
    if cx.activation(o.fused_activation_function())? != Activation::None {
        return Err(cx.unsupported("fused activation on a concatenation".into()));
    }
    let rank = cx.shape(inputs[0]).len() as i64;
    let axis = if o.axis() < 0 {
        o.axis() as i64 + rank
    } else {
        o.axis() as i64
    };
    if !(0..rank).contains(&axis) {
        return Err(cx.fail(format!("axis {} out of range for rank {rank}", o.axis())));
    }
    let kind = OpKind::Concatenation {
        axis: axis as usize,
    };
    Ok(Converted::new(kind, inputs))
}
