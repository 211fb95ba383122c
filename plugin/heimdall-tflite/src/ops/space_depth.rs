//! DEPTH_TO_SPACE (DCR order).

use heimdall_ir::{BlockOrder, OpKind};

use super::operator::{Converted, Operator};
use crate::error::ImportError;

/// Converts a DEPTH_TO_SPACE.
pub(crate) fn convert(cx: &Operator) -> Result<Converted, ImportError> {
    let inputs = vec![cx.input(0)?];
    let o = cx
        .op
        .builtin_options_as_depth_to_space_options()
        .ok_or_else(|| cx.missing())?;
    let block = usize::try_from(o.block_size())
        .ok()
        .filter(|&b| (1..=64).contains(&b))
        .ok_or_else(|| cx.fail(format!("invalid block size {}", o.block_size())))?;
    let kind = OpKind::DepthToSpace {
        block,
        order: BlockOrder::Dcr,
    };
    Ok(Converted::new(kind, inputs))
}
