//! Element-wise ops: activations and math (layout kept), binary ops with broadcasting (NHWC
//! when any operand is an NHWC image), casts between float types.

use heimdall_ir::{BinaryFn, OpKind, UnaryKind};

use crate::attrs::Attrs;
use crate::constant::dtype;
use crate::ctx::Ctx;
use crate::error::{NodeResult, unsupported};
use crate::proto::NodeProto;
use crate::value::{Layout, Value, in_layout, native};

/// Activations and unary math.
pub(crate) fn unary(cx: &mut Ctx, n: &NodeProto) -> NodeResult<Value> {
    let a = Attrs::of(n);
    let op = n.op_type.as_deref().unwrap_or("");
    let kind = match op {
        "Relu" => OpKind::Unary(UnaryKind::Relu),
        "Sigmoid" => OpKind::Unary(UnaryKind::Logistic),
        "Tanh" => OpKind::Unary(UnaryKind::Tanh),
        "HardSwish" => OpKind::Unary(UnaryKind::HardSwish),
        "LeakyRelu" => OpKind::Unary(UnaryKind::LeakyRelu {
            alpha: a.float_or("alpha", 0.01),
        }),
        "HardSigmoid" => OpKind::Unary(UnaryKind::HardSigmoid {
            alpha: a.float_or("alpha", 0.2),
            beta: a.float_or("beta", 0.5),
        }),
        "Elu" => OpKind::Unary(UnaryKind::Elu {
            alpha: a.float_or("alpha", 1.0),
        }),
        "Erf" => OpKind::Unary(UnaryKind::Erf),
        "Sqrt" => OpKind::Unary(UnaryKind::Sqrt),
        "Exp" => OpKind::Unary(UnaryKind::Exp),
        "Log" => OpKind::Unary(UnaryKind::Log),
        "Abs" => OpKind::Unary(UnaryKind::Abs),
        "Neg" => OpKind::Unary(UnaryKind::Neg),
        "Reciprocal" => OpKind::Unary(UnaryKind::Reciprocal),
        "Floor" => OpKind::Unary(UnaryKind::Floor),
        "Ceil" => OpKind::Unary(UnaryKind::Ceil),
        "Softplus" => OpKind::Unary(UnaryKind::Softplus),
        "Softsign" => OpKind::Unary(UnaryKind::Softsign),
        _ => clip(cx, n)?,
    };
    let x = cx.req(n, 0)?;
    let name = cx.out_name(n);
    let (id, layout) = match &x {
        Value::Tensor(t) => (t.id, t.layout),
        c => (native(&mut cx.b, c, &format!("{name}/x"))?, Layout::Native),
    };
    let out = cx.b.op(kind, vec![id], &name)?;
    Ok(Ctx::tensor(out, layout))
}

/// `Clip` with bounds from attributes (opset < 11) or constant inputs.
fn clip(cx: &Ctx, n: &NodeProto) -> NodeResult<OpKind> {
    let a = Attrs::of(n);
    let (min, max) = if cx.opset < 11 {
        (
            a.float_or("min", f32::NEG_INFINITY),
            a.float_or("max", f32::INFINITY),
        )
    } else {
        let bound = |i: usize, d: f32| -> NodeResult<f32> {
            Ok(cx
                .const_input(n, i, "clip bound")?
                .and_then(|c| c.values.first().copied())
                .map_or(d, |v| v as f32))
        };
        (bound(1, f32::NEG_INFINITY)?, bound(2, f32::INFINITY)?)
    };
    Ok(match (min, max) {
        (0.0, 6.0) => OpKind::Unary(UnaryKind::Relu6),
        (0.0, f32::INFINITY) => OpKind::Unary(UnaryKind::Relu),
        _ => OpKind::Unary(UnaryKind::Clip { min, max }),
    })
}

/// Binary (and variadic Sum/Mean/Max/Min) ops with broadcasting, comparisons (1.0/0.0) and
/// `Where`.
pub(crate) fn binary(cx: &mut Ctx, n: &NodeProto) -> NodeResult<Value> {
    let op = n.op_type.as_deref().unwrap_or("");
    let vals: Vec<Value> = (0..n.input.len())
        .filter_map(|i| cx.input(n, i).transpose())
        .collect::<NodeResult<_>>()?;
    if vals.is_empty() {
        return unsupported("no inputs");
    }
    let shapes: Vec<Vec<usize>> = vals.iter().map(|v| cx.shape(v)).collect();
    let mut out_shape = shapes[0].clone();
    for s in &shapes[1..] {
        out_shape = crate::shapes::broadcast(&out_shape, s)?;
    }
    let image = vals
        .iter()
        .any(|v| matches!(v, Value::Tensor(t) if t.layout == Layout::Nhwc));
    let layout = if image && out_shape.len() == 4 {
        Layout::Nhwc
    } else {
        Layout::Native
    };
    let name = cx.out_name(n);
    let kind = match op {
        "Add" | "Sum" | "Mean" => OpKind::Binary(BinaryFn::Add),
        "Sub" => OpKind::Binary(BinaryFn::Sub),
        "Mul" => OpKind::Binary(BinaryFn::Mul),
        "Div" => OpKind::Binary(BinaryFn::Div),
        "Pow" => OpKind::Binary(BinaryFn::Pow),
        "Max" => OpKind::Binary(BinaryFn::Max),
        "Min" => OpKind::Binary(BinaryFn::Min),
        "Less" => OpKind::Binary(BinaryFn::Less),
        "Greater" => OpKind::Binary(BinaryFn::Greater),
        "Equal" => OpKind::Binary(BinaryFn::Equal),
        "LessOrEqual" => OpKind::Binary(BinaryFn::LessOrEqual),
        "GreaterOrEqual" => OpKind::Binary(BinaryFn::GreaterOrEqual),
        "Where" => OpKind::Where,
        _ => OpKind::Binary(BinaryFn::Prelu),
    };
    let mut ids = Vec::new();
    for (i, v) in vals.iter().enumerate() {
        ids.push(in_layout(&mut cx.b, v, layout, &format!("{name}/in{i}"))?);
    }
    if vals.len() == 1 {
        let out =
            cx.b.op(OpKind::Unary(UnaryKind::Identity), vec![ids[0]], &name)?;
        return Ok(Ctx::tensor(out, layout));
    }
    if op == "Where" {
        if ids.len() != 3 {
            return crate::error::invalid("Where needs three inputs");
        }
        let out = cx.b.op(OpKind::Where, ids, &name)?;
        return Ok(Ctx::tensor(out, layout));
    }
    let mut acc = ids[0];
    for (i, &id) in ids.iter().enumerate().skip(1) {
        let last = i + 1 == ids.len() && op != "Mean";
        let nm = if last {
            name.clone()
        } else {
            format!("{name}/{i}")
        };
        acc = cx.b.op(kind.clone(), vec![acc, id], &nm)?;
    }
    if op == "Mean" {
        let k = cx.b.constant(
            &format!("{name}/count"),
            vec![],
            vec![1.0 / ids.len() as f32],
        )?;
        acc =
            cx.b.op(OpKind::Binary(BinaryFn::Mul), vec![acc, k], &name)?;
    }
    Ok(Ctx::tensor(acc, layout))
}

/// `Cast` of a run-time tensor: only to float types (heimdall computes in f32).
pub(crate) fn cast(cx: &mut Ctx, n: &NodeProto) -> NodeResult<Value> {
    let to = Attrs::of(n).int_or("to", dtype::FLOAT as i64) as i32;
    if matches!(to, dtype::FLOAT | dtype::DOUBLE | dtype::FLOAT16) {
        cx.req(n, 0)
    } else {
        unsupported(format!("cast of a run-time tensor to non-float type {to}"))
    }
}

/// `CastLike` of a run-time tensor: only to a float type.
pub(crate) fn cast_like(cx: &mut Ctx, n: &NodeProto) -> NodeResult<Value> {
    match cx.req(n, 1)? {
        Value::Const(c) if c.elem != crate::constant::Elem::Float => {
            unsupported("cast of a run-time tensor to a non-float type")
        }
        _ => cx.req(n, 0),
    }
}
