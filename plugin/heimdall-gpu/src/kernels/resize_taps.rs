//! RESIZE (ONNX `Resize`/`Upsample`: nearest, linear, cubic, every coordinate mode):
//! `shaders/resize_taps.wgsl` with per-axis taps computed on the host by the IR's coordinate
//! arithmetic (`heimdall_ir::ops::resize`), shared with the CPU backend.

use bytemuck::{Pod, Zeroable};
use heimdall_ir::ops::resize as interp;
use heimdall_ir::{ResizeAttrs, ResizeMode};

use super::{Dispatch, OpContext, Operand, groups_for, u32_of};
use crate::precision::Precision;
use crate::shaders::{read, write};
use crate::wgsl::KernelSource;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct GpuResizeTapsParams {
    in_h: u32,
    in_w: u32,
    out_h: u32,
    out_w: u32,
    channels: u32,
    total: u32,
    _pad: [u32; 2],
}

/// Source of the tap-based resize kernel (`cubic`: four taps per axis, else two); the taps are
/// always f32.
pub fn source(x: Precision, y: Precision, cubic: bool) -> KernelSource {
    KernelSource {
        consts: vec![("CUBIC", cubic as u32)],
        ..KernelSource::new(
            "resize_taps",
            vec![read("x", x), read("taps", Precision::F32), write("y", y)],
        )
    }
}

/// Two vec4 (indices, weights) per output position of one axis.
fn axis_taps(input: usize, output: usize, scale: f32, a: &ResizeAttrs) -> Vec<f32> {
    let mut v = Vec::with_capacity(8 * output);
    match a.mode {
        ResizeMode::Cubic {
            a: coef,
            exclude_outside,
        } => {
            for t in interp::cubic_taps(input, output, scale, a.coord, coef, exclude_outside) {
                v.extend(t.idx.map(|i| i as f32));
                v.extend(t.w);
            }
        }
        mode => {
            for t in interp::axis_taps(input, output, scale, a.coord, mode) {
                v.extend([t.i0 as f32, t.i1 as f32, 0.0, 0.0, t.w, 0.0, 0.0, 0.0]);
            }
        }
    }
    v
}

/// Builds a RESIZE of `x [1,H,W,C]` to the output's H and W.
pub fn build(ctx: &mut OpContext, a: &ResizeAttrs) -> Result<Vec<Dispatch>, String> {
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
    let mut taps = axis_taps(x.h, y.h, a.axis_scale(0, x.h, y.h), a);
    taps.extend(axis_taps(x.w, y.w, a.axis_scale(1, x.w, y.w), a));
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
        _pad: [0; 2],
    };
    let cubic = matches!(a.mode, ResizeMode::Cubic { .. });
    Ok(vec![Dispatch {
        source: source(xp, ctx.out_precision()?, cubic),
        params: bytemuck::bytes_of(&p).to_vec(),
        operands: vec![x_op, taps_op, Operand::Tensor(ctx.output()?)],
        workgroups: groups_for(total),
    }])
}
