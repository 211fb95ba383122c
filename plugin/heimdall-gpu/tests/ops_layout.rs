//! Data-movement ops against the CPU backend (the reference), on random shapes: Reshape
//! (`src/ops/reshape.rs`), Pad with zeros and with a fill mode (constant, reflect, edge;
//! `pad.rs`), StridedSlice with negative strides (`strided_slice.rs`), Concatenation along every
//! axis of ranks 3 and 4 (`concat.rs`; its free form, written in place by the producers, is in
//! `tests/concat.rs`), Transpose (`transpose.rs`), DepthToSpace in DCR and CRD order and
//! SpaceToDepth (`space_depth.rs`). The TFLite ops are measured against the computation's scale,
//! the ONNX ones (`pad_with`, `transpose`, `space_depth`) as the ONNX ops are
//! (`Measure::Strict`). Each case is a `common::Case` (the one harness): f32 ≤ 1e-5, f16 and
//! packed f16 ≤ 3e-3, no wgpu error. Needs a GPU adapter (lavapipe in CI); `HEIMDALL_SKIP_GPU=1`
//! skips.

mod common;

use common::{Case, GraphBuilder, kernel_cases, shape_of};
use heimdall_ir::{BlockOrder, Epilogue, OpKind, PadMode, StridedSliceAttrs, TensorId};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(kernel_cases(10)) })]

    #[test]
    fn reshape(h in 1..6usize, w in 1..6usize, c in 1..9usize, form in 0..3u8, seed in 0..1000u64) {
        let out = match form { 0 => vec![1, h * w, c], 1 => vec![1, h * w * c], _ => vec![1, h, w * c] };
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, h, w, c]);
        let y = b.op(OpKind::Reshape, vec![x], &out, Epilogue::default());
        Case::new("Reshape", b.finish(vec![y]), seed).prop()?;
    }

    #[test]
    fn pad(h in 1..6usize, w in 1..6usize, c in 1..9usize, p in prop::collection::vec(0..3usize, 6), seed in 0..1000u64) {
        let pads = vec![[0, 0], [p[0], p[1]], [p[2], p[3]], [p[4], p[5]]];
        let out = [1, h + p[0] + p[1], w + p[2] + p[3], c + p[4] + p[5]];
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, h, w, c]);
        let y = b.op(OpKind::Pad { pads, mode: PadMode::ZERO }, vec![x], &out, Epilogue::default());
        Case::new("Pad", b.finish(vec![y]), seed).prop()?;
    }

    #[test]
    fn pad_with(rank in 1..5usize, dims in prop::array::uniform4(1..8usize), pads in prop::array::uniform8(0..4usize), mode in 0..3u8, seed in 0..1000u64) {
        let shape = shape_of(rank, dims);
        let mode = match mode {
            0 => PadMode::Constant(0.75),
            1 => PadMode::Reflect,
            _ => PadMode::Edge,
        };
        let p: Vec<[usize; 2]> = (0..rank)
            .map(|d| {
                // No padding of the batch axis; reflect pads at most n - 1.
                if rank == 4 && d == 0 {
                    return [0, 0];
                }
                let lim = if mode == PadMode::Reflect { shape[d] - 1 } else { 3 };
                [pads[2 * d].min(lim), pads[2 * d + 1].min(lim)]
            })
            .collect();
        let out = heimdall_ir::ops::pad::shape(&shape, &p, &mode).unwrap();
        let mut b = GraphBuilder::default();
        let x = b.input(&shape);
        let y = b.op(OpKind::Pad { pads: p, mode }, vec![x], &out, Epilogue::default());
        Case::new(format!("Pad {mode:?}"), b.finish(vec![y]), seed).strict(false).prop()?;
    }

    #[test]
    fn strided_slice(dims in prop::collection::vec(1..7usize, 3), picks in prop::collection::vec((0..6usize, 0..4u8, 1..7usize), 3), seed in 0..1000u64) {
        let shape = [1, dims[0], dims[1], dims[2]];
        let (mut begin, mut stride, mut count) = (vec![0i64], vec![1i64], vec![1usize]);
        for (d, &(b0, st, n)) in picks.iter().enumerate() {
            let size = dims[d];
            let s: i64 = [1, 2, -1, 3][st as usize];
            let first = (b0 % size) as i64;
            // Elements available from `first` in direction `s`.
            let avail = if s > 0 { (size as i64 - 1 - first) / s + 1 } else { first / -s + 1 };
            begin.push(first);
            stride.push(s);
            count.push(n.min(avail as usize));
        }
        let mut b = GraphBuilder::default();
        let x = b.input(&shape);
        let y = b.op(OpKind::StridedSlice(StridedSliceAttrs { begin, stride, count: count.clone() }), vec![x], &count, Epilogue::default());
        Case::new("StridedSlice", b.finish(vec![y]), seed).prop()?;
    }

    #[test]
    fn concatenation(h in 1..5usize, w in 1..5usize, sizes in prop::collection::vec(1..7usize, 1..4), axis in 1..4usize, rank3: bool, seed in 0..1000u64) {
        let mut b = GraphBuilder::default();
        let base: Vec<usize> = if rank3 { vec![1, h * w, 3] } else { vec![1, h, w, 3] };
        let axis = axis.min(base.len() - 1);
        let mut inputs: Vec<TensorId> = Vec::new();
        for &n in &sizes {
            let mut s = base.clone();
            s[axis] = n;
            inputs.push(b.input(&s));
        }
        let mut out = base.clone();
        out[axis] = sizes.iter().sum();
        let y = b.op(OpKind::Concatenation { axis }, inputs, &out, Epilogue::default());
        Case::new("Concatenation", b.finish(vec![y]), seed).prop()?;
    }

    #[test]
    fn transpose(rank in 2..5usize, dims in prop::array::uniform4(1..9usize), perm_seed in 0..24usize, seed in 0..1000u64) {
        let shape = shape_of(rank, dims);
        // The permutations of the non-batch axes (rank 4 keeps the batch axis first).
        let free: Vec<usize> = if rank == 4 { vec![1, 2, 3] } else { (0..rank).collect() };
        let mut rest = free.clone();
        let mut perm_free = Vec::new();
        let mut s = perm_seed;
        while !rest.is_empty() {
            perm_free.push(rest.remove(s % rest.len()));
            s /= 4;
        }
        let perm: Vec<usize> = if rank == 4 { [vec![0], perm_free].concat() } else { perm_free };
        let out: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
        let mut b = GraphBuilder::default();
        let x = b.input(&shape);
        let y = b.op(OpKind::Transpose { perm }, vec![x], &out, Epilogue::default());
        Case::new("Transpose", b.finish(vec![y]), seed).strict(false).prop()?;
    }

    #[test]
    fn depth_to_space(h in 1..6usize, w in 1..6usize, oc in 1..7usize, block in 2..4usize, seed in 0..1000u64) {
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, h, w, oc * block * block]);
        let y = b.op(OpKind::DepthToSpace { block, order: BlockOrder::Dcr }, vec![x], &[1, h * block, w * block, oc], Epilogue::default());
        Case::new("DepthToSpace DCR", b.finish(vec![y]), seed).prop()?;
    }

    #[test]
    fn space_depth(h in 1..6usize, w in 1..6usize, c in 1..7usize, block in 1..4usize, crd: bool, seed in 0..1000u64) {
        let (shape, out) = if crd {
            ([1, h, w, c * block * block], [1, h * block, w * block, c])
        } else {
            ([1, h * block, w * block, c], [1, h, w, c * block * block])
        };
        let kind = if crd { OpKind::DepthToSpace { block, order: BlockOrder::Crd } } else { OpKind::SpaceToDepth { block } };
        let mut b = GraphBuilder::default();
        let x = b.input(&shape);
        let y = b.op(kind, vec![x], &out, Epilogue::default());
        Case::new(if crd { "DepthToSpace CRD" } else { "SpaceToDepth" }, b.finish(vec![y]), seed).strict(false).prop()?;
    }
}
