//! Normalisations against the CPU backend (the reference), on random shapes: InstanceNorm
//! (`src/ops/instance_norm.rs`) with scale and bias absent, run-time or constant, with the fused
//! epilogue of conditional instance normalisation, and over several statistics chunks; Softmax
//! and LogSoftmax (`src/ops/softmax.rs`) along any axis of ranks 1 to 4. Each case is a
//! `common::Case` (the one harness) measured as the ONNX ops are (`Measure::Strict`, the f16
//! runs against the reference on the inputs as f16 stores them): f32 ≤ 1e-5, f16 and packed f16
//! ≤ 3e-3, no wgpu error. Needs a GPU adapter (lavapipe in CI); `HEIMDALL_SKIP_GPU=1` skips.

mod common;

use common::{Case, Domain, GraphBuilder, kernel_cases, operand, shape_of};
use heimdall_ir::{Activation, Epilogue, OpKind, UnaryKind};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(kernel_cases(10)) })]

    #[test]
    fn instance_norm(h in 1..24usize, w in 1..24usize, c in 1..13usize, scale in 0..3u8, bias in 0..3u8, seed in 0..1000u64) {
        // scale / bias: 0 absent, 1 run-time input, 2 constant (bias only with a scale).
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, h, w, c]);
        let mut inputs = vec![x];
        if scale > 0 {
            inputs.push(operand(&mut b, &[c], scale == 2, seed + 1));
            if bias > 0 {
                inputs.push(operand(&mut b, &[c], bias == 2, seed + 2));
            }
        }
        let y = b.op(OpKind::InstanceNorm { epsilon: 1e-5 }, inputs, &[1, h, w, c], Epilogue::default());
        Case::new("InstanceNorm", b.finish(vec![y]), seed).strict(false).prop()?;
    }

    #[test]
    fn instance_norm_with_epilogue(h in 1..40usize, w in 1..40usize, c in 1..13usize, residual: bool, act in 0..4u8, seed in 0..1000u64) {
        // Conditional instance normalisation as the passes leave it: run-time scale and shift,
        // then the epilogue the shift's ADD had (a residual add, ReLU, logistic or PReLU).
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, h, w, c]);
        let s = b.input(&[c]);
        let bias = b.input(&[c]);
        let r = residual.then(|| b.input(&[1, h, w, c]));
        let activation = match act {
            0 => Activation::None,
            1 => Activation::Unary(UnaryKind::Relu),
            2 => Activation::Unary(UnaryKind::Logistic),
            _ => Activation::Prelu(b.constant(&[c], seed + 3)),
        };
        let ep = Epilogue { residual: r, activation };
        let y = b.op(OpKind::InstanceNorm { epsilon: 1e-5 }, vec![x, s, bias], &[1, h, w, c], ep);
        Case::new("InstanceNorm with epilogue", b.finish(vec![y]), seed).strict(false).prop()?;
    }

    #[test]
    fn instance_norm_many_chunks(h in 20..90usize, w in 20..90usize, c in 1..7usize, shift in 0..3u8, seed in 0..1000u64) {
        // Several statistics chunks of 1024 positions per slice, with a ragged last one; `shift`
        // moves the mean away from zero (the merge of chunk statistics must not cancel).
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, h, w, c]);
        let s = b.input(&[c]);
        let bias = b.constant(&[c], seed + 2);
        let y = b.op(OpKind::InstanceNorm { epsilon: 1e-5 }, vec![x, s, bias], &[1, h, w, c], Epilogue::default());
        let domain = [Domain::Signed, Domain::Shifted(0.5), Domain::Wide][shift as usize];
        Case::new("InstanceNorm", b.finish(vec![y]), seed).domains(&[domain, Domain::Signed]).strict(false).prop()?;
    }

    #[test]
    fn softmax(rank in 1..5usize, dims in prop::array::uniform4(1..10usize), axis in 0..4usize, log: bool, seed in 0..1000u64) {
        let shape = shape_of(rank, dims);
        let axis = axis % rank;
        let mut b = GraphBuilder::default();
        let x = b.input(&shape);
        let y = b.op(OpKind::Softmax { axis, log }, vec![x], &shape, Epilogue::default());
        // Log-softmax of a length-1 axis is all zeros: measure against the values' scale.
        let g = b.finish(vec![y]);
        if log && shape[axis] == 1 {
            return Ok(());
        }
        Case::new("Softmax", g, seed).domains(&[Domain::Wide]).strict(false).prop()?;
    }
}
