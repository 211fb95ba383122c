//! Shape-only ops on run-time tensors: `Shape`/`Size` (constants once input shapes are
//! static), `Reshape`/`Flatten`/`Squeeze`/`Unsqueeze` (in the ONNX layout), `Transpose`
//! (composed with the NHWC permutation, so one op at most), depth/space rearrangements.

use heimdall_ir::{BlockOrder, OpKind};

use crate::attrs::Attrs;
use crate::constant::{Const, Elem};
use crate::ctx::Ctx;
use crate::error::{NodeResult, invalid, unsupported};
use crate::fold::flatten_axis;
use crate::ops::conv::image_shape;
use crate::proto::NodeProto;
use crate::shapes;
use crate::value::{Layout, TO_NCHW, Value, native, nhwc, permute};

/// `Shape` and `Size` of a run-time tensor (static, so a constant).
pub(crate) fn shape_of(cx: &mut Ctx, n: &NodeProto) -> NodeResult<Value> {
    let x = cx.req(n, 0)?;
    let s = cx.shape(&x);
    let c = Const::new(s.clone(), vec![0.0; s.iter().product()], Elem::Float);
    let refs = [Some(&c)];
    match crate::fold::eval(
        n.op_type.as_deref().unwrap_or(""),
        &Attrs::of(n),
        &refs,
        cx.opset,
    )? {
        Some(mut v) if !v.is_empty() => Ok(Value::Const(v.swap_remove(0))),
        _ => invalid("could not evaluate the shape"),
    }
}

/// `Reshape`, `Flatten`, `Squeeze`, `Unsqueeze`.
pub(crate) fn reshape(cx: &mut Ctx, n: &NodeProto) -> NodeResult<Value> {
    let a = Attrs::of(n);
    let op = n.op_type.as_deref().unwrap_or("");
    let name = cx.out_name(n);
    let x = cx.req(n, 0)?;
    let xs = cx.shape(&x);
    let axes_list = |cx: &Ctx| -> NodeResult<Option<Vec<i64>>> {
        Ok(match cx.const_input(n, 1, "axes")? {
            Some(c) => Some(c.as_i64()),
            None => a.ints("axes").map(<[i64]>::to_vec),
        })
    };
    let target = match op {
        "Reshape" => {
            let t = match cx.const_input(n, 1, "shape")? {
                Some(t) => t.as_i64(),
                None if cx.opset < 5 => a.ints("shape").unwrap_or(&[]).to_vec(),
                None => return invalid("missing shape"),
            };
            shapes::reshape_target(&xs, &t, a.int_or("allowzero", 0) != 0)?
        }
        "Flatten" => {
            let ax = flatten_axis(a.int_or("axis", 1), xs.len())?;
            vec![xs[..ax].iter().product(), xs[ax..].iter().product()]
        }
        "Squeeze" => shapes::squeeze(&xs, axes_list(cx)?.as_deref())?,
        _ => match axes_list(cx)? {
            Some(l) => shapes::unsqueeze(&xs, &l)?,
            None => return invalid("Unsqueeze without axes"),
        },
    };
    let id = native(&mut cx.b, &x, &format!("{name}/x"))?;
    let out = crate::value::reshape(&mut cx.b, id, target, &name)?;
    Ok(Ctx::tensor(out, Layout::Native))
}

/// `Transpose`; an NHWC input is permuted straight to the requested order.
pub(crate) fn transpose(cx: &mut Ctx, n: &NodeProto) -> NodeResult<Value> {
    let name = cx.out_name(n);
    let x = cx.req(n, 0)?;
    let r = cx.shape(&x).len();
    let perm: Vec<usize> = match Attrs::of(n).ints("perm") {
        Some(p) => p
            .iter()
            .map(|&v| shapes::axis(v, r))
            .collect::<NodeResult<_>>()?,
        None => (0..r).rev().collect(),
    };
    heimdall_ir::ops::transpose::shape(&vec![1; r], &perm)
        .map_err(crate::error::NodeError::Invalid)?;
    let (id, ir_perm) = match &x {
        Value::Tensor(t) if t.layout == Layout::Nhwc => {
            (t.id, perm.iter().map(|&p| TO_NCHW[p]).collect::<Vec<_>>())
        }
        v => (native(&mut cx.b, v, &format!("{name}/x"))?, perm),
    };
    let out = permute(&mut cx.b, id, &ir_perm, &name)?;
    let out = if out == id {
        cx.b.op(
            OpKind::Unary(heimdall_ir::UnaryKind::Identity),
            vec![id],
            &name,
        )?
    } else {
        out
    };
    Ok(Ctx::tensor(out, Layout::Native))
}

/// `DepthToSpace` (DCR or CRD) and `SpaceToDepth`.
pub(crate) fn depth_space(cx: &mut Ctx, n: &NodeProto) -> NodeResult<Value> {
    let a = Attrs::of(n);
    let name = cx.out_name(n);
    let x = cx.req(n, 0)?;
    image_shape(cx, &x)?;
    let block = a.int_or("blocksize", 0);
    if !(1..=64).contains(&block) {
        return unsupported(format!("blocksize {block}"));
    }
    let block = block as usize;
    let kind = if n.op_type.as_deref() == Some("SpaceToDepth") {
        OpKind::SpaceToDepth { block }
    } else if a.string_or("mode", "DCR") == "CRD" {
        OpKind::DepthToSpace {
            block,
            order: BlockOrder::Crd,
        }
    } else {
        OpKind::DepthToSpace {
            block,
            order: BlockOrder::Dcr,
        }
    };
    let xid = nhwc(&mut cx.b, &x, &format!("{name}/x"))?;
    let out = cx.b.op(kind, vec![xid], &name)?;
    Ok(Ctx::tensor(out, Layout::Nhwc))
}
