//! `Softmax` and `LogSoftmax` in the ONNX layout.

use heimdall_ir::OpKind;

use crate::attrs::Attrs;
use crate::ctx::Ctx;
use crate::error::NodeResult;
use crate::proto::NodeProto;
use crate::shapes;
use crate::value::{Layout, Value, native, reshape};

/// `Softmax` and `LogSoftmax` (opset < 13: over all axes from `axis` on, as a 2-D view).
pub(crate) fn softmax(cx: &mut Ctx, n: &NodeProto) -> NodeResult<Value> {
    let name = cx.out_name(n);
    let log = n.op_type.as_deref() == Some("LogSoftmax");
    let x = cx.req(n, 0)?;
    let xs = cx.shape(&x);
    let default = if cx.opset < 13 { 1 } else { -1 };
    let ax = shapes::axis(Attrs::of(n).int_or("axis", default), xs.len())?;
    let id = native(&mut cx.b, &x, &format!("{name}/x"))?;
    let out = if cx.opset < 13 && ax + 1 < xs.len() {
        let flat = vec![xs[..ax].iter().product(), xs[ax..].iter().product()];
        let r = reshape(&mut cx.b, id, flat, &format!("{name}/2d"))?;
        let s = cx.b.op(
            OpKind::Softmax { axis: 1, log },
            vec![r],
            &format!("{name}/softmax"),
        )?;
        reshape(&mut cx.b, s, xs, &name)?
    } else {
        cx.b.op(OpKind::Softmax { axis: ax, log }, vec![id], &name)?
    };
    Ok(Ctx::tensor(out, Layout::Native))
}
