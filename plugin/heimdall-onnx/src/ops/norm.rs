//! Normalisations: `BatchNormalization` (folded into the preceding convolution where it owns
//! the conv's output, else a per-channel multiply-add), `InstanceNormalization`, and the
//! ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div pattern PyTorch exports for instance norm.

use heimdall_ir::{BinaryFn, OpKind, TensorId};

use crate::attrs::Attrs;
use crate::constant::Const;
use crate::ctx::Ctx;
use crate::error::{NodeResult, invalid, unsupported};
use crate::proto::NodeProto;
use crate::value::{Layout, Value, in_layout, nhwc};

/// `BatchNormalization` (inference form).
pub(crate) fn batch_norm(cx: &mut Ctx, n: &NodeProto) -> NodeResult<Value> {
    if n.output.iter().skip(1).any(|o| !o.is_empty())
        || Attrs::of(n).int_or("training_mode", 0) != 0
    {
        return unsupported("training mode (running statistics outputs)");
    }
    let eps = Attrs::of(n).float_or("epsilon", 1e-5) as f64;
    let params: Vec<Const> = (1..5)
        .map(|i| {
            cx.const_input(n, i, "batch norm parameter")?
                .map_or_else(|| invalid(format!("missing input {i}")), Ok)
        })
        .collect::<NodeResult<_>>()?;
    let x = cx.req(n, 0)?;
    let xs = cx.shape(&x);
    if xs.len() < 2 {
        return unsupported(format!("input of shape {xs:?}"));
    }
    let c = xs[1];
    if params.iter().any(|p| p.numel() != c) {
        return invalid(format!("parameters do not have {c} values"));
    }
    // y = x * mul + add
    let mul: Vec<f64> = (0..c)
        .map(|i| {
            params[0].values[i] as f32 as f64 / ((params[3].values[i] as f32 as f64) + eps).sqrt()
        })
        .collect();
    let add: Vec<f64> = (0..c)
        .map(|i| params[1].values[i] - params[2].values[i] * mul[i])
        .collect();
    let name = cx.out_name(n);
    if let Value::Tensor(t) = &x
        && let Some(out) = fold_into_conv(cx, n, t.id, &mul, &add)?
    {
        return Ok(Ctx::tensor(out, t.layout));
    }
    // Per-channel constants shaped [C, 1, ...] in ONNX terms.
    let mut pshape = vec![c];
    pshape.extend(std::iter::repeat_n(1, xs.len() - 2));
    let layout = match &x {
        Value::Tensor(t) => t.layout,
        Value::Const(_) => Layout::Native,
    };
    let xid = in_layout(&mut cx.b, &x, layout, &format!("{name}/x"))?;
    let cm = Value::Const(Const::new(
        pshape.clone(),
        mul,
        crate::constant::Elem::Float,
    ));
    let ca = Value::Const(Const::new(pshape, add, crate::constant::Elem::Float));
    let m = in_layout(&mut cx.b, &cm, layout, &format!("{name}/scale"))?;
    let a = in_layout(&mut cx.b, &ca, layout, &format!("{name}/shift"))?;
    let y = cx.b.op(
        OpKind::Binary(BinaryFn::Mul),
        vec![xid, m],
        &format!("{name}/mul"),
    )?;
    let out = cx.b.op(OpKind::Binary(BinaryFn::Add), vec![y, a], &name)?;
    Ok(Ctx::tensor(out, layout))
}

/// Folds `x * mul + add` into the convolution producing `x` when nothing else reads `x` and
/// its weights are constants: returns the convolution's (rewritten) output.
fn fold_into_conv(
    cx: &mut Ctx,
    n: &NodeProto,
    x: TensorId,
    mul: &[f64],
    add: &[f64],
) -> NodeResult<Option<TensorId>> {
    if cx.uses_of(&n.input[0]) != 1 || cx.b.graph.outputs.contains(&x) {
        return Ok(None);
    }
    let Some(pi) =
        cx.b.graph
            .ops
            .iter()
            .rposition(|op| op.outputs.first() == Some(&x))
    else {
        return Ok(None);
    };
    let op = cx.b.graph.ops[pi].clone();
    let per_out_last = match op.kind {
        OpKind::Conv2d(_) | OpKind::TransposeConv2d(_) => false,
        OpKind::DepthwiseConv2d { .. } => true,
        _ => return Ok(None),
    };
    let c = mul.len();
    let Some(w) = cx.b.constant_values(op.inputs[1]).map(<[f32]>::to_vec) else {
        return Ok(None);
    };
    let bias = match op.inputs.get(2) {
        Some(&b) => match cx.b.constant_values(b) {
            Some(v) => v.to_vec(),
            None => return Ok(None),
        },
        None => vec![0.0; c],
    };
    if bias.len() != c || w.len() % c != 0 {
        return Ok(None);
    }
    let per = w.len() / c;
    let scaled: Vec<f32> = w
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let ch = if per_out_last { i % c } else { i / per };
            (v as f64 * mul[ch]) as f32
        })
        .collect();
    let new_bias: Vec<f32> = (0..c)
        .map(|i| (bias[i] as f64 * mul[i] + add[i]) as f32)
        .collect();
    let name = cx.out_name(n);
    let wshape = cx.b.shape(op.inputs[1]).to_vec();
    let wid =
        cx.b.constant(&format!("{name}/folded_filter"), wshape, scaled)?;
    let bid =
        cx.b.constant(&format!("{name}/folded_bias"), vec![c], new_bias)?;
    let target = &mut cx.b.graph.ops[pi];
    target.inputs = vec![op.inputs[0], wid, bid];
    Ok(Some(x))
}

/// `InstanceNormalization`.
pub(crate) fn instance_norm(cx: &mut Ctx, n: &NodeProto) -> NodeResult<Value> {
    let eps = Attrs::of(n).float_or("epsilon", 1e-5);
    let x = cx.req(n, 0)?;
    crate::ops::conv::image_shape(cx, &x)?;
    let name = cx.out_name(n);
    let xid = nhwc(&mut cx.b, &x, &format!("{name}/x"))?;
    let mut inputs = vec![xid];
    for i in 1..3 {
        let v = cx.req(n, i)?;
        let id = crate::value::native(&mut cx.b, &v, &format!("{name}/p{i}"))?;
        inputs.push(id);
    }
    let out =
        cx.b.op(OpKind::InstanceNorm { epsilon: eps }, inputs, &name)?;
    Ok(Ctx::tensor(out, Layout::Nhwc))
}

/// Recognises, starting at a `ReduceMean` over H and W, the instance normalisation PyTorch
/// exports: `d = x - mean(x)`, `v = mean(d^2)`, `d / sqrt(v + eps)` (or `d * (1 / sqrt(..))`).
/// On a match it emits one op, marks the pattern's nodes as done, and returns the value of the
/// pattern's last node (which the caller stores under this node's output: nothing else reads
/// it).
pub(crate) fn instance_norm_pattern(
    cx: &mut Ctx,
    n: &NodeProto,
    index: usize,
    nodes: &[NodeProto],
) -> NodeResult<Option<Value>> {
    let Some(m) = match_pattern(cx, n, index, nodes) else {
        return Ok(None);
    };
    let x = cx.req(n, 0)?;
    if crate::ops::conv::image_shape(cx, &x).is_err() {
        return Ok(None);
    }
    let last = &nodes[*m.nodes.last().unwrap_or(&index)];
    let name = last.output.first().cloned().unwrap_or_default();
    let xid = nhwc(&mut cx.b, &x, &format!("{name}/x"))?;
    let out =
        cx.b.op(OpKind::InstanceNorm { epsilon: m.eps }, vec![xid], &name)?;
    let v = Ctx::tensor(out, Layout::Nhwc);
    cx.values.insert(name, v.clone());
    cx.skip.extend(m.nodes.iter().copied());
    // This node's own output (the mean) is only read inside the pattern.
    Ok(Some(v))
}

struct Match {
    nodes: Vec<usize>,
    eps: f32,
}

fn match_pattern(cx: &Ctx, n: &NodeProto, index: usize, nodes: &[NodeProto]) -> Option<Match> {
    let op = |i: usize| nodes[i].op_type.as_deref().unwrap_or("");
    let out = |i: usize| nodes[i].output.first().map(String::as_str).unwrap_or("");
    let consumers = |name: &str| -> Vec<usize> {
        nodes
            .iter()
            .enumerate()
            .skip(index)
            .filter(|(_, m)| m.input.iter().any(|i| i == name))
            .map(|(i, _)| i)
            .collect()
    };
    let only = |name: &str, want: &str| -> Option<usize> {
        let c = consumers(name);
        (c.len() == 1 && cx.uses_of(name) == 1 && op(c[0]) == want).then(|| c[0])
    };
    let const_of = |name: &str| match cx.values.get(name) {
        Some(Value::Const(c)) if c.numel() == 1 => Some(c.values[0]),
        _ => None,
    };
    let hw_mean = |i: usize| -> bool {
        let a = Attrs::of(&nodes[i]);
        let axes = a.ints("axes").map(<[i64]>::to_vec).or_else(|| {
            match nodes[i].input.get(1).and_then(|s| cx.values.get(s)) {
                Some(Value::Const(c)) => Some(c.as_i64()),
                _ => None,
            }
        });
        let mut axes: Vec<i64> = axes
            .unwrap_or_default()
            .iter()
            .map(|&a| if a < 0 { a + 4 } else { a })
            .collect();
        axes.sort_unstable();
        op(i) == "ReduceMean" && axes == [2, 3] && a.int_or("keepdims", 1) == 1
    };
    let x = n.input.first()?;
    if !hw_mean(index) {
        return None;
    }
    let sub = only(out(index), "Sub")?;
    if nodes[sub].input.first()? != x || nodes[sub].input.get(1)? != out(index) {
        return None;
    }
    let sub_uses = consumers(out(sub));
    if sub_uses.len() != 2 || cx.uses_of(out(sub)) != 2 {
        return None;
    }
    let pow = *sub_uses.iter().find(|&&i| op(i) == "Pow")?;
    if const_of(nodes[pow].input.get(1)?)? != 2.0 {
        return None;
    }
    let var = only(out(pow), "ReduceMean")?;
    if !hw_mean(var) {
        return None;
    }
    let add = only(out(var), "Add")?;
    let other = nodes[add].input.iter().find(|i| *i != out(var))?;
    let eps = const_of(other)? as f32;
    let sqrt = only(out(add), "Sqrt")?;
    let div = only(out(sqrt), "Div")?;
    let user = *sub_uses.iter().find(|&&i| i != pow)?;
    let mut list = vec![index, sub, pow, var, add, sqrt, div];
    if user == div {
        // d / sqrt(v + eps)
        if nodes[div].input.first()? != out(sub) {
            return None;
        }
    } else {
        // d * (1 / sqrt(v + eps))
        if const_of(nodes[div].input.first()?)? != 1.0 || op(user) != "Mul" {
            return None;
        }
        if only(out(div), "Mul")? != user {
            return None;
        }
        list.push(user);
    }
    list.sort_unstable();
    list.dedup();
    Some(Match { nodes: list, eps })
}
