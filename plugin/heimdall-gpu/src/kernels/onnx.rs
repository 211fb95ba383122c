//! Shared pieces of the kernels of the ONNX-only op kinds (element-wise math, binary and select,
//! instance norm, general resize, padding modes, softmax, matrix product, reductions, transpose,
//! space/depth): 4-D shape helpers and the catalogue of their composed variants for the naga
//! validation test.

use heimdall_ir::{BinaryFn, ReduceKind, UnaryKind};

use super::u32_of;
use crate::precision::Precision;
use crate::wgsl::KernelSource;

/// A shape of rank ≤ 4 right-aligned into 4 axes (leading axes of size 1), as `u32`.
pub fn dims4(shape: &[usize]) -> Result<[u32; 4], String> {
    let d = super::align4(shape, 1)?;
    Ok([u32_of(d[0])?, u32_of(d[1])?, u32_of(d[2])?, u32_of(d[3])?])
}

/// Fails unless the leading (batch) axis of a right-aligned shape is 1.
pub fn batch_one(shape: &[usize]) -> Result<(), String> {
    let d = super::align4(shape, 1)?;
    if d[0] != 1 {
        return Err(format!(
            "shape {shape:?}: the GPU backend needs batch 1 and rank ≤ 4"
        ));
    }
    Ok(())
}

/// Every ONNX kernel in precision `p` with representative constants: what the backend can
/// compose (validated by naga in `shaders::tests`).
pub fn catalogue(p: Precision) -> Vec<KernelSource> {
    let mut out = Vec::new();
    let maths = [
        UnaryKind::Clip { min: 0.0, max: 6.0 },
        UnaryKind::LeakyRelu { alpha: 0.1 },
        UnaryKind::HardSigmoid {
            alpha: 0.2,
            beta: 0.5,
        },
        UnaryKind::Elu { alpha: 1.0 },
        UnaryKind::Erf,
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
    for f in maths {
        out.push(super::nary::source(super::nary::NaryFn::Math(f), [p; 3], p));
    }
    let binaries = [
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
    for f in binaries {
        out.push(super::nary::source(
            super::nary::NaryFn::Binary(f),
            [p; 3],
            p,
        ));
    }
    out.push(super::nary::source(super::nary::NaryFn::Where, [p; 3], p));
    for phase in 0..3 {
        for side in [None, Some(p), Some(Precision::F32)] {
            out.push(super::instance_norm::source(phase, p, side, side, p));
        }
    }
    for cubic in [false, true] {
        out.push(super::resize_taps::source(p, p, cubic));
    }
    out.push(super::pad_with::source(p, p));
    for log in [false, true] {
        out.push(super::softmax::source(p, p, log));
    }
    out.push(super::matmul::source(p, p, p));
    for k in [
        ReduceKind::Sum,
        ReduceKind::Max,
        ReduceKind::Min,
        ReduceKind::Prod,
        ReduceKind::SumSquare,
        ReduceKind::L1,
        ReduceKind::L2,
        ReduceKind::LogSum,
        ReduceKind::LogSumExp,
    ] {
        out.push(super::reduce::source(p, p, k));
    }
    out.push(super::transpose::source(p, p));
    for crd in [false, true] {
        out.push(super::space_depth::source(p, p, crd));
    }
    out
}
