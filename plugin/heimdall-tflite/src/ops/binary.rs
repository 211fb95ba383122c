//! ADD, SUB, MUL (with a fused activation) and PRELU: element-wise functions of two tensors.

use heimdall_ir::{BinaryFn, OpKind};

use super::operator::{Converted, Operator};
use crate::builtin::B;
use crate::error::ImportError;
use crate::schema_generated::tflite;

/// Converts ADD, SUB, MUL or PRELU.
pub(crate) fn convert(cx: &Operator, builtin: B) -> Result<Converted, ImportError> {
    let inputs = vec![cx.input(0)?, cx.input(1)?];
    let op = cx.op;
    let (f, act) = match builtin {
        B::ADD => (
            BinaryFn::Add,
            op.builtin_options_as_add_options()
                .map(|o| o.fused_activation_function()),
        ),
        B::SUB => (
            BinaryFn::Sub,
            op.builtin_options_as_sub_options()
                .map(|o| o.fused_activation_function()),
        ),
        B::MUL => (
            BinaryFn::Mul,
            op.builtin_options_as_mul_options()
                .map(|o| o.fused_activation_function()),
        ),
        _ => return Ok(Converted::new(OpKind::Binary(BinaryFn::Prelu), inputs)),
    };
    Ok(Converted {
        kind: OpKind::Binary(f),
        inputs,
        activation: cx.activation(act.unwrap_or(tflite::ActivationFunctionType::NONE))?,
    })
}
