//! Compile-time choices for the ops that came with the ONNX importer: which function, which
//! fold, which taps (used by `exec::prepare`).

use heimdall_ir::{BinaryFn, PadMode, ReduceKind, ResizeAttrs, UnaryKind};

use crate::kernels::elementwise::BinaryOp;
use crate::kernels::interp::{self, Tap, Tap4};
use crate::kernels::math::{SliceFn, erf, slice_fn};
use crate::kernels::pad_mode::Fill;
use crate::kernels::reduce_ops::Fold;

/// The function of an element-wise op, applied slice by slice.
pub(crate) fn math_fn(f: UnaryKind) -> Box<SliceFn> {
    match f {
        UnaryKind::Clip { min, max } => slice_fn(move |x| x.max(min).min(max)),
        UnaryKind::LeakyRelu { alpha } => slice_fn(move |x| if x >= 0.0 { x } else { alpha * x }),
        UnaryKind::HardSigmoid { alpha, beta } => {
            slice_fn(move |x| (alpha * x + beta).clamp(0.0, 1.0))
        }
        UnaryKind::Elu { alpha } => {
            slice_fn(move |x| if x >= 0.0 { x } else { alpha * x.exp_m1() })
        }
        UnaryKind::Erf => slice_fn(erf),
        UnaryKind::Sqrt => slice_fn(f32::sqrt),
        UnaryKind::Exp => slice_fn(f32::exp),
        UnaryKind::Log => slice_fn(f32::ln),
        UnaryKind::Abs => slice_fn(f32::abs),
        UnaryKind::Neg => slice_fn(|x: f32| -x),
        UnaryKind::Reciprocal => slice_fn(f32::recip),
        UnaryKind::Floor => slice_fn(f32::floor),
        UnaryKind::Ceil => slice_fn(f32::ceil),
        UnaryKind::Softplus => slice_fn(|x: f32| if x > 20.0 { x } else { x.exp().ln_1p() }),
        UnaryKind::Softsign => slice_fn(|x: f32| x / (1.0 + x.abs())),
        UnaryKind::Identity => slice_fn(|x| x),
        other => unreachable!("{} runs as an activation", other.name()),
    }
}

/// The kernel operation of a binary op.
pub(crate) fn binary_op(f: BinaryFn) -> BinaryOp {
    match f {
        BinaryFn::Add => BinaryOp::Add,
        BinaryFn::Sub => BinaryOp::Sub,
        BinaryFn::Mul => BinaryOp::Mul,
        BinaryFn::Prelu => unreachable!("PRELU has its own kernel"),
        BinaryFn::Div => BinaryOp::Div,
        BinaryFn::Pow => BinaryOp::Pow,
        BinaryFn::Max => BinaryOp::Max,
        BinaryFn::Min => BinaryOp::Min,
        BinaryFn::Less => BinaryOp::Less,
        BinaryFn::Greater => BinaryOp::Greater,
        BinaryFn::Equal => BinaryOp::Equal,
        BinaryFn::LessOrEqual => BinaryOp::LessOrEqual,
        BinaryFn::GreaterOrEqual => BinaryOp::GreaterOrEqual,
    }
}

/// The kernel fold of a reduction.
pub(crate) fn fold(k: ReduceKind) -> Fold {
    match k {
        ReduceKind::Mean => unreachable!("MEAN has its own kernel"),
        ReduceKind::Sum => Fold::Sum,
        ReduceKind::Max => Fold::Max,
        ReduceKind::Min => Fold::Min,
        ReduceKind::Prod => Fold::Prod,
        ReduceKind::SumSquare => Fold::SumSquare,
        ReduceKind::L1 => Fold::L1,
        ReduceKind::L2 => Fold::L2,
        ReduceKind::LogSum => Fold::LogSum,
        ReduceKind::LogSumExp => Fold::LogSumExp,
    }
}

/// The kernel fill of a padding mode.
pub(crate) fn fill(m: PadMode) -> Fill {
    match m {
        PadMode::Constant(v) => Fill::Constant(v),
        PadMode::Reflect => Fill::Reflect,
        PadMode::Edge => Fill::Edge,
    }
}

/// Row and column taps of a resize from `x [1,H,W,C]` to `out [1,OH,OW,C]`.
pub(crate) fn resize_taps(a: &ResizeAttrs, x: &[usize], out: &[usize; 4]) -> (Vec<Tap>, Vec<Tap>) {
    (
        interp::axis_taps(x[1], out[1], a.axis_scale(0, x[1], out[1]), a.coord, a.mode),
        interp::axis_taps(x[2], out[2], a.axis_scale(1, x[2], out[2]), a.coord, a.mode),
    )
}

/// Row and column bicubic taps of a resize from `x [1,H,W,C]` to `out [1,OH,OW,C]`.
pub(crate) fn cubic_taps(a: &ResizeAttrs, x: &[usize], out: &[usize; 4]) -> (Vec<Tap4>, Vec<Tap4>) {
    let (coef, exclude) = match a.mode {
        heimdall_ir::ResizeMode::Cubic { a, exclude_outside } => (a, exclude_outside),
        _ => (-0.75, false),
    };
    (
        interp::cubic_taps(
            x[1],
            out[1],
            a.axis_scale(0, x[1], out[1]),
            a.coord,
            coef,
            exclude,
        ),
        interp::cubic_taps(
            x[2],
            out[2],
            a.axis_scale(1, x[2], out[2]),
            a.coord,
            coef,
            exclude,
        ),
    )
}
