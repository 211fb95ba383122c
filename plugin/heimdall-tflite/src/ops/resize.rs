//! RESIZE_BILINEAR: the size input checked against the output, TFLite's flags expressed as the
//! IR's coordinate modes.

use heimdall_ir::{OpKind, ResizeAttrs};

use super::operator::{Converted, Operator};
use crate::error::ImportError;

/// Converts a RESIZE_BILINEAR.
pub(crate) fn convert(cx: &Operator) -> Result<Converted, ImportError> {
    let inputs = vec![cx.input(0)?];
    let o = cx.op.builtin_options_as_resize_bilinear_options();
    let size = cx.const_ints(cx.input(1)?, "size")?;
    let out = cx.shape(cx.outputs[0]);
    if size.len() != 2 || out.len() != 4 || size[0] != out[1] as i64 || size[1] != out[2] as i64 {
        return Err(cx.fail(format!("size {size:?} does not match output {out:?}")));
    }
    let attrs = ResizeAttrs::tflite_bilinear(
        o.is_some_and(|o| o.align_corners()),
        o.is_some_and(|o| o.half_pixel_centers()),
    )
    .map_err(|message| cx.unsupported(message))?;
    Ok(Converted::new(OpKind::Resize(attrs), inputs))
}
