//! PAD with zeros, the paddings a constant input.

use heimdall_ir::{OpKind, PadMode};

use super::operator::{Converted, Operator};
use crate::error::ImportError;

/// Converts a PAD.
pub(crate) fn convert(cx: &Operator) -> Result<Converted, ImportError> {
    let inputs = vec![cx.input(0)?];
    let x = cx.shape(inputs[0]);
    let p = cx.const_ints(cx.input(1)?, "paddings")?;
    if p.len() != 2 * x.len() || p.iter().any(|&v| !(0..=4096).contains(&v)) {
        return Err(cx.fail(format!("paddings {p:?} do not fit input {x:?}")));
    }
    let kind = OpKind::Pad {
        pads: p
            .chunks(2)
            .map(|c| [c[0] as usize, c[1] as usize])
            .collect(),
        mode: PadMode::ZERO,
    };
    Ok(Converted::new(kind, inputs))
}
