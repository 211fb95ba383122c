//! `shaders/nary.wgsl`: the element-wise functions of one to three operands that the
//! elementwise kernel does not compute (ONNX math, division, power, extrema, comparisons,
//! select), with NumPy broadcasting over H, W and C and the function generated as
//! `combine(a, b, c)`. Shared by the `unary`, `binary` and `select` families.

use heimdall_ir::{BinaryFn, UnaryKind};

use crate::dispatch::{Dispatch, OpContext, Operand, groups_for, u32_of};
use crate::layout::Phwc4;
use crate::params::shader_params;
use crate::precision::Precision;
use crate::wgsl::{BindingDecl, KernelSource};

/// The function a `nary` kernel applies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NaryFn {
    /// `f(a)`.
    Unary(UnaryKind),
    /// `f(a, b)`.
    Binary(BinaryFn),
    /// `a != 0 ? b : c`.
    Select,
}

impl NaryFn {
    /// Number of operands.
    fn arity(&self) -> usize {
        match self {
            NaryFn::Unary(_) => 1,
            NaryFn::Binary(_) => 2,
            NaryFn::Select => 3,
        }
    }

    /// The WGSL expression of the function of `a`, `b`, `c` (vec4s) and the parameters
    /// `params.f0`, `params.f1`.
    fn expression(&self) -> &'static str {
        match self {
            NaryFn::Unary(f) => match f {
                UnaryKind::Clip { .. } => "min(max(a, vec4<f32>(params.f0)), vec4<f32>(params.f1))",
                UnaryKind::LeakyRelu { .. } => "select(params.f0 * a, a, a >= vec4<f32>(0.0))",
                UnaryKind::HardSigmoid { .. } => {
                    "clamp(params.f0 * a + params.f1, vec4<f32>(0.0), vec4<f32>(1.0))"
                }
                UnaryKind::Elu { .. } => {
                    "select(params.f0 * (exp(a) - 1.0), a, a >= vec4<f32>(0.0))"
                }
                UnaryKind::Erf => "erf4(a)",
                UnaryKind::Gelu => "0.5 * a * (1.0 + erf4(a * 0.70710678118654752))",
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
                UnaryKind::Relu => "max(a, vec4<f32>(0.0))",
                UnaryKind::Relu6 => "clamp(a, vec4<f32>(0.0), vec4<f32>(6.0))",
                UnaryKind::ReluN1To1 => "clamp(a, vec4<f32>(-1.0), vec4<f32>(1.0))",
                UnaryKind::Logistic => "1.0 / (1.0 + exp(-a))",
                UnaryKind::HardSwish => "a * clamp(a + 3.0, vec4<f32>(0.0), vec4<f32>(6.0)) / 6.0",
                UnaryKind::Tanh => "tanh(clamp(a, vec4<f32>(-20.0), vec4<f32>(20.0)))",
            },
            NaryFn::Binary(f) => match f {
                BinaryFn::Add => "a + b",
                BinaryFn::Sub => "a - b",
                BinaryFn::Mul => "a * b",
                BinaryFn::Prelu => "select(a * b, a, a >= vec4<f32>(0.0))",
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
            NaryFn::Select => "select(c, b, a != vec4<f32>(0.0))",
        }
    }

    /// The float parameters `(f0, f1)`.
    fn params(&self) -> (f32, f32) {
        match *self {
            NaryFn::Unary(UnaryKind::Clip { min, max }) => (min, max),
            NaryFn::Unary(UnaryKind::LeakyRelu { alpha })
            | NaryFn::Unary(UnaryKind::Elu { alpha }) => (alpha, 0.0),
            NaryFn::Unary(UnaryKind::HardSigmoid { alpha, beta }) => (alpha, beta),
            _ => (0.0, 0.0),
        }
    }
}

shader_params! {
    /// Uniform parameters of `shaders/nary.wgsl`.
    struct GpuNaryParams {
        out_h: u32,
        out_w: u32,
        out_c: u32,
        total: u32,
        /// `(h, w, c, unused)` of each operand.
        a_dims: [u32; 4],
        b_dims: [u32; 4],
        c_dims: [u32; 4],
        /// The function's parameters.
        f0: f32,
        f1: f32,
        /// +infinity and a quiet NaN, set by the host (WGSL has no literals for them).
        inf: f32,
        nan: f32,
    }
}

/// Source of the `nary` kernel for `f` with operand precisions `inputs` (those beyond the
/// function's arity are stubs) writing `y`.
pub fn source(f: NaryFn, inputs: [Precision; 3], y: Precision) -> KernelSource {
    let names = ["a", "b", "c"];
    let mut bindings: Vec<BindingDecl> = (0..3)
        .map(|i| {
            if i < f.arity() {
                BindingDecl::read(names[i], inputs[i])
            } else {
                BindingDecl::stub(names[i], inputs[i])
            }
        })
        .collect();
    bindings.push(BindingDecl::write("y", y));
    KernelSource {
        extra: format!(
            "fn combine(a: vec4<f32>, b: vec4<f32>, c: vec4<f32>) -> vec4<f32> {{ return {}; }}\n",
            f.expression()
        ),
        ..KernelSource::new("nary", bindings)
    }
    .with_params::<GpuNaryParams>()
}

/// Every function in precision `p`, for the catalogue.
pub fn catalogue(p: Precision) -> Vec<KernelSource> {
    let unary = [
        UnaryKind::Relu,
        UnaryKind::Relu6,
        UnaryKind::ReluN1To1,
        UnaryKind::Logistic,
        UnaryKind::HardSwish,
        UnaryKind::Tanh,
        UnaryKind::Clip { min: 0.0, max: 6.0 },
        UnaryKind::LeakyRelu { alpha: 0.1 },
        UnaryKind::HardSigmoid {
            alpha: 0.2,
            beta: 0.5,
        },
        UnaryKind::Elu { alpha: 1.0 },
        UnaryKind::Erf,
        UnaryKind::Gelu,
        UnaryKind::Sqrt,
        UnaryKind::Exp,
        UnaryKind::Log,
        UnaryKind::Abs,
        UnaryKind::Neg,
        UnaryKind::Reciprocal,
        UnaryKind::Floor,
        UnaryKind::Ceil,
        UnaryKind::Softplus,
        UnaryKind::Softsign,
        UnaryKind::Identity,
    ];
    let binary = [
        BinaryFn::Add,
        BinaryFn::Sub,
        BinaryFn::Mul,
        BinaryFn::Prelu,
        BinaryFn::Div,
        BinaryFn::Pow,
        BinaryFn::Max,
        BinaryFn::Min,
        BinaryFn::Less,
        BinaryFn::Greater,
        BinaryFn::Equal,
        BinaryFn::LessOrEqual,
        BinaryFn::GreaterOrEqual,
    ];
    let functions = unary
        .map(NaryFn::Unary)
        .into_iter()
        .chain(binary.map(NaryFn::Binary))
        .chain([NaryFn::Select]);
    functions.map(|f| source(f, [p; 3], p)).collect()
}

/// Builds the kernel applying `f` to `ctx`'s op's inputs.
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
    Ok(vec![
        Dispatch::new(source(f, precisions, yp), &p, operands, groups_for(total))
            .with_vec4_rows(total, y.w),
    ])
}

fn geom(g: &Phwc4) -> Result<[u32; 4], String> {
    Ok([u32_of(g.h)?, u32_of(g.w)?, u32_of(g.c)?, 0])
}
