//! RESIZE on the GPU: TFLite's RESIZE_BILINEAR (the scale taken from the sizes) is
//! `shaders/resize_bilinear.wgsl`, with the coordinates and weights of TFLite's reference
//! kernel; every other resize (ONNX `Resize`/`Upsample`: nearest, linear, cubic, every
//! coordinate mode) is `shaders/resize_taps.wgsl` with per-axis taps computed on the host by the
//! IR's coordinate arithmetic ([`heimdall_ir::ops::resize`]), shared with the CPU backend.

use heimdall_ir::ops::resize::{axis_taps, cubic_taps, size_ratio};
use heimdall_ir::{ResizeAttrs, ResizeMode};

use crate::dispatch::{Dispatch, OpContext, Operand, groups_for, u32_of};
use crate::params::shader_params;
use crate::precision::Precision;
use crate::wgsl::{BindingDecl, KernelSource};

shader_params! {
    /// Uniform parameters of `shaders/resize_bilinear.wgsl`.
    struct GpuResizeParams {
        in_h: u32,
        in_w: u32,
        out_h: u32,
        out_w: u32,
        channels: u32,
        scale_h: u32,
        scale_w: u32,
        half_pixel: u32,
        total: u32,
    }
}

/// Source of TFLite's bilinear kernel.
pub fn source(x: Precision, y: Precision) -> KernelSource {
    KernelSource::new(
        "resize_bilinear",
        vec![BindingDecl::read("x", x), BindingDecl::write("y", y)],
    )
    .with_params::<GpuResizeParams>()
}

/// Builds TFLite's RESIZE_BILINEAR.
fn build_bilinear(
    ctx: &mut OpContext,
    align_corners: bool,
    half_pixel: bool,
) -> Result<Vec<Dispatch>, String> {
    let x = ctx.in_geom(0)?;
    let y = ctx.out_geom()?;
    if x.c != y.c || x.h == 0 || x.w == 0 {
        return Err(format!("resize of {x:?} to {y:?}"));
    }
    let total = y.vec4s();
    let p = GpuResizeParams {
        in_h: u32_of(x.h)?,
        in_w: u32_of(x.w)?,
        out_h: u32_of(y.h)?,
        out_w: u32_of(y.w)?,
        channels: u32_of(y.c)?,
        scale_h: size_ratio(x.h, y.h, align_corners).to_bits(),
        scale_w: size_ratio(x.w, y.w, align_corners).to_bits(),
        half_pixel: half_pixel as u32,
        total: u32_of(total)?,
    };
    let xp = ctx.precisions[ctx.op.inputs[0].index()];
    Ok(vec![
        Dispatch::new(
            source(xp, ctx.out_precision()?),
            &p,
            vec![
                Operand::Tensor(ctx.op.inputs[0]),
                Operand::Tensor(ctx.output()?),
            ],
            groups_for(total),
        )
        .with_vec4_rows(total, y.w),
    ])
}

shader_params! {
    /// Uniform parameters of `shaders/resize_taps.wgsl`.
    struct GpuResizeTapsParams {
        in_h: u32,
        in_w: u32,
        out_h: u32,
        out_w: u32,
        channels: u32,
        total: u32,
    }
}

/// Source of the tap-based resize kernel (`cubic`: four taps per axis, else two); the taps are
/// always f32.
pub fn taps_source(x: Precision, y: Precision, cubic: bool) -> KernelSource {
    KernelSource {
        consts: vec![("CUBIC", cubic as u32)],
        ..KernelSource::new(
            "resize_taps",
            vec![
                BindingDecl::read("x", x),
                BindingDecl::read("taps", Precision::F32),
                BindingDecl::write("y", y),
            ],
        )
    }
    .with_params::<GpuResizeTapsParams>()
}

/// Two vec4 (indices, weights) per output position of one axis.
fn tap_values(input: usize, output: usize, scale: f32, a: &ResizeAttrs) -> Vec<f32> {
    let mut v = Vec::with_capacity(8 * output);
    match a.mode {
        ResizeMode::Cubic {
            a: coef,
            exclude_outside,
        } => {
            for t in cubic_taps(input, output, scale, a.coord, coef, exclude_outside) {
                v.extend(t.idx.map(|i| i as f32));
                v.extend(t.w);
            }
        }
        mode => {
            for t in axis_taps(input, output, scale, a.coord, mode) {
                v.extend([t.i0 as f32, t.i1 as f32, 0.0, 0.0, t.w, 0.0, 0.0, 0.0]);
            }
        }
    }
    v
}

/// Builds a RESIZE of `x [1,H,W,C]` to the output's H and W: TFLite's bilinear kernel when
/// the scale comes from the sizes, else the tap kernel.
pub fn build(ctx: &mut OpContext, a: &ResizeAttrs) -> Result<Vec<Dispatch>, String> {
    if let Some((align_corners, half_pixel_centers)) = a.tflite_flags() {
        return build_bilinear(ctx, align_corners, half_pixel_centers);
    }
    let x = ctx.in_geom(0)?;
    let y = ctx.out_geom()?;
    if x.c != y.c || x.h == 0 || x.w == 0 {
        return Err(format!("resize of {x:?} to {y:?}"));
    }
    if x.h.max(x.w) >= 1 << 24 {
        return Err(format!(
            "resize of {x:?}: input too large for f32 tap indices"
        ));
    }
    let mut taps = tap_values(x.h, y.h, a.axis_scale(0, x.h, y.h), a);
    taps.extend(tap_values(x.w, y.w, a.axis_scale(1, x.w, y.w), a));
    let (x_op, xp, _) = ctx.input_operand(0)?;
    let taps_op = ctx.add_const("resize taps".into(), Precision::F32.encode(&taps));
    let total = y.vec4s();
    let p = GpuResizeTapsParams {
        in_h: u32_of(x.h)?,
        in_w: u32_of(x.w)?,
        out_h: u32_of(y.h)?,
        out_w: u32_of(y.w)?,
        channels: u32_of(y.c)?,
        total: u32_of(total)?,
    };
    let cubic = matches!(a.mode, ResizeMode::Cubic { .. });
    Ok(vec![
        Dispatch::new(
            taps_source(xp, ctx.out_precision()?, cubic),
            &p,
            vec![x_op, taps_op, Operand::Tensor(ctx.output()?)],
            groups_for(total),
        )
        .with_vec4_rows(total, y.w),
    ])
}

/// Every variant in precision `p`, for the catalogue.
pub fn catalogue(p: Precision) -> Vec<KernelSource> {
    vec![
        source(p, p),
        taps_source(p, p, false),
        taps_source(p, p, true),
    ]
}
