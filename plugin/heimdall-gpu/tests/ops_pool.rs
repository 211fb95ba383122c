//! Pooling against the CPU backend (the reference), on random shapes: max and average pools
//! (`src/ops/pool.rs`) with windows of 1-3 (one thread per output) and of ≥ 64 positions (the
//! work-group reduction, global pools included), strides 1-3, SAME and VALID padding. Each case
//! is a `common::Case` (the one harness): f32 (L2 error ≤ 1e-5 relative to the computation's
//! scale), f16 and packed f16 (≤ 3e-3), no wgpu error. Needs a GPU adapter (lavapipe in CI);
//! `HEIMDALL_SKIP_GPU=1` skips.

mod common;

use common::{Case, Domain, GraphBuilder, kernel_cases, pad2d};
use heimdall_ir::{Epilogue, OpKind, PoolAttrs};
use proptest::prelude::*;

/// A max or average pool of `[1, h, w, c]` with window `k` and stride `s` (`None` where VALID
/// has no output).
#[allow(clippy::too_many_arguments)]
fn pool_case(
    h: usize,
    w: usize,
    c: usize,
    k: [usize; 2],
    s: [usize; 2],
    same: bool,
    max: bool,
    seed: u64,
) -> Option<Case> {
    let (oh, ow, pad) = pad2d(h, w, k, s, [1, 1], same)?;
    let mut b = GraphBuilder::default();
    let x = b.input(&[1, h, w, c]);
    let attrs = PoolAttrs {
        filter: k,
        stride: s,
        pad,
    };
    let (name, kind) = if max {
        ("MaxPool2d", OpKind::MaxPool2d(attrs))
    } else {
        ("AvgPool2d", OpKind::AvgPool2d(attrs))
    };
    let y = b.op(kind, vec![x], &[1, oh, ow, c], Epilogue::default());
    Some(Case::new(name, b.finish(vec![y]), seed))
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(kernel_cases(10)) })]

    #[test]
    fn pool(h in 1..12usize, w in 1..12usize, c in 1..10usize, k in 1..4usize, s in 1..3usize, same: bool, max: bool, seed in 0..1000u64) {
        let (k, s) = ([k.min(h), k.min(w)], [s, s]);
        let Some(case) = pool_case(h, w, c, k, s, same, max, seed) else { return Ok(()) };
        case.prop()?;
    }

    #[test]
    fn pool_large_window(h in 6..24usize, w in 6..24usize, c in 1..10usize, k in 8..13usize, s in 1..4usize, same: bool, global: bool, max: bool, seed in 0..1000u64) {
        // Windows of ≥ 64 positions take the work-group reduction (global pools included).
        let (k, s) = if global { ([h, w], [h, w]) } else { ([k.min(h), k.min(w)], [s, s]) };
        let Some(case) = pool_case(h, w, c, k, s, same && !global, max, seed) else { return Ok(()) };
        case.domains(&[Domain::Shifted(2.0)]).prop()?;
    }
}
