//! The ONNX element-wise ops (`Math`, `Binary`, `Where`): `shaders/nary.wgsl` with NumPy
//! broadcasting of up to three operands over H, W and C and the op's function generated as
//! `combine(a, b, c)`.

use bytemuck::{Pod, Zeroable};
use heimdall_ir::{BinaryFn, UnaryKind};

use super::{Dispatch, OpContext, Operand, groups_for, u32_of};
use crate::layout::Phwc4;
use crate::precision::Precision;
use crate::shaders::{read, write};
use crate::wgsl::{Access, BindingDecl, KernelSource};

/// The function a `nary` kernel applies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NaryFn {
    /// `f(a)`.
    Math(UnaryKind),
    /// `f(a, b)`.
    Binary(BinaryFn),
    /// `a != 0 ? b : c`.
    Where,
}

impl NaryFn {
    /// Number of operands.
    fn arity(&self) -> usize {
        match self {
            NaryFn::Math(_) => 1,
            NaryFn::Binary(_) => 2,
            NaryFn::Where => 3,
        }
    }

    /// The WGSL expression of the function of `a`, `b`, `c` (vec4s) and the parameters
    /// `params.f0`, `params.f1`.
    fn expression(&self) -> &'static str {
        match self {
            NaryFn::Math(f) => match f {
                UnaryKind::Clip { .. } => "min(max(a, vec4<f32>(params.f0)), vec4<f32>(params.f1))",
                UnaryKind::LeakyRelu { .. } => "select(params.f0 * a, a, a >= vec4<f32>(0.0))",
                UnaryKind::HardSigmoid { .. } => {
                    "clamp(params.f0 * a + params.f1, vec4<f32>(0.0), vec4<f32>(1.0))"
                }
                UnaryKind::Elu { .. } => {
                    "select(params.f0 * (exp(a) - 1.0), a, a >= vec4<f32>(0.0))"
                }
                UnaryKind::Erf => "erf4(a)",
                UnaryKind::Sqrt => "sqrt(a)",
                UnaryKind::Exp => "exp(a)",
                UnaryKind::Log => "log(a)",
                UnaryKind::Abs => "abs(a)",
                UnaryKind::Neg => "-a",
                UnaryKind::Reciprocal => "1.0 / a",
                UnaryKind::Floor => "floor(a)",
                UnaryKind::Ceil => "ceil(a)",
                UnaryKind::Softplus => "select(log(1.0 + exp(a)), a, a > vec4<f32>(20.0))",
                UnaryKind::Softsign => "a / (1.0 + abs(a))",
                UnaryKind::Identity => "a",
                other => unreachable!("{} runs in the elementwise kernel", other.name()),
            },
            NaryFn::Binary(f) => match f {
                BinaryFn::Add | BinaryFn::Sub | BinaryFn::Mul | BinaryFn::Prelu => {
                    unreachable!("{} runs in the elementwise kernel", f.name())
                }
                BinaryFn::Div => "a / b",
                BinaryFn::Pow => "pow4(a, b)",
                BinaryFn::Max => "max(a, b)",
                BinaryFn::Min => "min(a, b)",
                BinaryFn::Less => "flag(a < b)",
                BinaryFn::Greater => "flag(a > b)",
                BinaryFn::Equal => "flag(a == b)",
                BinaryFn::LessOrEqual => "flag(a <= b)",
                BinaryFn::GreaterOrEqual => "flag(a >= b)",
            },
            NaryFn::Where => "select(c, b, a != vec4<f32>(0.0))",
        }
    }

    /// The float parameters `(f0, f1)`.
    fn params(&self) -> (f32, f32) {
        match *self {
            NaryFn::Math(UnaryKind::Clip { min, max }) => (min, max),
            NaryFn::Math(UnaryKind::LeakyRelu { alpha })
            | NaryFn::Math(UnaryKind::Elu { alpha }) => (alpha, 0.0),
            NaryFn::Math(UnaryKind::HardSigmoid { alpha, beta }) => (alpha, beta),
            _ => (0.0, 0.0),
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct GpuNaryParams {
    out_h: u32,
    out_w: u32,
    out_c: u32,
    total: u32,
    a_dims: [u32; 4],
    b_dims: [u32; 4],
    c_dims: [u32; 4],
    f0: f32,
    f1: f32,
    inf: f32,
    nan: f32,
}

/// Source of the `nary` kernel for `f` with operand precisions `inputs` (those beyond the
/// function's arity are stubs) writing `y`.
pub fn source(f: NaryFn, inputs: [Precision; 3], y: Precision) -> KernelSource {
    let names = ["a", "b", "c"];
    let mut bindings: Vec<BindingDecl> = (0..3)
        .map(|i| {
            if i < f.arity() {
                read(names[i], inputs[i])
            } else {
                BindingDecl {
                    name: names[i],
                    access: Access::Stub,
                    precision: inputs[i],
                }
            }
        })
        .collect();
    bindings.push(write("y", y));
    KernelSource {
        extra: format!(
            "fn combine(a: vec4<f32>, b: vec4<f32>, c: vec4<f32>) -> vec4<f32> {{ return {}; }}\n",
            f.expression()
        ),
        ..KernelSource::new("nary", bindings)
    }
}

/// Builds a `Math`, `Binary` or `Where` op.
pub fn build(ctx: &mut OpContext, f: NaryFn) -> Result<Vec<Dispatch>, String> {
    let y = ctx.out_geom()?;
    let yp = ctx.out_precision()?;
    if ctx.op.inputs.len() != f.arity() {
        return Err(format!(
            "{} inputs, expected {}",
            ctx.op.inputs.len(),
            f.arity()
        ));
    }
    let mut operands = Vec::new();
    let mut precisions = [Precision::F32; 3];
    let mut dims = [[1u32; 4]; 3];
    for i in 0..f.arity() {
        let (o, p, g) = ctx.input_operand(i)?;
        let ok = |a: usize, b: usize| a == b || a == 1;
        if !(ok(g.h, y.h) && ok(g.w, y.w) && ok(g.c, y.c)) {
            return Err(format!("broadcast of input {i} {g:?} to {y:?}"));
        }
        operands.push(o);
        precisions[i] = p;
        dims[i] = geom(&g)?;
    }
    operands.push(Operand::Tensor(ctx.output()?));
    let total = y.vec4s();
    let (f0, f1) = f.params();
    let p = GpuNaryParams {
        out_h: u32_of(y.h)?,
        out_w: u32_of(y.w)?,
        out_c: u32_of(y.c)?,
        total: u32_of(total)?,
        a_dims: dims[0],
        b_dims: dims[1],
        c_dims: dims[2],
        f0,
        f1,
        inf: f32::INFINITY,
        nan: f32::NAN,
    };
    Ok(vec![Dispatch {
        source: source(f, precisions, yp),
        params: bytemuck::bytes_of(&p).to_vec(),
        operands,
        workgroups: groups_for(total),
    }])
}

fn geom(g: &Phwc4) -> Result<[u32; 4], String> {
    Ok([u32_of(g.h)?, u32_of(g.w)?, u32_of(g.c)?, 0])
}
