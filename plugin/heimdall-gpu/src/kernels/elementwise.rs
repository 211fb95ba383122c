//! `shaders/elementwise.wgsl`: ADD, SUB, MUL and PRELU with broadcasting over H, W and C and the
//! fused epilogue, and the TFLite activations (the kernel with no second operand and the
//! activation in the epilogue). Shared by the `binary` and `unary` families.

use heimdall_ir::UnaryKind;

use crate::dispatch::{Dispatch, OpContext, Operand, groups_for, u32_of};
use crate::layout::Phwc4;
use crate::params::shader_params;
use crate::precision::Precision;
use crate::wgsl::{BindingDecl, EpilogueAct, EpilogueDecl, KernelSource};

shader_params! {
    /// Uniform parameters of `shaders/elementwise.wgsl`.
    struct GpuElementwiseParams {
        out_h: u32,
        out_w: u32,
        out_c: u32,
        total: u32,
        a_h: u32,
        a_w: u32,
        a_c: u32,
        b_h: u32,
        b_w: u32,
        b_c: u32,
    }
}

/// What the elementwise kernel computes before its epilogue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ElementwiseOp {
    /// `a` alone (no second operand), the activation applied by the epilogue: TFLite's
    /// RELU, RELU6, RELU_N1_TO_1, LOGISTIC, HARD_SWISH and TANH ops.
    Activation(UnaryKind),
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// PReLU: `a` where `a >= 0`, else `b * a`.
    Prelu,
}

impl ElementwiseOp {
    /// The kernel's `OP` constant (0: `a` alone).
    fn code(&self) -> u32 {
        match self {
            ElementwiseOp::Activation(_) => 0,
            ElementwiseOp::Add => 1,
            ElementwiseOp::Sub => 2,
            ElementwiseOp::Mul => 3,
            ElementwiseOp::Prelu => 4,
        }
    }

    /// The WGSL expression of `combine(a, b)`.
    fn combine(&self) -> &'static str {
        match self {
            ElementwiseOp::Activation(_) => "a",
            ElementwiseOp::Add => "a + b",
            ElementwiseOp::Sub => "a - b",
            ElementwiseOp::Mul => "a * b",
            ElementwiseOp::Prelu => "select(a * b, a, a >= vec4<f32>(0.0))",
        }
    }
}

/// Source of the elementwise kernel computing `op` (an activation's function is in
/// `epilogue`).
pub fn source(
    op: ElementwiseOp,
    a: Precision,
    b: Precision,
    y: Precision,
    epilogue: EpilogueDecl,
) -> KernelSource {
    let b = match op {
        ElementwiseOp::Activation(_) => BindingDecl::stub("b", b),
        _ => BindingDecl::read("b", b),
    };
    KernelSource {
        consts: vec![("OP", op.code())],
        epilogue,
        extra: format!(
            "fn combine(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {{ return {}; }}\n",
            op.combine()
        ),
        ..KernelSource::new(
            "elementwise",
            vec![BindingDecl::read("a", a), b, BindingDecl::write("y", y)],
        )
    }
    .with_params::<GpuElementwiseParams>()
}

/// Every variant in precision `p` with representative epilogues, for the catalogue.
pub fn catalogue(p: Precision) -> Vec<KernelSource> {
    let ops = [
        ElementwiseOp::Activation(UnaryKind::Relu),
        ElementwiseOp::Add,
        ElementwiseOp::Sub,
        ElementwiseOp::Mul,
        ElementwiseOp::Prelu,
    ];
    let mut out = Vec::new();
    for ep in EpilogueDecl::representative(p) {
        for op in ops {
            out.push(source(op, p, p, p, ep));
        }
    }
    out
}

fn broadcast_ok(x: &Phwc4, y: &Phwc4) -> bool {
    (x.h == y.h || x.h == 1) && (x.w == y.w || x.w == 1) && (x.c == y.c || x.c == 1)
}

/// Builds the elementwise kernel computing `op` for `ctx`'s op.
pub fn build(ctx: &mut OpContext, op: ElementwiseOp) -> Result<Vec<Dispatch>, String> {
    let y = ctx.out_geom()?;
    let yp = ctx.out_precision()?;
    let (a_op, ap, ag) = ctx.input_operand(0)?;
    let (b_op, bp, bg) = if let ElementwiseOp::Activation(_) = op {
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
    if let ElementwiseOp::Activation(u) = op {
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
        b_h: u32_of(bg.h)?,
        b_w: u32_of(bg.w)?,
        b_c: u32_of(bg.c)?,
    };
    Ok(vec![
        Dispatch::new(source(op, ap, bp, yp, ep), &p, operands, groups_for(total))
            .with_vec4_rows(total, y.w),
    ])
}
