//! FULLY_CONNECTED (default weight format only) with a fused activation.

use heimdall_ir::OpKind;

use super::operator::{Converted, Operator};
use crate::error::ImportError;
use crate::schema_generated::tflite;

/// Converts a FULLY_CONNECTED.
pub(crate) fn convert(cx: &Operator) -> Result<Converted, ImportError> {
    let mut inputs = vec![cx.input(0)?, cx.input(1)?];
    inputs.extend(cx.optional(2));
    let o = cx
        .op
        .builtin_options_as_fully_connected_options()
        .ok_or_else(|| cx.missing())?;
    if o.weights_format() != tflite::FullyConnectedOptionsWeightsFormat::DEFAULT {
        return Err(cx.fail("shuffled weights are not supported".into()));
    }
    Ok(Converted {
        kind: OpKind::FullyConnected,
        inputs,
        activation: cx.activation(o.fused_activation_function())?,
    })
}
