//! f16 arithmetic of the convolutions (`heimdall_gpu::arith`) against the CPU reference: 1x1
//! and windowed convolutions with short reductions (f16 accumulators) and long ones (f16 partial
//! sums added into f32), each compiled in f16 with f16 arithmetic on and off. Tolerances: the
//! kernel tests' f16 bound (3e-3, L2 error relative to the computation's scale, see
//! `common::check_against_cpu_shifted`), and 2e-3 relative on a long all-positive sum, where an
//! f16 accumulator over the whole reduction misses (on lavapipe, `HEIMDALL_F16_TERMS=4096` makes
//! that test fail at 2.3e-2; chunked it gives 3.0e-4). Needs a GPU adapter with `shader-f16`
//! (lavapipe in CI).

mod common;

use common::{GraphBuilder, gpu, run_cpu, with_trailer};
use heimdall_gpu::{GpuModel, GpuOptions, Precision};
use heimdall_ir::{ConvAttrs, Epilogue, Graph, OpKind};

/// A convolution `[1, h, w, ci] -> co` with a `k x k` window (SAME padding, stride 1) and bias,
/// followed by the trailer that keeps it in the model's storage precision.
fn conv(h: usize, w: usize, ci: usize, co: usize, k: usize, seed: u64) -> Graph {
    let mut b = GraphBuilder::default();
    let x = b.input(&[1, h, w, ci]);
    let f = b.constant(&[co, k, k, ci], seed);
    let bias = b.constant(&[co], seed + 1);
    let attrs = ConvAttrs::unit_stride(k / 2);
    let y = b.op(
        OpKind::Conv2d(attrs),
        vec![x, f, bias],
        &[1, h, w, co],
        Epilogue::default(),
    );
    with_trailer(b.finish(vec![y]))
}

/// Runs `graph` in f16 with f16 arithmetic on or off; the output and the ops computing in f16.
fn run_f16(graph: &Graph, inputs: &[Vec<f32>], f16_arith: bool) -> (Vec<f32>, Vec<usize>) {
    let gpu = gpu().expect("gpu");
    let tuning = heimdall_gpu::Tuning {
        f16_arithmetic: f16_arith,
        ..gpu.ctx.tuning()
    };
    let options = GpuOptions::new(Precision::F16).with_tuning(tuning);
    let m = GpuModel::compile(&gpu.ctx, graph, options).expect("compile");
    let refs: Vec<&[f32]> = inputs.iter().map(Vec::as_slice).collect();
    let out = m.run(&refs).expect("run").remove(0);
    gpu.assert_no_errors();
    (out, m.report().f16_arith_ops.clone())
}

/// The graph with every constant replaced by its absolute value.
fn abs_constants(g: &Graph) -> Graph {
    let mut g = g.clone();
    for t in &mut g.tensors {
        if let Some(c) = t.constant.as_mut() {
            c.values.iter_mut().for_each(|v| *v = v.abs());
            c.fp16 = None;
        }
    }
    g
}

#[test]
fn f16_arithmetic_convolutions_match_the_cpu() {
    let Some(g) = gpu() else { return };
    if !g.ctx.has_f16() {
        eprintln!("no shader-f16: f16 arithmetic is not used");
        return;
    }
    // (h, w, ci, co, k): 1x1 short (24 terms) and chunked (200, 1152), 3x3 short (3 channels:
    // 27 terms) and chunked (9 x 40 = 360), a 5x5 with 13 channels (chunks of one tap).
    let cases = [
        (9, 7, 24, 20, 1),
        (6, 11, 200, 12, 1),
        (3, 5, 1152, 8, 1),
        (10, 9, 3, 17, 3),
        (7, 8, 40, 9, 3),
        (6, 6, 13, 6, 5),
    ];
    for (n, &(h, w, ci, co, k)) in cases.iter().enumerate() {
        let graph = conv(h, w, ci, co, k, 10 + n as u64);
        let inputs = common::inputs_for(&graph, n as u64);
        let reference = run_cpu(&graph, &inputs).remove(0);
        let abs_inputs: Vec<Vec<f32>> = (inputs.iter())
            .map(|x| x.iter().map(|v| v.abs()).collect())
            .collect();
        let scale = run_cpu(&abs_constants(&graph), &abs_inputs).remove(0);
        let (arith, ops) = run_f16(&graph, &inputs, true);
        assert_eq!(ops, vec![0], "case {n}: the conv must compute in f16");
        let err = heimdall_testkit::rel_l2_scaled(&arith, &reference, &scale);
        let (storage, none) = run_f16(&graph, &inputs, false);
        assert!(
            none.is_empty(),
            "case {n}: f16 arithmetic off, yet {none:?}"
        );
        let err_storage = heimdall_testkit::rel_l2_scaled(&storage, &reference, &scale);
        eprintln!(
            "case {n} ({h}x{w}x{ci}->{co}, {k}x{k}): f16 arithmetic {err:.2e}, storage only {err_storage:.2e}"
        );
        assert!(
            err <= 3e-3,
            "case {n}: f16 arithmetic error {err:.3e} > 3e-3"
        );
        assert!(
            err_storage <= 3e-3,
            "case {n}: storage error {err_storage:.3e}"
        );
        assert_ne!(arith, storage, "case {n}: both runs computed the same way");
    }
}

/// A long sum of positive products (1x1, 2048 input channels: about 512 at the output) is where
/// an f16 accumulator fails (its ulp at 512 is 0.5, each product about 0.25): the chunked f32
/// accumulation must keep it within 2e-3.
#[test]
fn long_positive_sums_accumulate_in_f32() {
    let Some(g) = gpu() else { return };
    if !g.ctx.has_f16() {
        return;
    }
    let graph = abs_constants(&conv(4, 5, 2048, 8, 1, 3));
    let inputs: Vec<Vec<f32>> = (common::inputs_for(&graph, 5).into_iter())
        .map(|x| x.into_iter().map(f32::abs).collect())
        .collect();
    let reference = run_cpu(&graph, &inputs).remove(0);
    let (arith, ops) = run_f16(&graph, &inputs, true);
    assert_eq!(ops, vec![0]);
    let err = heimdall_testkit::rel_l2(&arith, &reference);
    eprintln!("1x1 2048 channels, positive: f16 arithmetic {err:.2e}");
    assert!(err <= 2e-3, "relative error {err:.3e} > 2e-3");
}
