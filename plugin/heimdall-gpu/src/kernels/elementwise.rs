//! ADD, SUB, MUL, PRELU and unary activations: `shaders/elementwise.wgsl` with broadcasting
//! and the fused epilogue; unary ops are the kernel with no second input and the activation in
//! the epilogue.

use bytemuck::{Pod, Zeroable};
use heimdall_ir::OpKind;

use super::{Dispatch, OpContext, Operand, groups_for, u32_of};
use crate::layout::Phwc4;
use crate::precision::Precision;
use crate::shaders::{read, write};
use crate::wgsl::{Access, BindingDecl, EpilogueAct, EpilogueDecl, KernelSource};

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct GpuElementwiseParams {
    out_h: u32,
    out_w: u32,
    out_c: u32,
    total: u32,
    a_h: u32,
    a_w: u32,
    a_c: u32,
    _pad0: u32,
    b_h: u32,
    b_w: u32,
    b_c: u32,
    _pad1: u32,
}

/// Source of the elementwise kernel; `op`: 0 = a only, 1 = add, 2 = sub, 3 = mul, 4 = PReLU.
pub fn source(
    op: u32,
    a: Precision,
    b: Precision,
    y: Precision,
    epilogue: EpilogueDecl,
) -> KernelSource {
    let b = if op == 0 {
        BindingDecl {
            name: "b",
            access: Access::Stub,
            precision: b,
        }
    } else {
        read("b", b)
    };
    let combine = match op {
        1 => "a + b",
        2 => "a - b",
        3 => "a * b",
        4 => "select(a * b, a, a >= vec4<f32>(0.0))",
        _ => "a",
    };
    KernelSource {
        consts: vec![("OP", op)],
        epilogue,
        extra: format!(
            "fn combine(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {{ return {combine}; }}\n"
        ),
        ..KernelSource::new("elementwise", vec![read("a", a), b, write("y", y)])
    }
}

fn broadcast_ok(x: &Phwc4, y: &Phwc4) -> bool {
    (x.h == y.h || x.h == 1) && (x.w == y.w || x.w == 1) && (x.c == y.c || x.c == 1)
}

/// Builds an elementwise op; `code` as in [`source`].
pub fn build(ctx: &mut OpContext, code: u32) -> Result<Vec<Dispatch>, String> {
    let y = ctx.out_geom()?;
    let yp = ctx.out_precision()?;
    let (a_op, ap, ag) = ctx.input_operand(0)?;
    let (b_op, bp, bg) = if code == 0 {
        (None, Precision::F32, Phwc4 { h: 1, w: 1, c: 1 })
    } else {
        let (o, p, g) = ctx.input_operand(1)?;
        (Some(o), p, g)
    };
    if !broadcast_ok(&ag, &y) || !broadcast_ok(&bg, &y) {
        return Err(format!(
            "broadcast of {ag:?} and {bg:?} to {y:?} is not supported"
        ));
    }
    let (mut ep, ep_ops) = ctx.epilogue()?;
    if let OpKind::Unary(u) = ctx.op.kind {
        if ep.act != EpilogueAct::None {
            return Err("a unary op with a fused activation".into());
        }
        ep.act = EpilogueAct::Unary(u);
    }
    let mut operands = vec![a_op];
    operands.extend(b_op);
    operands.push(Operand::Tensor(ctx.output()?));
    operands.extend(ep_ops);
    let total = y.vec4s();
    let p = GpuElementwiseParams {
        out_h: u32_of(y.h)?,
        out_w: u32_of(y.w)?,
        out_c: u32_of(y.c)?,
        total: u32_of(total)?,
        a_h: u32_of(ag.h)?,
        a_w: u32_of(ag.w)?,
        a_c: u32_of(ag.c)?,
        _pad0: 0,
        b_h: u32_of(bg.h)?,
        b_w: u32_of(bg.w)?,
        b_c: u32_of(bg.c)?,
        _pad1: 0,
    };
    Ok(vec![Dispatch {
        source: source(code, ap, bp, yp, ep),
        params: bytemuck::bytes_of(&p).to_vec(),
        operands,
        workgroups: groups_for(total),
    }])
}
