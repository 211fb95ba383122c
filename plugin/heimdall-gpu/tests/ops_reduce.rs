//! Reductions against the CPU backend (the reference), on random shapes: the TFLite mean over
//! spatial axes (errors relative to the computation's scale, inputs shifted by 2 so that the
//! means are away from zero) and every ONNX reduction kind (`REDUCE`) over any set of axes of
//! ranks 1 to 4, with and without kept dims (`Measure::Strict`; the sum measured against the
//! computation on absolute values, the f16 runs against the reference on the inputs as f16
//! stores them). Kernel: `src/ops/reduce.rs`; the split reduction (few outputs of long
//! reductions) has its own file, `reduce_split.rs`. Each case is a `common::Case` (the one
//! harness): f32 ≤ 1e-5, f16 and packed f16 ≤ 3e-3, no wgpu error. Needs a GPU adapter
//! (lavapipe in CI); `HEIMDALL_SKIP_GPU=1` skips.

mod common;

use common::{Case, Domain, GraphBuilder, kernel_cases, shape_of};
use heimdall_ir::{Epilogue, OpKind, ReduceKind};
use proptest::prelude::*;

/// The ONNX reductions and the domain each is tested on (products of values near 1, exact in
/// f16; logs of positive sums).
const REDUCE: [(ReduceKind, Domain); 9] = [
    (ReduceKind::Sum, Domain::Signed),
    (ReduceKind::Max, Domain::Signed),
    (ReduceKind::Min, Domain::Signed),
    (ReduceKind::Prod, Domain::NearOne),
    (ReduceKind::SumSquare, Domain::Signed),
    (ReduceKind::L1, Domain::Signed),
    (ReduceKind::L2, Domain::Signed),
    (ReduceKind::LogSum, Domain::Positive),
    (ReduceKind::LogSumExp, Domain::Signed),
];

/// `kind` over `axes` of `shape` on inputs of `domain`, measured as the ONNX reductions are.
fn reduce_case(
    shape: &[usize],
    axes: Vec<usize>,
    keep_dims: bool,
    (kind, domain): (ReduceKind, Domain),
    seed: u64,
) -> Case {
    let out = heimdall_ir::ops::reduce::shape(shape, &axes, keep_dims).unwrap();
    let mut b = GraphBuilder::default();
    let x = b.input(shape);
    let op = OpKind::Reduce {
        kind,
        axes,
        keep_dims,
    };
    let y = b.op(op, vec![x], &out, Epilogue::default());
    Case::new(format!("Reduce {kind:?}"), b.finish(vec![y]), seed)
        .domains(&[domain])
        .strict(kind == ReduceKind::Sum)
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(kernel_cases(10)) })]

    #[test]
    fn mean(h in 1..20usize, w in 1..20usize, c in 1..10usize, axes in 0..3u8, keep: bool, seed in 0..1000u64) {
        let axes = match axes { 0 => vec![1, 2], 1 => vec![1], _ => vec![2] };
        let mut out = vec![1, h, w, c];
        for &a in &axes { out[a] = 1; }
        if !keep {
            out = out.iter().enumerate().filter(|(d, _)| !axes.contains(d)).map(|(_, &n)| n).collect();
        }
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, h, w, c]);
        let y = b.op(OpKind::Reduce { kind: ReduceKind::Mean, axes, keep_dims: keep }, vec![x], &out, Epilogue::default());
        Case::new("Reduce Mean", b.finish(vec![y]), seed).domains(&[Domain::Shifted(2.0)]).prop()?;
    }

    #[test]
    fn reduce(rank in 1..5usize, dims in prop::array::uniform4(1..9usize), axes_mask in 1..16u8, keep_dims: bool, code in 0..REDUCE.len(), seed in 0..1000u64) {
        let shape = shape_of(rank, dims);
        let axes: Vec<usize> = (0..rank).filter(|a| axes_mask >> a & 1 == 1).collect();
        if axes.is_empty() {
            return Ok(());
        }
        reduce_case(&shape, axes, keep_dims, REDUCE[code], seed).prop()?;
    }
}

/// The table on one odd shape: every ONNX reduction kind over the spatial axes, the channels
/// and every axis, with kept dims and without.
#[test]
fn every_reduce_kind_on_one_shape() {
    let shape = [1, 5, 7, 6];
    for entry in REDUCE {
        for axes in [vec![1, 2], vec![3], vec![0, 1, 2, 3]] {
            for keep_dims in [false, true] {
                reduce_case(&shape, axes.clone(), keep_dims, entry, 17)
                    .check()
                    .unwrap_or_else(|e| panic!("over {axes:?} (keep {keep_dims}): {e}"));
            }
        }
    }
}

/// The case CI drew once: `ReduceLogSum` of one value that f16 stores 1.1e-4 off, where log is
/// ill-conditioned (its result is -0.031), so the f16 runs are checked against the reference on
/// the stored input; against the exact input this case is 3.5e-3 off.
#[test]
fn log_sum_near_one_is_checked_on_the_stored_input() {
    let case = reduce_case(
        &[1, 1],
        vec![0],
        false,
        (ReduceKind::LogSum, Domain::Positive),
        632,
    );
    case.check().unwrap();
}
