//! Tensors stored inside another tensor's slot, so that their copies need no dispatch:
//! reshapes that keep the PHWC4 bytes, and concatenations whose inputs are written straight into
//! their part of the output.

use heimdall_ir::{Graph, OpKind};

use crate::layout::Phwc4;
use crate::memory::Alias;
use crate::plan::Placement;
use crate::precision::Precision;

/// Tensors stored inside another tensor's slot, and the ops that need no dispatch for it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct SlotAliases {
    /// Where each tensor lives when it is inside another tensor's slot.
    pub alias: Vec<Option<Alias>>,
    /// Ops with no dispatch: aliased reshapes and free concatenations.
    pub free: Vec<bool>,
}

/// Copies that need no dispatch.
/// - Reshapes: a GPU RESHAPE whose input is an activation of the same storage precision,
///   channel count and pixel count as its output has the same PHWC4 bytes (pixels stay in
///   row-major order within each slice), so its output aliases the input's slot at offset 0 (the
///   root being the first tensor of a chain of such reshapes).
/// - Concatenations on the channel axis (the last): channel slices `[s0, s0 + k)` of a PHWC4
///   tensor are the contiguous bytes from vec4 `s0 * H * W`, so each input can be written by its
///   producer straight into its slices of the output's slot (as TFLite's GPU delegate does); the
///   same holds for rows (or pixels of one row) of a one-slice tensor. See
///   [`free_concat_offsets`] for when.
///
/// `align` is the device's `min_storage_buffer_offset_alignment` (binding offsets must be
/// multiples of it).
pub(crate) fn slot_aliases(
    graph: &Graph,
    placement: &[Placement],
    precisions: &[Precision],
    align: u64,
) -> SlotAliases {
    let mut alias: Vec<Option<Alias>> = vec![None; graph.tensors.len()];
    let mut free = vec![false; graph.ops.len()];
    for (k, (op, p)) in graph.ops.iter().zip(placement).enumerate() {
        let (OpKind::Reshape, Placement::Gpu, [x, ..], [y]) =
            (&op.kind, p, op.inputs.as_slice(), op.outputs.as_slice())
        else {
            continue;
        };
        if graph.tensor(*x).constant.is_some()
            || graph.inputs.contains(y)
            || precisions[x.index()] != precisions[y.index()]
            || !op.epilogue.is_identity()
        {
            continue;
        }
        let (Ok(gx), Ok(gy)) = (
            Phwc4::of(&graph.tensor(*x).shape),
            Phwc4::of(&graph.tensor(*y).shape),
        ) else {
            continue;
        };
        if gx.c == gy.c && gx.h * gx.w == gy.h * gy.w {
            let root = alias[x.index()].map_or(x.index(), |a| a.root);
            alias[y.index()] = Some(Alias { root, offset: 0 });
            free[k] = true;
        }
    }
    let mut readers = vec![0usize; graph.tensors.len()];
    let mut producer: Vec<Option<usize>> = vec![None; graph.tensors.len()];
    for (k, op) in graph.ops.iter().enumerate() {
        for t in op.reads() {
            readers[t.index()] += 1;
        }
        for o in &op.outputs {
            producer[o.index()] = Some(k);
        }
    }
    let mut is_root = vec![false; graph.tensors.len()];
    for a in alias.iter().flatten() {
        is_root[a.root] = true;
    }
    for (k, op) in graph.ops.iter().enumerate() {
        let ctx = ConcatContext {
            graph,
            placement,
            precisions,
            align,
            readers: &readers,
            producer: &producer,
            alias: &alias,
            is_root: &is_root,
        };
        if let Some(offsets) = free_concat_offsets(&ctx, k) {
            let y = op.outputs[0].index();
            for (x, offset) in op.inputs.iter().zip(offsets) {
                alias[x.index()] = Some(Alias { root: y, offset });
            }
            is_root[y] = true;
            free[k] = true;
        }
    }
    SlotAliases { alias, free }
}

/// What [`free_concat_offsets`] looks at.
struct ConcatContext<'a> {
    graph: &'a Graph,
    placement: &'a [Placement],
    precisions: &'a [Precision],
    align: u64,
    /// How many times each tensor is read by any op (epilogues included).
    readers: &'a [usize],
    /// The op defining each tensor.
    producer: &'a [Option<usize>],
    alias: &'a [Option<Alias>],
    /// Whether some tensor aliases each tensor.
    is_root: &'a [bool],
}

/// The byte offset of each input of op `k` in its output's slot, if op `k` is a GPU
/// concatenation that can be free: with no epilogue, its output not a graph input, its inputs
/// contiguous byte ranges of the output (the channel axis; or, when the output has one slice
/// (C ≤ 4), the height axis, or the width axis of a one-row tensor: the detectors' anchor
/// concatenations), and every input
/// - an activation written by a GPU op with one output (not a graph input, a constant or the
///   output of a CPU step), and not a graph output,
/// - read by nothing but this concatenation, and only once,
/// - of the output's storage precision, neither an alias nor aliased,
/// - on the channel axis, a whole number of slices (`C % 4 == 0`) unless it is the last (its
///   padding lanes are the output's),
/// - at an offset that is a multiple of `align`.
fn free_concat_offsets(ctx: &ConcatContext, k: usize) -> Option<Vec<u64>> {
    let graph = ctx.graph;
    let op = &graph.ops[k];
    let (OpKind::Concatenation { axis }, Placement::Gpu, [y]) =
        (&op.kind, ctx.placement[k], op.outputs.as_slice())
    else {
        return None;
    };
    let y_info = graph.tensor(*y);
    if *axis >= y_info.shape.len()
        || !op.epilogue.is_identity()
        || graph.inputs.contains(y)
        || y_info.constant.is_some()
        || ctx.alias[y.index()].is_some()
    {
        return None;
    }
    let gy = Phwc4::of(&y_info.shape).ok()?;
    // The axis in NHWC (shapes are right-aligned). Each input is then a block of whole vec4s
    // starting where the previous one ends: slices on C; rows of the one slice on H; pixels of
    // the one row and slice on W.
    let channels = axis + 1 == y_info.shape.len();
    let contiguous = match axis + 4 - y_info.shape.len() {
        3 => true,
        1 => gy.slices() == 1,
        2 => gy.slices() == 1 && gy.h == 1,
        _ => false,
    };
    if !contiguous {
        return None;
    }
    let precision = ctx.precisions[y.index()];
    let vec4_bytes = 4 * precision.bytes_per_value() as u64;
    let mut start = 0usize;
    let mut offsets = Vec::with_capacity(op.inputs.len());
    for (j, x) in op.inputs.iter().enumerate() {
        let i = x.index();
        let info = graph.tensor(*x);
        let produced_by_gpu = ctx.producer[i]
            .is_some_and(|p| ctx.placement[p] == Placement::Gpu && graph.ops[p].outputs.len() == 1);
        let gx = Phwc4::of(&info.shape).ok()?;
        let offset = start as u64 * vec4_bytes;
        let ok = produced_by_gpu
            && info.constant.is_none()
            && !graph.inputs.contains(x)
            && !graph.outputs.contains(x)
            && op.inputs.iter().filter(|&t| t == x).count() == 1
            && ctx.readers[i] == 1
            && ctx.precisions[i] == precision
            && ctx.alias[i].is_none()
            && !ctx.is_root[i]
            && info.numel() > 0
            && (!channels || j + 1 == op.inputs.len() || gx.c.is_multiple_of(4))
            && offset.is_multiple_of(ctx.align.max(1));
        if !ok {
            return None;
        }
        offsets.push(offset);
        start += gx.vec4s();
    }
    (start == gy.vec4s()).then_some(offsets)
}

#[cfg(test)]
mod tests {
    use super::{Alias, Placement, Precision, slot_aliases};
    use heimdall_ir::{DType, Graph, Op, OpKind, TensorId, TensorInfo, UnaryKind};

    /// x [1,4,6,8] -> relu -> a -> reshape [1,24,8] (same bytes: alias) -> b -> reshape [1,192]
    /// (channels change: a copy) -> c.
    #[test]
    fn reshapes_keeping_channels_alias_their_input() {
        let t = |shape: Vec<usize>| TensorInfo {
            name: String::new(),
            shape,
            dtype: DType::F32,
            constant: None,
        };
        let g = Graph {
            name: "r".into(),
            tensors: vec![
                t(vec![1, 4, 6, 8]),
                t(vec![1, 4, 6, 8]),
                t(vec![1, 24, 8]),
                t(vec![1, 192]),
            ],
            ops: vec![
                Op::new(
                    OpKind::Unary(UnaryKind::Relu),
                    vec![TensorId(0)],
                    vec![TensorId(1)],
                ),
                Op::new(OpKind::Reshape, vec![TensorId(1)], vec![TensorId(2)]),
                Op::new(OpKind::Reshape, vec![TensorId(2)], vec![TensorId(3)]),
            ],
            inputs: vec![TensorId(0)],
            outputs: vec![TensorId(3)],
        };
        let a = slot_aliases(&g, &[Placement::Gpu; 3], &[Precision::F16; 4], 256);
        let at1 = Some(Alias { root: 1, offset: 0 });
        assert_eq!(a.alias, vec![None, None, at1, None]);
        assert_eq!(a.free, vec![false, true, false]);
        // Different storage precisions never alias.
        let p = [
            Precision::F16,
            Precision::F16,
            Precision::F32,
            Precision::F32,
        ];
        let a = slot_aliases(&g, &[Placement::Gpu; 3], &p, 256);
        assert_eq!(a.alias, vec![None; 4]);
        assert_eq!(a.free, vec![false; 3]);
    }

    /// x [1,8,8,4] -> relu -> a [1,8,8,c0], relu -> b [1,8,8,4]; concat(a, b) -> y -> relu -> z.
    fn concat_graph(c0: usize) -> Graph {
        let t = |c: usize| TensorInfo {
            name: String::new(),
            shape: vec![1, 8, 8, c],
            dtype: DType::F32,
            constant: None,
        };
        let relu = |x: u32, y: u32| {
            Op::new(
                OpKind::Unary(UnaryKind::Relu),
                vec![TensorId(x)],
                vec![TensorId(y)],
            )
        };
        Graph {
            name: "c".into(),
            tensors: vec![t(4), t(c0), t(4), t(c0 + 4), t(c0 + 4)],
            ops: vec![
                relu(0, 1),
                relu(0, 2),
                Op::new(
                    OpKind::Concatenation { axis: 3 },
                    vec![TensorId(1), TensorId(2)],
                    vec![TensorId(3)],
                ),
                relu(3, 4),
            ],
            inputs: vec![TensorId(0)],
            outputs: vec![TensorId(4)],
        }
    }

    #[test]
    fn channel_concats_of_whole_aligned_slices_alias_their_output() {
        let gpu = [Placement::Gpu; 4];
        // 64 pixels of 16 bytes: the second input starts at 1024 (f32) or 512 (f16) bytes.
        let a = slot_aliases(&concat_graph(4), &gpu, &[Precision::F32; 5], 256);
        let at = |offset| Some(Alias { root: 3, offset });
        assert_eq!(a.alias, vec![None, at(0), at(1024), None, None]);
        assert_eq!(a.free, vec![false, false, true, false]);
        let a = slot_aliases(&concat_graph(8), &gpu, &[Precision::F16; 5], 256);
        assert_eq!(a.alias, vec![None, at(0), at(1024), None, None]);
        // Misaligned offset, a partial first slice, a CPU producer, mixed precisions: copies.
        let copy = |a: super::SlotAliases| {
            assert_eq!(a.alias, vec![None; 5]);
            assert_eq!(a.free, vec![false; 4]);
        };
        copy(slot_aliases(
            &concat_graph(4),
            &gpu,
            &[Precision::F16; 5],
            1024,
        ));
        copy(slot_aliases(
            &concat_graph(3),
            &gpu,
            &[Precision::F32; 5],
            4,
        ));
        let cpu = [
            Placement::Gpu,
            Placement::Cpu,
            Placement::Gpu,
            Placement::Gpu,
        ];
        copy(slot_aliases(
            &concat_graph(4),
            &cpu,
            &[Precision::F32; 5],
            256,
        ));
        let mut p = [Precision::F16; 5];
        p[2] = Precision::F32;
        copy(slot_aliases(&concat_graph(4), &gpu, &p, 256));
        // An input that is also a graph output, or read by another op: a copy.
        let mut g = concat_graph(4);
        g.outputs.push(TensorId(1));
        copy(slot_aliases(&g, &gpu, &[Precision::F32; 5], 256));
        let mut g = concat_graph(4);
        g.ops[3].inputs = vec![TensorId(2)];
        g.tensors[4].shape = vec![1, 8, 8, 4];
        copy(slot_aliases(&g, &gpu, &[Precision::F32; 5], 256));
    }
}
