//! `Conv` (regular, depthwise, grouped) and `ConvTranspose`: inputs become NHWC, weights are
//! transposed to OHWI at load (or by one op when they are computed at run time).

use heimdall_ir::{BinaryFn, ConvAttrs, OpKind, Pad2d, PadMode, StridedSliceAttrs, TensorId};

use crate::attrs::Attrs;
use crate::constant::Const;
use crate::ctx::Ctx;
use crate::error::{NodeResult, invalid, unsupported};
use crate::proto::NodeProto;
use crate::value::{Layout, Value, native, nhwc, permute, permute_const};

/// Window attributes of a 2-D op: kernel, strides, dilations.
pub(crate) struct Window2d {
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub dilation: [usize; 2],
}

fn pair(a: &Attrs, name: &str, default: usize) -> NodeResult<[usize; 2]> {
    match a.ints(name) {
        None => Ok([default; 2]),
        Some([h, w]) if (1..=1 << 16).contains(h) && (1..=1 << 16).contains(w) => {
            Ok([*h as usize, *w as usize])
        }
        Some(v) => unsupported(format!(
            "{name} {v:?} (2-D windows with positive values only)"
        )),
    }
}

/// Reads kernel (from `kernel_shape` or the weights' spatial dims), strides and dilations.
pub(crate) fn window(a: &Attrs, kernel: Option<[usize; 2]>) -> NodeResult<Window2d> {
    let kernel = match (a.ints("kernel_shape"), kernel) {
        (Some(_), _) => pair(a, "kernel_shape", 1)?,
        (None, Some(k)) => k,
        (None, None) => return invalid("no kernel_shape"),
    };
    Ok(Window2d {
        kernel,
        stride: pair(a, "strides", 1)?,
        dilation: pair(a, "dilations", 1)?,
    })
}

/// Explicit padding from `pads` or `auto_pad` for a window over `input [h, w]`.
pub(crate) fn pads(a: &Attrs, input: [usize; 2], w: &Window2d) -> NodeResult<Pad2d> {
    let auto = a.string_or("auto_pad", "NOTSET");
    match auto.as_str() {
        "NOTSET" => match a.ints("pads") {
            None => Ok(Pad2d::default()),
            Some(p) if p.len() == 4 && p.iter().all(|&v| (0..1 << 20).contains(&v)) => Ok(Pad2d {
                top: p[0] as usize,
                left: p[1] as usize,
                bottom: p[2] as usize,
                right: p[3] as usize,
            }),
            Some(p) => unsupported(format!("pads {p:?} (4 non-negative values expected)")),
        },
        "VALID" => Ok(Pad2d::default()),
        "SAME_UPPER" | "SAME_LOWER" => {
            let mut r = [(0, 0); 2];
            for d in 0..2 {
                let out = input[d].div_ceil(w.stride[d]);
                let eff = (w.kernel[d] - 1) * w.dilation[d] + 1;
                let total = ((out.max(1) - 1) * w.stride[d] + eff).saturating_sub(input[d]);
                r[d] = if auto == "SAME_UPPER" {
                    (total / 2, total - total / 2)
                } else {
                    (total - total / 2, total / 2)
                };
            }
            Ok(Pad2d {
                top: r[0].0,
                bottom: r[0].1,
                left: r[1].0,
                right: r[1].1,
            })
        }
        other => unsupported(format!("auto_pad {other}")),
    }
}

/// A constant or run-time weight tensor permuted by `perm` into the IR's filter layout.
fn filter(cx: &mut Ctx, w: &Value, perm: &[usize], name: &str) -> NodeResult<TensorId> {
    match w {
        Value::Const(c) => {
            let p = permute_const(c, perm);
            cx.b.constant(name, p.shape.clone(), p.as_f32())
        }
        v => {
            let id = native(&mut cx.b, v, name)?;
            permute(&mut cx.b, id, perm, name)
        }
    }
}

fn bias(cx: &mut Ctx, n: &NodeProto, channels: usize, name: &str) -> NodeResult<Option<TensorId>> {
    match cx.input(n, 2)? {
        None => Ok(None),
        Some(v) => {
            if cx.shape(&v).iter().product::<usize>() != channels {
                return invalid(format!("bias does not have {channels} values"));
            }
            let id = native(&mut cx.b, &v, name)?;
            Ok(Some(crate::value::reshape(
                &mut cx.b,
                id,
                vec![channels],
                name,
            )?))
        }
    }
}

/// Checks an image input: rank 4, batch 1.
pub(crate) fn image_shape(cx: &Ctx, x: &Value) -> NodeResult<Vec<usize>> {
    let s = cx.shape(x);
    if s.len() != 4 {
        return unsupported(format!("input of shape {s:?} (only 2-D images, rank 4)"));
    }
    if s[0] != 1 {
        return unsupported(format!("batch {} (the IR runs batch 1)", s[0]));
    }
    Ok(s)
}

/// `Conv`.
pub(crate) fn conv(cx: &mut Ctx, n: &NodeProto) -> NodeResult<Value> {
    let a = Attrs::of(n);
    let name = cx.out_name(n);
    let x = cx.req(n, 0)?;
    let xs = image_shape(cx, &x)?;
    let w = cx.req(n, 1)?;
    let ws = cx.shape(&w);
    if ws.len() != 4 {
        return unsupported(format!("weights of shape {ws:?}"));
    }
    let win = window(&a, Some([ws[2], ws[3]]))?;
    if win.kernel != [ws[2], ws[3]] {
        return invalid("kernel_shape differs from the weights");
    }
    let pad = pads(&a, [xs[2], xs[3]], &win)?;
    let attrs = ConvAttrs {
        stride: win.stride,
        dilation: win.dilation,
        pad,
    };
    let group = a.int_or("group", 1);
    let (c, m) = (xs[1], ws[0]);
    if group < 1
        || c % group as usize != 0
        || m % group as usize != 0
        || ws[1] * group as usize != c
    {
        return invalid(format!(
            "group {group} does not fit {c} input and {m} output channels"
        ));
    }
    let group = group as usize;
    let xid = nhwc(&mut cx.b, &x, &format!("{name}/x"))?;
    let b = bias(cx, n, m, &format!("{name}/bias"))?;
    let out = if group == 1 {
        let f = filter(cx, &w, &[0, 2, 3, 1], &format!("{name}/filter"))?;
        cx.b.op(
            OpKind::Conv2d(attrs),
            [xid, f].into_iter().chain(b).collect(),
            &name,
        )?
    } else if group == c {
        let f = filter(cx, &w, &[1, 2, 3, 0], &format!("{name}/filter"))?;
        let kind = OpKind::DepthwiseConv2d {
            attrs,
            multiplier: m / c,
        };
        cx.b.op(kind, [xid, f].into_iter().chain(b).collect(), &name)?
    } else {
        grouped(cx, xid, &w, b, attrs, group, &name)?
    };
    Ok(Ctx::tensor(out, Layout::Nhwc))
}

/// A grouped convolution as one convolution per group over a channel slice, concatenated.
fn grouped(
    cx: &mut Ctx,
    x: TensorId,
    w: &Value,
    b: Option<TensorId>,
    attrs: ConvAttrs,
    group: usize,
    name: &str,
) -> NodeResult<TensorId> {
    let Value::Const(wc) = w else {
        return unsupported("grouped convolution with weights computed at run time");
    };
    let xs = cx.b.shape(x).to_vec();
    let (cg, mg) = (xs[3] / group, wc.shape[0] / group);
    let per_group: usize = wc.shape[1..].iter().product();
    let bias_values = match b {
        Some(id) => match cx.b.constant_values(id) {
            Some(v) => Some(v.to_vec()),
            None => return unsupported("grouped convolution with a bias computed at run time"),
        },
        None => None,
    };
    let mut parts = Vec::new();
    for g in 0..group {
        let gname = format!("{name}/g{g}");
        let slice = StridedSliceAttrs {
            begin: vec![0, 0, 0, (g * cg) as i64],
            stride: vec![1; 4],
            count: vec![xs[0], xs[1], xs[2], cg],
        };
        let xg = cx.b.op_shaped(
            OpKind::StridedSlice(slice),
            vec![x],
            &format!("{gname}/x"),
            vec![xs[0], xs[1], xs[2], cg],
        )?;
        let mut ws = wc.shape.clone();
        ws[0] = mg;
        let values = wc.values[g * mg * per_group..(g + 1) * mg * per_group].to_vec();
        let wg = permute_const(&Const::new(ws, values, wc.elem), &[0, 2, 3, 1]);
        let f =
            cx.b.constant(&format!("{gname}/filter"), wg.shape.clone(), wg.as_f32())?;
        let mut inputs = vec![xg, f];
        if let Some(bv) = &bias_values {
            inputs.push(cx.b.constant(
                &format!("{gname}/bias"),
                vec![mg],
                bv[g * mg..(g + 1) * mg].to_vec(),
            )?);
        }
        parts.push(cx.b.op(OpKind::Conv2d(attrs), inputs, &gname)?);
    }
    cx.b.op(OpKind::Concatenation { axis: 3 }, parts, name)
}

/// `ConvTranspose` (group 1, dilation 1).
pub(crate) fn conv_transpose(cx: &mut Ctx, n: &NodeProto) -> NodeResult<Value> {
    let a = Attrs::of(n);
    let name = cx.out_name(n);
    let x = cx.req(n, 0)?;
    let xs = image_shape(cx, &x)?;
    let w = cx.req(n, 1)?;
    let ws = cx.shape(&w);
    if ws.len() != 4 || ws[0] != xs[1] {
        return invalid(format!("weights {ws:?} for input {xs:?}"));
    }
    if a.int_or("group", 1) != 1 {
        return unsupported("grouped ConvTranspose");
    }
    let win = window(&a, Some([ws[2], ws[3]]))?;
    if win.dilation != [1, 1] {
        return unsupported("dilated ConvTranspose");
    }
    let opad = match a.ints("output_padding") {
        None => [0, 0],
        Some([h, w]) if *h >= 0 && *w >= 0 => [*h as usize, *w as usize],
        Some(v) => return unsupported(format!("output_padding {v:?}")),
    };
    let crop = transpose_crop(&a, &xs, &win, opad)?;
    // The IR crops `pad` from `(H-1)*s + k` (without output padding).
    let end = [crop[0].1 - opad[0] as isize, crop[1].1 - opad[1] as isize];
    let pad = Pad2d {
        top: crop[0].0,
        bottom: end[0].max(0) as usize,
        left: crop[1].0,
        right: end[1].max(0) as usize,
    };
    let extra = [(-end[0]).max(0) as usize, (-end[1]).max(0) as usize];
    let attrs = ConvAttrs {
        stride: win.stride,
        dilation: [1, 1],
        pad,
    };
    let xid = nhwc(&mut cx.b, &x, &format!("{name}/x"))?;
    let f = filter(cx, &w, &[1, 2, 3, 0], &format!("{name}/filter"))?;
    let b = bias(cx, n, ws[1], &format!("{name}/bias"))?;
    if extra == [0, 0] {
        let out = cx.b.op(
            OpKind::TransposeConv2d(attrs),
            [xid, f].into_iter().chain(b).collect(),
            &name,
        )?;
        return Ok(Ctx::tensor(out, Layout::Nhwc));
    }
    let out = transpose_conv_extended(cx, &name, attrs, [xid, f], b, extra)?;
    Ok(Ctx::tensor(out, Layout::Nhwc))
}

/// The (begin, end) a `ConvTranspose` of input `xs` (NCHW) with output padding `opad` crops
/// from its full output per axis, from its `output_shape`, `auto_pad` or `pads`; a negative
/// end crop (output padding or output_shape past the full output) becomes rows that only
/// receive the bias.
fn transpose_crop(
    a: &Attrs,
    xs: &[usize],
    win: &Window2d,
    opad: [usize; 2],
) -> NodeResult<[(usize, isize); 2]> {
    let full = [
        (xs[2] - 1) * win.stride[0] + win.kernel[0] + opad[0],
        (xs[3] - 1) * win.stride[1] + win.kernel[1] + opad[1],
    ];
    let auto = a.string_or("auto_pad", "NOTSET");
    let out_shape: Option<[usize; 2]> = match a.ints("output_shape") {
        Some(s) if s.len() >= 2 => {
            let s = &s[s.len() - 2..];
            Some([s[0].max(0) as usize, s[1].max(0) as usize])
        }
        Some(s) => return unsupported(format!("output_shape {s:?}")),
        None if auto.starts_with("SAME") => Some([xs[2] * win.stride[0], xs[3] * win.stride[1]]),
        None => None,
    };
    Ok(match out_shape {
        Some(o) => {
            let mut r = [(0, 0); 2];
            for d in 0..2 {
                let total = full[d] as isize - o[d] as isize;
                r[d] = if total < 0 {
                    (0, total)
                } else if auto == "SAME_UPPER" {
                    ((total / 2) as usize, total - total / 2)
                } else {
                    ((total - total / 2) as usize, total / 2)
                };
            }
            r
        }
        None => {
            let p = pads(a, [xs[2], xs[3]], win)?;
            [(p.top, p.bottom as isize), (p.left, p.right as isize)]
        }
    })
}

/// A transposed convolution of `[x, filter]` with `extra` end rows/columns past its cropped
/// output: the unbiased result zero-padded, then the bias `b` added everywhere.
fn transpose_conv_extended(
    cx: &mut Ctx,
    name: &str,
    attrs: ConvAttrs,
    [xid, f]: [TensorId; 2],
    b: Option<TensorId>,
    extra: [usize; 2],
) -> NodeResult<TensorId> {
    let t = cx.b.op(
        OpKind::TransposeConv2d(attrs),
        vec![xid, f],
        &format!("{name}/unpadded"),
    )?;
    let pads = vec![[0, 0], [0, extra[0]], [0, extra[1]], [0, 0]];
    let mut out = cx.b.op(
        OpKind::Pad {
            pads,
            mode: PadMode::ZERO,
        },
        vec![t],
        &format!("{name}/padded"),
    )?;
    if let Some(b) = b {
        out = cx.b.op(OpKind::Binary(BinaryFn::Add), vec![out, b], name)?;
    }
    Ok(out)
}
