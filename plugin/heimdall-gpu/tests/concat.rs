//! Free concatenations: a channel concatenation whose inputs are written by their producers
//! straight into the output's channel slices (no dispatch), and the cases that must stay a copy.
//! Every graph is compared against the CPU backend in every precision, and whether the
//! concatenation was free is checked through `CompileReport::free_concats` and the dispatch
//! count. Needs a GPU adapter (lavapipe in CI); set `HEIMDALL_SKIP_GPU=1` to skip.

mod common;

use common::{GraphBuilder, check_against_cpu, gpu, inputs_for, with_trailer};
use heimdall_gpu::{GpuModel, GpuOptions, Precision};
use heimdall_ir::{Activation, BinaryFn, ConvAttrs, Epilogue, Graph, OpKind, TensorId, UnaryKind};

/// A 1x1 convolution `x [1,h,w,ci] -> [1,h,w,co]` with bias.
fn conv1x1(b: &mut GraphBuilder, x: TensorId, hw: [usize; 2], ci: usize, co: usize) -> TensorId {
    let seed = 10 + co as u64 * 7 + ci as u64;
    let f = b.constant(&[co, 1, 1, ci], seed);
    let bias = b.constant(&[co], seed + 1);
    b.op(
        OpKind::Conv2d(ConvAttrs::unit_stride(0)),
        vec![x, f, bias],
        &[1, hw[0], hw[1], co],
        Epilogue::default(),
    )
}

/// A 3x3 depthwise convolution (SAME padding) with a ReLU.
fn depthwise(b: &mut GraphBuilder, x: TensorId, hw: [usize; 2], c: usize) -> TensorId {
    let f = b.constant(&[1, 3, 3, c], 100 + c as u64);
    let bias = b.constant(&[c], 200 + c as u64);
    let attrs = ConvAttrs::unit_stride(1);
    let ep = Epilogue {
        residual: None,
        activation: Activation::Unary(UnaryKind::Relu),
    };
    b.op(
        OpKind::DepthwiseConv2d {
            attrs,
            multiplier: 1,
        },
        vec![x, f, bias],
        &[1, hw[0], hw[1], c],
        ep,
    )
}

/// A concatenation of `xs` on `axis` (of 4-D tensors).
fn concat(b: &mut GraphBuilder, xs: Vec<TensorId>, shapes: &[[usize; 4]], axis: usize) -> TensorId {
    let mut out = shapes[0];
    out[axis] = shapes.iter().map(|s| s[axis]).sum();
    b.op(
        OpKind::Concatenation { axis },
        xs,
        &out,
        Epilogue::default(),
    )
}

/// The device's binding offset alignment (printed: lavapipe under WebGPU's default limits has
/// 256).
fn alignment() -> Option<u32> {
    let g = gpu()?;
    let a = g.ctx.limits.min_storage_buffer_offset_alignment;
    eprintln!("min_storage_buffer_offset_alignment = {a}");
    Some(a)
}

/// Compiles `graph` (with the trailer of `check_against_cpu`) in every precision, with the
/// concatenation (op `concat_op`, `inputs` inputs) free or not as `free` says; a free one has
/// `inputs` dispatches fewer than the same graph with the concatenation forced to a copy (stored
/// in another precision than its inputs, which no producer or consumer notices in its dispatch
/// count). Also runs the model step by step: bit-identical to one whole run.
fn check_free(graph: &Graph, concat_op: usize, inputs: usize, free: bool) -> Result<(), String> {
    let Some(gpu) = gpu() else { return Ok(()) };
    let trailed = with_trailer(graph.clone());
    let data = inputs_for(&trailed, 7);
    let refs: Vec<&[f32]> = data.iter().map(Vec::as_slice).collect();
    for p in gpu.precisions() {
        let m = GpuModel::compile(&gpu.ctx, &trailed, GpuOptions::new(p))
            .map_err(|e| format!("{p:?}: {e}"))?;
        let r = m.report();
        if r.free_concats != usize::from(free) {
            return Err(format!(
                "{p:?}: {} free concatenations, expected {}",
                r.free_concats,
                usize::from(free)
            ));
        }
        let other = if p == Precision::F32 {
            Precision::PackedF16
        } else {
            Precision::F32
        };
        let mut copy = GpuOptions::new(p);
        copy.overrides = vec![(concat_op..concat_op + 1, other)];
        let c = GpuModel::compile(&gpu.ctx, &trailed, copy).map_err(|e| format!("{p:?}: {e}"))?;
        if c.report().free_concats != 0 {
            return Err(format!("{p:?}: a mixed-precision concatenation was free"));
        }
        let expected = c.report().dispatches - if free { inputs } else { 0 };
        if r.dispatches != expected {
            return Err(format!(
                "{p:?}: {} dispatches, expected {expected} (the copy has {})",
                r.dispatches,
                c.report().dispatches
            ));
        }
        let whole = m.run(&refs).map_err(|e| e.to_string())?;
        let steps: Vec<_> = (0..m.num_steps()).map(|i| i..i + 1).collect();
        let split = m.run_ranges(&refs, &steps).map_err(|e| e.to_string())?;
        if whole != split {
            return Err(format!("{p:?}: step-by-step run differs from a whole run"));
        }
        // Peak memory is still that of slots, not more than the sum of every tensor.
        if r.peak_bytes > r.total_bytes {
            return Err(format!(
                "{p:?}: peak {} > total {}",
                r.peak_bytes, r.total_bytes
            ));
        }
    }
    gpu.assert_no_errors();
    Ok(())
}

fn check(graph: Graph, concat_op: usize, inputs: usize, free: bool) {
    check_against_cpu(&graph, 3).unwrap();
    check_free(&graph, concat_op, inputs, free).unwrap();
}

/// x [1,8,8,8] -> conv1x1 -> a [..,8], conv1x1 -> b [..,4]; concat -> [..,12] -> conv1x1 -> 6.
#[test]
fn two_convs_into_channel_slices_are_free() {
    if alignment().is_none() {
        return;
    }
    let hw = [8, 8];
    let mut b = GraphBuilder::default();
    let x = b.input(&[1, 8, 8, 8]);
    let a = conv1x1(&mut b, x, hw, 8, 8);
    let c = conv1x1(&mut b, x, hw, 8, 4);
    let y = concat(&mut b, vec![a, c], &[[1, 8, 8, 8], [1, 8, 8, 4]], 3);
    let z = conv1x1(&mut b, y, hw, 12, 6);
    check(b.finish(vec![z]), 2, 2, true);
}

/// Three producers (a depthwise, an add, a conv whose 5 channels end in padding lanes) into
/// [1,4,8,21], read by a depthwise.
#[test]
fn three_producers_with_a_partial_last_slice_are_free() {
    if alignment().is_none() {
        return;
    }
    let hw = [4, 8];
    let mut b = GraphBuilder::default();
    let x = b.input(&[1, 4, 8, 8]);
    let x2 = b.input(&[1, 4, 8, 8]);
    let d = depthwise(&mut b, x, hw, 8);
    let s = b.op(
        OpKind::Binary(BinaryFn::Add),
        vec![x, x2],
        &[1, 4, 8, 8],
        Epilogue::default(),
    );
    let c = conv1x1(&mut b, x2, hw, 8, 5);
    let shapes = [[1, 4, 8, 8], [1, 4, 8, 8], [1, 4, 8, 5]];
    let y = concat(&mut b, vec![d, s, c], &shapes, 3);
    let z = depthwise(&mut b, y, hw, 21);
    check(b.finish(vec![z]), 3, 3, true);
}

/// A concatenation of one input (`concat(a)`) and a 3-D channel concatenation ([1,64,c]).
#[test]
fn single_input_and_rank_3_concats_are_free() {
    if alignment().is_none() {
        return;
    }
    let mut b = GraphBuilder::default();
    let x = b.input(&[1, 8, 8, 4]);
    let a = conv1x1(&mut b, x, [8, 8], 4, 8);
    let y = concat(&mut b, vec![a], &[[1, 8, 8, 8]], 3);
    let z = depthwise(&mut b, y, [8, 8], 8);
    check(b.finish(vec![z]), 1, 1, true);

    let mut b = GraphBuilder::default();
    let x = b.input(&[1, 64, 4]);
    let x2 = b.input(&[1, 64, 8]);
    let r = b.op(
        OpKind::Unary(UnaryKind::Relu),
        vec![x],
        &[1, 64, 4],
        Epilogue::default(),
    );
    let s = b.op(
        OpKind::Binary(BinaryFn::Add),
        vec![x2, x2],
        &[1, 64, 8],
        Epilogue::default(),
    );
    let y = b.op(
        OpKind::Concatenation { axis: 2 },
        vec![r, s],
        &[1, 64, 12],
        Epilogue::default(),
    );
    let z = b.op(
        OpKind::Unary(UnaryKind::Relu),
        vec![y],
        &[1, 64, 12],
        Epilogue::default(),
    );
    check(b.finish(vec![z]), 2, 2, true);
}

/// One-slice tensors (C ≤ 4) concatenated on the height axis, and one-row ones on the width
/// axis (the detectors' anchor concatenations, `[1,N,C]` on axis 1): blocks of pixels, free.
#[test]
fn spatial_concats_of_one_slice_are_free() {
    if alignment().is_none() {
        return;
    }
    let mut b = GraphBuilder::default();
    let x = b.input(&[1, 8, 8, 8]);
    let x2 = b.input(&[1, 4, 8, 8]);
    let a = conv1x1(&mut b, x, [8, 8], 8, 3);
    let c = conv1x1(&mut b, x2, [4, 8], 8, 3);
    let y = concat(&mut b, vec![a, c], &[[1, 8, 8, 3], [1, 4, 8, 3]], 1);
    let z = depthwise(&mut b, y, [12, 8], 3);
    check(b.finish(vec![z]), 2, 2, true);

    let mut b = GraphBuilder::default();
    let x = b.input(&[1, 64, 4]);
    let x2 = b.input(&[1, 32, 2]);
    let r = b.op(
        OpKind::Unary(UnaryKind::Relu),
        vec![x],
        &[1, 64, 4],
        Epilogue::default(),
    );
    let s = b.op(OpKind::Reshape, vec![x2], &[1, 16, 4], Epilogue::default());
    let s = b.op(
        OpKind::Binary(BinaryFn::Add),
        vec![s, s],
        &[1, 16, 4],
        Epilogue::default(),
    );
    let y = b.op(
        OpKind::Concatenation { axis: 1 },
        vec![r, s],
        &[1, 80, 4],
        Epilogue::default(),
    );
    let z = b.op(
        OpKind::Unary(UnaryKind::Relu),
        vec![y],
        &[1, 80, 4],
        Epilogue::default(),
    );
    check(b.finish(vec![z]), 3, 2, true);
}

/// The first input's 6 channels end inside a slice: a copy.
#[test]
fn a_partial_first_slice_falls_back_to_a_copy() {
    if alignment().is_none() {
        return;
    }
    let hw = [8, 8];
    let mut b = GraphBuilder::default();
    let x = b.input(&[1, 8, 8, 8]);
    let a = conv1x1(&mut b, x, hw, 8, 6);
    let c = conv1x1(&mut b, x, hw, 8, 4);
    let y = concat(&mut b, vec![a, c], &[[1, 8, 8, 6], [1, 8, 8, 4]], 3);
    let z = conv1x1(&mut b, y, hw, 10, 6);
    check(b.finish(vec![z]), 2, 2, false);
}

/// An input also read by another op (a second output), and an input used twice: copies.
#[test]
fn shared_or_repeated_inputs_fall_back_to_a_copy() {
    if alignment().is_none() {
        return;
    }
    let hw = [8, 8];
    let mut b = GraphBuilder::default();
    let x = b.input(&[1, 8, 8, 8]);
    let a = conv1x1(&mut b, x, hw, 8, 8);
    let c = conv1x1(&mut b, x, hw, 8, 4);
    let y = concat(&mut b, vec![a, c], &[[1, 8, 8, 8], [1, 8, 8, 4]], 3);
    let z = conv1x1(&mut b, y, hw, 12, 6);
    let w = depthwise(&mut b, a, hw, 8);
    check(b.finish(vec![z, w]), 2, 2, false);

    let mut b = GraphBuilder::default();
    let x = b.input(&[1, 8, 8, 8]);
    let a = conv1x1(&mut b, x, hw, 8, 4);
    let y = concat(&mut b, vec![a, a], &[[1, 8, 8, 4], [1, 8, 8, 4]], 3);
    let z = conv1x1(&mut b, y, hw, 8, 6);
    check(b.finish(vec![z]), 1, 2, false);
}

/// A graph input as a concatenation input: a copy.
#[test]
fn a_graph_input_falls_back_to_a_copy() {
    if alignment().is_none() {
        return;
    }
    let hw = [8, 8];
    let mut b = GraphBuilder::default();
    let x = b.input(&[1, 8, 8, 8]);
    let a = conv1x1(&mut b, x, hw, 8, 4);
    let y = concat(&mut b, vec![x, a], &[[1, 8, 8, 8], [1, 8, 8, 4]], 3);
    let z = conv1x1(&mut b, y, hw, 12, 6);
    check(b.finish(vec![z]), 1, 2, false);
}

/// 3x5 pixels: the second input would start 240 (f32) or 120 (f16) bytes in, not a multiple of
/// the offset alignment (256 on lavapipe): a copy. Width and height concatenations of several
/// rows and slices are copies too.
#[test]
fn misaligned_offsets_and_other_axes_fall_back_to_a_copy() {
    let Some(align) = alignment() else { return };
    assert!(
        align > 16,
        "with an alignment of {align} the 3x5 case would be free"
    );
    let hw = [3, 5];
    let mut b = GraphBuilder::default();
    let x = b.input(&[1, 3, 5, 8]);
    let a = conv1x1(&mut b, x, hw, 8, 4);
    let c = conv1x1(&mut b, x, hw, 8, 8);
    let y = concat(&mut b, vec![a, c], &[[1, 3, 5, 4], [1, 3, 5, 8]], 3);
    let z = conv1x1(&mut b, y, hw, 12, 6);
    check(b.finish(vec![z]), 2, 2, false);

    let mut b = GraphBuilder::default();
    let x = b.input(&[1, 8, 8, 8]);
    let a = conv1x1(&mut b, x, [8, 8], 8, 4);
    let c = conv1x1(&mut b, x, [8, 8], 8, 4);
    let y = concat(&mut b, vec![a, c], &[[1, 8, 8, 4], [1, 8, 8, 4]], 2);
    let z = conv1x1(&mut b, y, [8, 16], 4, 6);
    check(b.finish(vec![z]), 2, 2, false);

    let mut b = GraphBuilder::default();
    let x = b.input(&[1, 8, 8, 8]);
    let a = conv1x1(&mut b, x, [8, 8], 8, 8);
    let c = conv1x1(&mut b, x, [8, 8], 8, 8);
    let y = concat(&mut b, vec![a, c], &[[1, 8, 8, 8], [1, 8, 8, 8]], 1);
    let z = conv1x1(&mut b, y, [16, 8], 8, 6);
    check(b.finish(vec![z]), 2, 2, false);
}
