//! Matrix products against the CPU backend (the reference), on random shapes: the TFLite fully
//! connected layer (`src/ops/fully_connected.rs`; flat or NHWC input, bias, every fused
//! epilogue) and the ONNX MatMul (`src/ops/matmul.rs`; ranks 2 and 3, batch broadcasting,
//! run-time and constant right operands). Each case is a `common::Case` (the one harness): f32
//! (L2 error ≤ 1e-5 relative to the computation's scale: a dot product of random signs lands
//! near zero), f16 and packed f16 (≤ 3e-3), no wgpu error. Needs a GPU adapter (lavapipe in CI);
//! `HEIMDALL_SKIP_GPU=1` skips.

mod common;

use common::{Case, GraphBuilder, epilogue, kernel_cases, operand};
use heimdall_ir::{Epilogue, OpKind};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(kernel_cases(10)) })]

    #[test]
    fn fully_connected(h in 1..5usize, w in 1..5usize, c in 1..11usize, o in 1..20usize, flat: bool, bias: bool, act in 0..8u8, seed in 0..1000u64) {
        let mut b = GraphBuilder::default();
        let n = h * w * c;
        let x = if flat { b.input(&[1, n]) } else { b.input(&[1, h, w, c]) };
        let mut inputs = vec![x, b.constant(&[o, n], seed)];
        if bias {
            inputs.push(b.constant(&[o], seed + 1));
        }
        let ep = epilogue(&mut b, act, false, &[1, o]);
        let y = b.op(OpKind::FullyConnected, inputs, &[1, o], ep);
        Case::new("FullyConnected", b.finish(vec![y]), seed).prop()?;
    }

    #[test]
    fn matmul(batch in 1..4usize, m in 1..10usize, k in 1..14usize, n in 1..12usize, rank_a in 2..4usize, rank_b in 2..4usize, bcast_a: bool, const_b: bool, seed in 0..1000u64) {
        let sa = if rank_a == 3 { vec![if bcast_a { 1 } else { batch }, m, k] } else { vec![m, k] };
        let sb = if rank_b == 3 { vec![batch, k, n] } else { vec![k, n] };
        let out = heimdall_ir::ops::matmul::shape(&sa, &sb).unwrap();
        let mut b = GraphBuilder::default();
        let a = b.input(&sa);
        let bt = operand(&mut b, &sb, const_b, seed);
        let y = b.op(OpKind::MatMul, vec![a, bt], &out, Epilogue::default());
        Case::new("MatMul", b.finish(vec![y]), seed).strict(true).prop()?;
    }
}
