//! MEAN over constant axes.

use heimdall_ir::{OpKind, ReduceKind};

use super::operator::{Converted, Operator};
use crate::error::ImportError;

/// Converts a MEAN.
pub(crate) fn convert(cx: &Operator) -> Result<Converted, ImportError> {
    let inputs = vec![cx.input(0)?];
    let rank = cx.shape(inputs[0]).len() as i64;
    let mut axes = Vec::new();
    for a in cx.const_ints(cx.input(1)?, "axes")? {
        let a = if a < 0 { a + rank } else { a };
        if !(0..rank).contains(&a) {
            return Err(cx.fail(format!("axis {a} out of range for rank {rank}")));
        }
        axes.push(a as usize);
    }
    axes.sort_unstable();
    axes.dedup();
    let keep_dims = cx
        .op
        .builtin_options_as_reducer_options()
        .is_some_and(|o| o.keep_dims());
    let kind = OpKind::Reduce {
        kind: ReduceKind::Mean,
        axes,
        keep_dims,
    };
    Ok(Converted::new(kind, inputs))
}
