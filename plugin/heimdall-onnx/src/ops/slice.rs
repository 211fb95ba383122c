//! `Concat`, `Slice`, `Split` and `Pad` on run-time tensors, with axes mapped to NHWC when the
//! input is an image (the layout is kept).

use heimdall_ir::{OpKind, PadMode, StridedSliceAttrs, TensorId};

use crate::attrs::Attrs;
use crate::ctx::Ctx;
use crate::error::{NodeResult, invalid, unsupported};
use crate::proto::NodeProto;
use crate::shapes::{self, SliceAxis};
use crate::value::{Layout, NHWC_OF_NCHW, Value, in_layout};

/// The layout to compute in: NHWC when the first tensor input is an NHWC image.
fn layout_of(vals: &[Value]) -> Layout {
    vals.iter()
        .find_map(|v| match v {
            Value::Tensor(t) => Some(t.layout),
            Value::Const(_) => None,
        })
        .unwrap_or(Layout::Native)
}

/// The IR axis of ONNX axis `d` in `layout`.
fn ir_axis(d: usize, layout: Layout) -> usize {
    match layout {
        Layout::Native => d,
        Layout::Nhwc => NHWC_OF_NCHW[d],
    }
}

/// `Concat`.
pub(crate) fn concat(cx: &mut Ctx, n: &NodeProto) -> NodeResult<Value> {
    let name = cx.out_name(n);
    let vals: Vec<Value> = (0..n.input.len())
        .filter_map(|i| cx.input(n, i).transpose())
        .collect::<NodeResult<_>>()?;
    let Some(first) = vals.first() else {
        return invalid("Concat of nothing");
    };
    let rank = cx.shape(first).len();
    let ax = shapes::axis(Attrs::of(n).int_or("axis", 0), rank)?;
    let layout = layout_of(&vals);
    let mut ids = Vec::new();
    for (i, v) in vals.iter().enumerate() {
        ids.push(in_layout(&mut cx.b, v, layout, &format!("{name}/in{i}"))?);
    }
    let out = cx.b.op(
        OpKind::Concatenation {
            axis: ir_axis(ax, layout),
        },
        ids,
        &name,
    )?;
    Ok(Ctx::tensor(out, layout))
}

/// A resolved slice as an IR op over `x` (ranges given per ONNX axis).
fn strided(
    cx: &mut Ctx,
    x: TensorId,
    layout: Layout,
    r: &[SliceAxis],
    name: &str,
) -> NodeResult<TensorId> {
    if r.iter().any(|s| s.count == 0) {
        return unsupported("a slice with no elements");
    }
    let rank = r.len();
    let mut attrs = StridedSliceAttrs {
        begin: vec![0; rank],
        stride: vec![1; rank],
        count: vec![0; rank],
    };
    for (d, s) in r.iter().enumerate() {
        let k = ir_axis(d, layout);
        attrs.begin[k] = s.begin;
        attrs.stride[k] = s.step;
        attrs.count[k] = s.count;
    }
    let shape = attrs.count.clone();
    cx.b.op_shaped(OpKind::StridedSlice(attrs), vec![x], name, shape)
}

/// `Slice`.
pub(crate) fn slice(cx: &mut Ctx, n: &NodeProto) -> NodeResult<Value> {
    let a = Attrs::of(n);
    let name = cx.out_name(n);
    let x = cx.req(n, 0)?;
    let xs = cx.shape(&x);
    let ints = |i: usize, what: &str| -> NodeResult<Option<Vec<i64>>> {
        Ok(cx.const_input(n, i, what)?.map(|c| c.as_i64()))
    };
    let (starts, ends, axes, steps) = if cx.opset < 10 {
        (
            a.ints("starts").unwrap_or(&[]).to_vec(),
            a.ints("ends").unwrap_or(&[]).to_vec(),
            a.ints("axes").map(<[i64]>::to_vec),
            None,
        )
    } else {
        let s =
            ints(1, "starts")?.ok_or(crate::error::NodeError::Invalid("missing starts".into()))?;
        let e = ints(2, "ends")?.ok_or(crate::error::NodeError::Invalid("missing ends".into()))?;
        (s, e, ints(3, "axes")?, ints(4, "steps")?)
    };
    let r = shapes::slice_ranges(&xs, &starts, &ends, axes.as_deref(), steps.as_deref())?;
    let layout = layout_of(std::slice::from_ref(&x));
    let id = in_layout(&mut cx.b, &x, layout, &format!("{name}/x"))?;
    let out = strided(cx, id, layout, &r, &name)?;
    Ok(Ctx::tensor(out, layout))
}

/// `Split` into one slice per output.
pub(crate) fn split(cx: &mut Ctx, n: &NodeProto) -> NodeResult<Vec<Value>> {
    let a = Attrs::of(n);
    let x = cx.req(n, 0)?;
    let xs = cx.shape(&x);
    let ax = shapes::axis(a.int_or("axis", 0), xs.len())?;
    let outs = n.output.len();
    let sizes: Vec<usize> = match cx
        .const_input(n, 1, "split")?
        .map(|c| c.as_i64())
        .or(a.ints("split").map(<[i64]>::to_vec))
    {
        Some(s) => s.iter().map(|&v| v.max(0) as usize).collect(),
        None => {
            let parts = a.int_or("num_outputs", outs as i64).max(1) as usize;
            let each = xs[ax].div_ceil(parts);
            (0..parts)
                .map(|i| each.min(xs[ax].saturating_sub(i * each)))
                .collect()
        }
    };
    if sizes.iter().sum::<usize>() != xs[ax] || sizes.len() != outs {
        return invalid(format!(
            "split {sizes:?} of axis {ax} of {xs:?} into {outs} outputs"
        ));
    }
    let layout = layout_of(std::slice::from_ref(&x));
    let name = cx.out_name(n);
    let id = in_layout(&mut cx.b, &x, layout, &format!("{name}/x"))?;
    let mut begin = 0;
    let mut values = Vec::new();
    for (i, &s) in sizes.iter().enumerate() {
        let mut r: Vec<SliceAxis> = xs
            .iter()
            .map(|&d| SliceAxis {
                begin: 0,
                step: 1,
                count: d,
            })
            .collect();
        r[ax] = SliceAxis {
            begin: begin as i64,
            step: 1,
            count: s,
        };
        begin += s;
        let oname = n.output.get(i).cloned().unwrap_or_default();
        values.push(Ctx::tensor(strided(cx, id, layout, &r, &oname)?, layout));
    }
    Ok(values)
}

/// `Pad` (constant, reflect, edge; non-negative pads).
pub(crate) fn pad(cx: &mut Ctx, n: &NodeProto) -> NodeResult<Value> {
    let a = Attrs::of(n);
    let name = cx.out_name(n);
    let x = cx.req(n, 0)?;
    let xs = cx.shape(&x);
    let rank = xs.len();
    let (pads, value) = if cx.opset < 11 {
        (
            a.ints("pads").unwrap_or(&[]).to_vec(),
            a.float_or("value", 0.0),
        )
    } else {
        let p = cx
            .const_input(n, 1, "pads")?
            .map(|c| c.as_i64())
            .unwrap_or_default();
        let v = cx
            .const_input(n, 2, "constant_value")?
            .and_then(|c| c.values.first().copied())
            .unwrap_or(0.0);
        (p, v as f32)
    };
    let axes: Vec<usize> = match cx.const_input(n, 3, "axes")? {
        Some(c) => c
            .as_i64()
            .iter()
            .map(|&v| shapes::axis(v, rank))
            .collect::<NodeResult<_>>()?,
        None => (0..rank).collect(),
    };
    if pads.len() != 2 * axes.len() {
        return invalid(format!("{} pads for {} axes", pads.len(), axes.len()));
    }
    if pads.iter().any(|&p| !(0..1 << 20).contains(&p)) {
        return unsupported(format!("pads {pads:?} (negative pads crop)"));
    }
    let mode = match a.string_or("mode", "constant").as_str() {
        "constant" => PadMode::Constant(value),
        "reflect" => PadMode::Reflect,
        "edge" => PadMode::Edge,
        m => return unsupported(format!("mode {m}")),
    };
    let layout = layout_of(std::slice::from_ref(&x));
    let mut ir = vec![[0usize; 2]; rank];
    for (i, &d) in axes.iter().enumerate() {
        ir[match layout {
            Layout::Native => d,
            Layout::Nhwc => NHWC_OF_NCHW[d],
        }] = [pads[i] as usize, pads[i + axes.len()] as usize];
    }
    let id = in_layout(&mut cx.b, &x, layout, &format!("{name}/x"))?;
    let kind = OpKind::Pad { pads: ir, mode };
    let out = cx.b.op(kind, vec![id], &name)?;
    Ok(Ctx::tensor(out, layout))
}
