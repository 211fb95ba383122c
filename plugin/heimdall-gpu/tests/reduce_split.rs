//! The split reduction (`shaders/reduce_split.wgsl`: one work group per output vec4, for few
//! outputs of long reductions on GPUs) against the CPU backend, forced onto the test device (a
//! CPU rasteriser never picks it): every reduction kind, reductions over one or several axes of
//! 16 to several hundred terms, outputs with partial last slices, within the kernel tests'
//! bounds (`common::kernel_tolerance`). Also that GPUs pick it for multistyle26's
//! `[26, 32] -> [32]` sums and keep one thread per output for large outputs.

mod common;

use common::{Case, Domain, GraphBuilder, gpu, with_tuning};
use heimdall_gpu::ops::reduce::splits;
use heimdall_ir::{Epilogue, OpKind, ReduceKind};
use proptest::prelude::*;

const KINDS: [ReduceKind; 10] = [
    ReduceKind::Sum,
    ReduceKind::Max,
    ReduceKind::Min,
    ReduceKind::Prod,
    ReduceKind::SumSquare,
    ReduceKind::L1,
    ReduceKind::L2,
    ReduceKind::LogSum,
    ReduceKind::LogSumExp,
    ReduceKind::Mean,
];

/// The domain of kind `kind`'s inputs, where it is well conditioned in f16 storage: as the
/// ONNX reductions of `ops_reduce.rs`, products of `1 + k/64` (k in -8..=8, exact in f16),
/// LogSum of positive values (`x + 1.5`), the others of values in [-1, 1).
fn domain(kind: ReduceKind) -> Domain {
    match kind {
        ReduceKind::Prod => Domain::NearOne,
        ReduceKind::LogSum => Domain::Shifted(1.5),
        _ => Domain::Signed,
    }
}

/// A reduction of `shape` over `axes` (kept dims off) with kind `k`, forced to split, against
/// the CPU (a `common::Case`: errors relative to the larger of the result's norm and that of the
/// same reduction of absolute values, `Measure::Scaled`).
fn case(shape: &[usize], axes: &[usize], k: usize, seed: u64) -> Result<(), String> {
    let Some(gpu) = gpu() else { return Ok(()) };
    let mut t = gpu.ctx.tuning();
    t.split_k_threads = 1 << 30;
    let kind = KINDS[k];
    let out = heimdall_ir::ops::reduce::shape(shape, axes, false).map_err(|e| e.to_string())?;
    let count: usize = axes.iter().map(|&a| shape[a]).product();
    let total =
        out.last().copied().unwrap_or(1).div_ceil(4) * out.iter().rev().skip(1).product::<usize>();
    if !splits(&t, total, count) {
        return Err(format!(
            "{shape:?} over {axes:?}: not split ({total} outputs, {count} terms)"
        ));
    }
    let mut b = GraphBuilder::default();
    let x = b.input(shape);
    let y = b.op(
        OpKind::Reduce {
            kind,
            axes: axes.to_vec(),
            keep_dims: false,
        },
        vec![x],
        &out,
        Epilogue::default(),
    );
    let g = b.finish(vec![y]);
    let case = Case::new(format!("Reduce {kind:?}"), g, seed).domains(&[domain(kind)]);
    with_tuning(t, || case.check().map(|_| ()))
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(16) })]

    #[test]
    fn split_reduction_matches_the_cpu(n in 16..300usize, c in 1..40usize, k in 0..10usize, seed in 0..1000u64) {
        // [n, c] over axis 0 (multistyle26's [26, 32] -> [32]).
        case(&[n, c], &[0], k, seed).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn split_reduction_over_several_axes(a in 2..9usize, b in 2..9usize, c in 1..12usize, k in 0..10usize, seed in 0..1000u64) {
        // [1, a, b*4, c] over axes 1 and 2 (at least 16 terms).
        case(&[1, a, b * 4, c], &[1, 2], k, seed).map_err(TestCaseError::fail)?;
    }
}

/// GPUs (split threshold 65 536 threads) split multistyle26's sums and keep one thread per
/// output vec4 for large outputs and short reductions; a CPU rasteriser (0) never splits.
#[test]
fn gpus_split_few_long_reductions() {
    let Some(gpu) = gpu() else { return };
    let mut t = gpu.ctx.tuning();
    t.split_k_threads = 65536;
    assert!(splits(&t, 8, 26));
    assert!(!splits(&t, 8, 8));
    assert!(!splits(&t, 4096, 26));
    t.split_k_threads = 0;
    assert!(!splits(&t, 8, 26));
}
