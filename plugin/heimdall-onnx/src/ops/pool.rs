//! Pooling (`MaxPool`, `AveragePool`, global pools) and reductions (`Reduce*`), with axes
//! mapped to the NHWC layout where the input is an image.

use heimdall_ir::{OpKind, Pad2d, PadMode, PoolAttrs, ReduceKind};

use crate::attrs::Attrs;
use crate::ctx::Ctx;
use crate::error::{NodeResult, unsupported};
use crate::ops::conv::{image_shape, pads, window};
use crate::proto::NodeProto;
use crate::shapes;
use crate::value::{Layout, NHWC_OF_NCHW, Value, native, nhwc};

/// `MaxPool` and `AveragePool` over 2-D images.
pub(crate) fn pool(cx: &mut Ctx, n: &NodeProto) -> NodeResult<Value> {
    let a = Attrs::of(n);
    let max = n.op_type.as_deref() == Some("MaxPool");
    if n.output.iter().skip(1).any(|o| !o.is_empty()) {
        return unsupported("the indices output");
    }
    let name = cx.out_name(n);
    let x = cx.req(n, 0)?;
    let xs = image_shape(cx, &x)?;
    let w = window(&a, None)?;
    if w.dilation != [1, 1] {
        return unsupported("dilated pooling");
    }
    let mut pad = pads(&a, [xs[2], xs[3]], &w)?;
    let count_pad = !max && a.int_or("count_include_pad", 0) != 0;
    let ceil = a.int_or("ceil_mode", 0) != 0;
    if ceil {
        // Extra end padding so that the floor of the window count gives the ceil.
        let extra = |input: usize, k: usize, s: usize, p0: usize, p1: usize| -> usize {
            let span = (input + p0 + p1).saturating_sub(k);
            let mut out = span.div_ceil(s) + 1;
            // The last window must start inside the input or the leading padding.
            if (out - 1) * s >= input + p0 {
                out -= 1;
            }
            ((out - 1) * s + k).saturating_sub(input + p0 + p1)
        };
        if count_pad {
            return unsupported("ceil_mode with count_include_pad");
        }
        pad.bottom += extra(xs[2], w.kernel[0], w.stride[0], pad.top, pad.bottom);
        pad.right += extra(xs[3], w.kernel[1], w.stride[1], pad.left, pad.right);
    }
    let mut xid = nhwc(&mut cx.b, &x, &format!("{name}/x"))?;
    if count_pad && pad != Pad2d::default() {
        let pads = vec![[0, 0], [pad.top, pad.bottom], [pad.left, pad.right], [0, 0]];
        xid = cx.b.op(
            OpKind::Pad {
                pads,
                mode: PadMode::ZERO,
            },
            vec![xid],
            &format!("{name}/pad"),
        )?;
        pad = Pad2d::default();
    }
    let attrs = PoolAttrs {
        filter: w.kernel,
        stride: w.stride,
        pad,
    };
    let kind = if max {
        OpKind::MaxPool2d(attrs)
    } else {
        OpKind::AvgPool2d(attrs)
    };
    let out = cx.b.op(kind, vec![xid], &name)?;
    Ok(Ctx::tensor(out, Layout::Nhwc))
}

/// `GlobalAveragePool` and `GlobalMaxPool`.
pub(crate) fn global_pool(cx: &mut Ctx, n: &NodeProto) -> NodeResult<Value> {
    let name = cx.out_name(n);
    let x = cx.req(n, 0)?;
    image_shape(cx, &x)?;
    let xid = nhwc(&mut cx.b, &x, &format!("{name}/x"))?;
    let kind = if n.op_type.as_deref() == Some("GlobalMaxPool") {
        OpKind::Reduce {
            kind: ReduceKind::Max,
            axes: vec![1, 2],
            keep_dims: true,
        }
    } else {
        OpKind::Reduce {
            kind: ReduceKind::Mean,
            axes: vec![1, 2],
            keep_dims: true,
        }
    };
    let out = cx.b.op(kind, vec![xid], &name)?;
    Ok(Ctx::tensor(out, Layout::Nhwc))
}

/// `Reduce*` ops.
pub(crate) fn reduce(cx: &mut Ctx, n: &NodeProto) -> NodeResult<Value> {
    let a = Attrs::of(n);
    let op = n.op_type.as_deref().unwrap_or("");
    let name = cx.out_name(n);
    let x = cx.req(n, 0)?;
    let xs = cx.shape(&x);
    let keep = a.int_or("keepdims", 1) != 0;
    let list: Option<Vec<i64>> = match cx.const_input(n, 1, "axes")? {
        Some(c) => Some(c.as_i64()),
        None => a.ints("axes").map(<[i64]>::to_vec),
    };
    let axes = match list {
        Some(l) if !l.is_empty() => shapes::axes(&l, xs.len())?,
        _ if a.int_or("noop_with_empty_axes", 0) != 0 => return cx.req(n, 0),
        _ => (0..xs.len()).collect(),
    };
    let layout = match &x {
        Value::Tensor(t) if t.layout == Layout::Nhwc => {
            let kept: Vec<usize> = [0, 2, 3, 1]
                .into_iter()
                .filter(|d| !axes.contains(d))
                .collect();
            if keep || kept.windows(2).all(|w| w[0] < w[1]) {
                Layout::Nhwc
            } else {
                Layout::Native
            }
        }
        _ => Layout::Native,
    };
    let (xid, ir_axes) = match layout {
        Layout::Nhwc => {
            let Value::Tensor(t) = &x else { unreachable!() };
            let mut ax: Vec<usize> = axes.iter().map(|&d| NHWC_OF_NCHW[d]).collect();
            ax.sort_unstable();
            (t.id, ax)
        }
        Layout::Native => (native(&mut cx.b, &x, &format!("{name}/x"))?, axes),
    };
    let kind = OpKind::Reduce {
        kind: match op {
            "ReduceMean" => ReduceKind::Mean,
            "ReduceSum" => ReduceKind::Sum,
            "ReduceMax" => ReduceKind::Max,
            "ReduceMin" => ReduceKind::Min,
            "ReduceProd" => ReduceKind::Prod,
            "ReduceSumSquare" => ReduceKind::SumSquare,
            "ReduceL1" => ReduceKind::L1,
            "ReduceL2" => ReduceKind::L2,
            "ReduceLogSum" => ReduceKind::LogSum,
            _ => ReduceKind::LogSumExp,
        },
        axes: ir_axes,
        keep_dims: keep,
    };
    let out = cx.b.op(kind, vec![xid], &name)?;
    let out_layout = if keep { layout } else { Layout::Native };
    Ok(Ctx::tensor(out, out_layout))
}
