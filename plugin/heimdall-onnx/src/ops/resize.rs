//! `Resize` (opset 10+) and `Upsample`: nearest or linear over H and W of an NHWC image, with
//! the coordinate transformation and rounding the model states; scales or sizes must fold to
//! constants.

use heimdall_ir::{CoordMode, NearestMode, OpKind, ResizeAttrs, ResizeMode, ResizeScale};

use crate::attrs::Attrs;
use crate::ctx::Ctx;
use crate::error::{NodeResult, invalid, unsupported};
use crate::ops::conv::image_shape;
use crate::proto::NodeProto;
use crate::value::{Layout, Value, nhwc};

/// `Resize` and `Upsample`.
pub(crate) fn resize(cx: &mut Ctx, n: &NodeProto) -> NodeResult<Value> {
    let a = Attrs::of(n);
    let name = cx.out_name(n);
    let upsample = n.op_type.as_deref() == Some("Upsample");
    let legacy = upsample || cx.opset < 11;
    let x = cx.req(n, 0)?;
    let xs = image_shape(cx, &x)?;
    let (scales, sizes) = scales_and_sizes(cx, n, &a, &xs, upsample, legacy)?;
    if a.int_or("antialias", 0) != 0 {
        return unsupported("antialias");
    }
    let policy = a.string_or("keep_aspect_ratio_policy", "stretch");
    let (out_hw, scale) = output_size(scales, sizes, &xs, &policy)?;
    if out_hw[0] == 0 || out_hw[1] == 0 || out_hw[0] > 1 << 16 || out_hw[1] > 1 << 16 {
        return unsupported(format!("output size {out_hw:?}"));
    }
    let mode = resize_mode(&a, legacy)?;
    let coord = coord_mode(&a, legacy)?;
    let xid = nhwc(&mut cx.b, &x, &format!("{name}/x"))?;
    let attrs = ResizeAttrs {
        mode,
        coord,
        scale: ResizeScale::Given(scale),
    };
    let out = cx.b.op_shaped(
        OpKind::Resize(attrs),
        vec![xid],
        &name,
        vec![xs[0], out_hw[0], out_hw[1], xs[1]],
    )?;
    Ok(Ctx::tensor(out, Layout::Nhwc))
}

/// Scales or sizes of a resize, one per NCHW axis, where the node gives them.
type AxisValues = Option<Vec<f64>>;

/// The node's scales and sizes over the 4 NCHW axes (input `xs`), from its constant inputs
/// (spread over the `axes` they name) or, for an old `Upsample`, the `scales` attribute.
fn scales_and_sizes(
    cx: &Ctx,
    n: &NodeProto,
    a: &Attrs,
    xs: &[usize],
    upsample: bool,
    legacy: bool,
) -> NodeResult<(AxisValues, AxisValues)> {
    let (scales_at, sizes_at) = if legacy { (1, usize::MAX) } else { (2, 3) };
    // `axes` (opset 18) names the axes that scales/sizes cover; others keep scale 1.
    let axes: Vec<usize> = match a.ints("axes") {
        Some(list) => list
            .iter()
            .map(|&v| crate::shapes::axis(v, 4))
            .collect::<NodeResult<_>>()?,
        None => vec![0, 1, 2, 3],
    };
    let spread = |vals: Vec<f64>, fill: f64| -> NodeResult<Vec<f64>> {
        if vals.len() != axes.len() {
            return invalid(format!("{} values for axes {axes:?}", vals.len()));
        }
        let mut full = vec![fill; 4];
        for (&ax, v) in axes.iter().zip(vals) {
            full[ax] = v;
        }
        Ok(full)
    };
    let scales: Option<Vec<f64>> = match cx.const_input(n, scales_at, "scales")? {
        Some(c) if c.numel() > 0 => Some(spread(c.values.clone(), 1.0)?),
        _ if upsample && cx.opset < 9 => a
            .floats("scales")
            .map(|f| f.iter().map(|&v| v as f64).collect()),
        _ => None,
    };
    let sizes: Option<Vec<f64>> = match cx.const_input(n, sizes_at, "sizes")? {
        Some(c) if c.numel() > 0 => {
            let full: Vec<f64> = xs.iter().map(|&d| d as f64).collect();
            let mut s = spread(c.values.clone(), 0.0)?;
            for d in 0..4 {
                if !axes.contains(&d) {
                    s[d] = full[d];
                }
            }
            Some(s)
        }
        _ => None,
    };
    Ok((scales, sizes))
}

/// The output height and width and the H and W scales of a resize of `xs` (NCHW) by `scales`
/// or else to `sizes` (fitted by the keep-aspect-ratio `policy`).
fn output_size(
    scales: AxisValues,
    sizes: AxisValues,
    xs: &[usize],
    policy: &str,
) -> NodeResult<([usize; 2], [f32; 2])> {
    Ok(match (scales, sizes) {
        (Some(s), _) => {
            if s.len() != 4 || s[0] != 1.0 || s[1] != 1.0 || s[2] <= 0.0 || s[3] <= 0.0 {
                return unsupported(format!("scales {s:?} (only H and W may change)"));
            }
            let (sh, sw) = (s[2] as f32, s[3] as f32);
            let o = [
                (xs[2] as f32 * sh).floor() as usize,
                (xs[3] as f32 * sw).floor() as usize,
            ];
            (o, [sh, sw])
        }
        (None, Some(z)) => {
            if z.len() != 4 || z[0] != xs[0] as f64 || z[1] != xs[1] as f64 {
                return unsupported(format!("sizes {z:?} (only H and W may change)"));
            }
            match policy {
                "stretch" => (
                    [z[2] as usize, z[3] as usize],
                    [(z[2] / xs[2] as f64) as f32, (z[3] / xs[3] as f64) as f32],
                ),
                "not_larger" | "not_smaller" => {
                    let (rh, rw) = (z[2] as f32 / xs[2] as f32, z[3] as f32 / xs[3] as f32);
                    let r = if policy == "not_larger" {
                        rh.min(rw)
                    } else {
                        rh.max(rw)
                    };
                    let round = |v: f32| (v + 0.5).floor() as usize;
                    ([round(xs[2] as f32 * r), round(xs[3] as f32 * r)], [r, r])
                }
                p => return unsupported(format!("keep_aspect_ratio_policy {p}")),
            }
        }
        (None, None) => return invalid("neither scales nor sizes"),
    })
}

/// The interpolation of attribute `mode` (with its `nearest_mode` or cubic coefficients);
/// `legacy` (Upsample, opset < 11) rounds nearest down and has no cubic.
fn resize_mode(a: &Attrs, legacy: bool) -> NodeResult<ResizeMode> {
    Ok(match a.string_or("mode", "nearest").as_str() {
        "nearest" if legacy => ResizeMode::Nearest(NearestMode::Floor),
        "nearest" => ResizeMode::Nearest(
            match a.string_or("nearest_mode", "round_prefer_floor").as_str() {
                "round_prefer_floor" => NearestMode::RoundPreferFloor,
                "round_prefer_ceil" => NearestMode::RoundPreferCeil,
                "floor" => NearestMode::Floor,
                "ceil" => NearestMode::Ceil,
                m => return unsupported(format!("nearest_mode {m}")),
            },
        ),
        "linear" | "bilinear" => ResizeMode::Linear,
        "cubic" if !legacy => ResizeMode::Cubic {
            a: a.float_or("cubic_coeff_a", -0.75),
            exclude_outside: a.int_or("exclude_outside", 0) != 0,
        },
        m => return unsupported(format!("mode {m}")),
    })
}

/// The coordinate transformation of attribute `coordinate_transformation_mode`; asymmetric
/// for `legacy` (Upsample, opset < 11).
fn coord_mode(a: &Attrs, legacy: bool) -> NodeResult<CoordMode> {
    if legacy {
        return Ok(CoordMode::Asymmetric);
    }
    Ok(
        match a
            .string_or("coordinate_transformation_mode", "half_pixel")
            .as_str()
        {
            "half_pixel" => CoordMode::HalfPixel,
            "pytorch_half_pixel" => CoordMode::PytorchHalfPixel,
            "align_corners" => CoordMode::AlignCorners,
            "asymmetric" => CoordMode::Asymmetric,
            "tf_half_pixel_for_nn" => CoordMode::TfHalfPixelForNn,
            "half_pixel_symmetric" => CoordMode::HalfPixelSymmetric,
            m => return unsupported(format!("coordinate_transformation_mode {m}")),
        },
    )
}
