//! Fusions of the CPU backend alone, decided when a model is compiled. They keep one step per op
//! of the graph, so that op ranges, per-op times and the coordinator's plans mean what they mean
//! on every backend; the shared IR is untouched (the GPU runs these ops as they are).
//!
//! A `PAD_REFLECT` in H and W (multistyle26 pads before each of its 18 convolutions) becomes a
//! step that does nothing, saving a pass that writes the padded copy of the tensor and one
//! that reads it, when
//! - the op producing its input, an instance normalisation or a separable (ONNX) resize, has
//!   no other reader: that op writes the padded image itself, border included
//!   ([`crate::kernels::instance_norm`] with a [`crate::kernels::PaddedOutput`]; a resize with
//!   mirrored taps); its own output then has no storage;
//! - or else only convolutions without padding of their own read the pad, as their input: they
//!   read the pad's input through a ring of mirrored rows instead
//!   ([`crate::kernels::PackedConv::with_reflect_padding`]); the padded tensor then has no
//!   storage, and the pad's input lives until the last of those convolutions has run.
//!
//! The producer is preferred: the convolution then runs as without the fusion, where the ring
//! copies about one input row per output row (one core, multistyle26's shapes: the ring 4-27 %
//! below pad then convolution; the producer writing the padded image costs it nothing).
//!
//! A zero `PAD` of the channels of an `[1, H, W, C]` tensor (BlazeFace's and face landmark's
//! residual branches widening the block's input to its output channels, 11 of them in
//! face_detection_short_range) whose readers are all `ADD`s of it and a tensor of its shape
//! becomes a step that does nothing too: each `ADD` reads the pad's input and adds zero beyond
//! its channels ([`crate::ops::binary`]'s channel-padded add), the same values in the same
//! order as the pad then the add, without the pass that writes the padded copy and the one
//! that reads it back.
//!
//! The per-channel adds and GELUs after convolutions are fused into them by `crate::fuse_tail`.
//!
//! [`crate::CpuModel::tensor`] gives `None` for a tensor without storage.

use heimdall_ir::{BinaryFn, Graph, Op, OpKind, Pad2d, PadMode, TensorId};

use crate::step::{Kernel, StepIo};

/// The step of a fused pad: nothing to do.
pub(crate) struct FusedPad;

impl Kernel for FusedPad {
    fn run(&self, _: StepIo<'_>) {}
}

/// The reflect pads of a graph fused into the op before them or the convolutions after them.
#[derive(Clone, Debug, Default)]
pub(crate) struct ReflectPads {
    /// Per op: a pad whose step does nothing.
    fused: Vec<bool>,
    /// Per op: for a convolution reading a fused pad, the pad's input and its `[top, left]`.
    sources: Vec<Option<(TensorId, [usize; 2])>>,
    /// Per op: for an instance normalisation or a resize writing a fused pad, the pad's output
    /// and its `[[top, bottom], [left, right]]`.
    padded_outputs: Vec<Option<(TensorId, [[usize; 2]; 2])>>,
    /// Per op: for an `ADD` reading a fused channel pad, which input it is and the pad's input.
    channel_padded: Vec<Option<(usize, TensorId)>>,
}

impl ReflectPads {
    /// Every fusable pad of `graph`: a `PAD_REFLECT` of an `[1, H, W, C]` tensor in H and W
    /// only, each padding less than its axis (one mirror image, as ONNX requires), whose output
    /// is not a graph output and is read by at least one op; fused into the instance
    /// normalisation or separable resize producing its input if that input is not a graph
    /// output and the pad is its only reader, else into its readers if they are all `CONV_2D`s
    /// without padding of their own that read it as their input 0 and nowhere else.
    pub(crate) fn find(graph: &Graph) -> ReflectPads {
        let n = graph.ops.len();
        let mut fusions = ReflectPads {
            fused: vec![false; n],
            sources: vec![None; n],
            padded_outputs: vec![None; n],
            channel_padded: vec![None; n],
        };
        let consumers = graph.consumers();
        let producers = graph.producers();
        for (k, op) in graph.ops.iter().enumerate() {
            fusions.fuse_channel_pad(graph, k, &consumers);
            let OpKind::Pad {
                pads,
                mode: PadMode::Reflect,
            } = &op.kind
            else {
                continue;
            };
            let (Some(&x), [p]) = (op.inputs.first(), &op.outputs[..]) else {
                continue;
            };
            let &[1, h, w, _] = &graph.tensor(x).shape[..] else {
                continue;
            };
            let spatial_only = pads.len() == 4 && pads[0] == [0, 0] && pads[3] == [0, 0];
            let readers = &consumers[p.index()];
            if !spatial_only
                || pads[1].iter().any(|&v| v >= h)
                || pads[2].iter().any(|&v| v >= w)
                || !op.epilogue.is_identity()
                || graph.outputs.contains(p)
                || readers.is_empty()
            {
                continue;
            }
            let writer = producers[x.index()].filter(|&j| {
                let kind = &graph.ops[j].kind;
                let writes_padded = match kind {
                    OpKind::InstanceNorm { .. } => true,
                    OpKind::Resize(a) => a.tflite_flags().is_none(),
                    _ => false,
                };
                writes_padded
                    && graph.ops[j].outputs == [x]
                    && consumers[x.index()] == [k]
                    && !graph.outputs.contains(&x)
            });
            if let Some(j) = writer {
                fusions.fused[k] = true;
                fusions.padded_outputs[j] = Some((*p, [pads[1], pads[2]]));
                continue;
            }
            let convs_only = readers.iter().all(|&j| {
                let c = &graph.ops[j];
                matches!(c.kind, OpKind::Conv2d(a) if a.pad == Pad2d::default())
                    && c.inputs[0] == *p
                    && !c.inputs[1..].contains(p)
                    && !c.epilogue.tensors().any(|t| t == *p)
            });
            if convs_only {
                fusions.fused[k] = true;
                for &j in readers {
                    fusions.sources[j] = Some((x, [pads[1][0], pads[2][0]]));
                }
            }
        }
        fusions
    }

    /// Fuses op `k` into the `ADD`s reading it if it is a zero `PAD` of the channels (at their
    /// end) of an `[1, H, W, C]` tensor, not a graph output, read only by `ADD`s as one of
    /// their two inputs whose other has the pad's shape (as has the add's output) and reads no
    /// other fused pad.
    fn fuse_channel_pad(&mut self, graph: &Graph, k: usize, consumers: &[Vec<usize>]) {
        let op = &graph.ops[k];
        let OpKind::Pad { pads, mode } = &op.kind else {
            return;
        };
        let (Some(&x), [p]) = (op.inputs.first(), &op.outputs[..]) else {
            return;
        };
        let shape = &graph.tensor(*p).shape;
        let readers = &consumers[p.index()];
        if !mode.is_zero()
            || graph.tensor(x).shape.len() != 4
            || graph.tensor(x).numel() == 0
            || pads.len() != 4
            || pads[..3].iter().any(|&d| d != [0, 0])
            || pads[3][0] != 0
            || !op.epilogue.is_identity()
            || graph.outputs.contains(p)
            || readers.is_empty()
        {
            return;
        }
        let adds_only = readers.iter().all(|&j| {
            let a = &graph.ops[j];
            let [u, v] = a.inputs[..] else {
                return false;
            };
            a.kind == OpKind::Binary(BinaryFn::Add)
                && (u == *p) != (v == *p)
                && graph.tensor(if u == *p { v } else { u }).shape == *shape
                && a.outputs.len() == 1
                && graph.tensor(a.outputs[0]).shape == *shape
                && !a.epilogue.tensors().any(|t| t == *p)
                && self.channel_padded[j].is_none()
        });
        if adds_only {
            self.fused[k] = true;
            for &j in readers {
                let which = usize::from(graph.ops[j].inputs[1] == *p);
                self.channel_padded[j] = Some((which, x));
            }
        }
    }

    /// For an `ADD` reading a fused channel pad: which of its inputs reads the pad's input.
    pub(crate) fn channel_padded(&self, k: usize) -> Option<usize> {
        self.channel_padded
            .get(k)
            .copied()
            .flatten()
            .map(|(i, _)| i)
    }

    /// Whether op `k` is a fused pad (its step does nothing).
    pub(crate) fn is_fused(&self, k: usize) -> bool {
        self.fused.get(k).copied().unwrap_or(false)
    }

    /// For a convolution reading a fused pad: the pad's input and its `[top, left]` padding.
    pub(crate) fn source(&self, k: usize) -> Option<(TensorId, [usize; 2])> {
        self.sources.get(k).copied().flatten()
    }

    /// For an instance normalisation or a resize writing a fused pad: the pad's output and its
    /// `[[top, bottom], [left, right]]` padding.
    pub(crate) fn padded_output(&self, k: usize) -> Option<(TensorId, [[usize; 2]; 2])> {
        self.padded_outputs.get(k).copied().flatten()
    }

    /// The op the CPU runs for op `k` of the graph: a fused pad reads and writes nothing, a
    /// convolution or an add after one reads the pad's input, the op writing one writes the
    /// pad's output.
    pub(crate) fn op(&self, k: usize, op: &Op) -> Op {
        let mut op = op.clone();
        if self.is_fused(k) {
            op.inputs.clear();
            op.outputs.clear();
        } else if let Some((i, x)) = self.channel_padded.get(k).copied().flatten() {
            op.inputs[i] = x;
        } else if let Some((x, _)) = self.source(k) {
            op.inputs[0] = x;
        } else if let Some((p, _)) = self.padded_output(k) {
            op.outputs = vec![p];
        }
        op
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `graph`'s ops as the pads' fusion alone rewires them.
    fn rewired(graph: &Graph) -> Vec<Op> {
        let pads = ReflectPads::find(graph);
        (graph.ops.iter().enumerate())
            .map(|(k, op)| pads.op(k, op))
            .collect()
    }
    use heimdall_ir::{ConvAttrs, DType, Op, TensorInfo};

    /// What reads and produces the pad of the test graph.
    #[derive(Clone, Copy)]
    struct Case {
        /// Channels of the image.
        c: usize,
        /// Padding of the convolution itself.
        conv_pad: usize,
        /// An instance normalisation produces the pad's input (else it is the graph's input).
        norm: bool,
        /// A ReLU reads the pad's output too.
        relu_of_pad: bool,
        /// The normalisation's output is a graph output too.
        norm_is_output: bool,
    }

    const PLAIN: Case = Case {
        c: 2,
        conv_pad: 0,
        norm: false,
        relu_of_pad: false,
        norm_is_output: false,
    };

    /// `i [1,4,4,c] (-> INSTANCE_NORM) -> x -> PAD_REFLECT [1,2],[1,2] -> p -> CONV 3x3 -> y`.
    fn graph(case: Case) -> Graph {
        let c = case.c;
        let t = |name: &str, shape: &[usize], constant: bool| TensorInfo {
            name: name.into(),
            shape: shape.to_vec(),
            dtype: DType::F32,
            constant: constant
                .then(|| heimdall_ir::Constant::dense(vec![0.0; shape.iter().product()])),
        };
        let (ph, pw) = (4 + 2, 4 + 4);
        let (oh, ow) = (ph + 2 * case.conv_pad - 2, pw + 2 * case.conv_pad - 2);
        let pad = case.conv_pad;
        let mut g = Graph {
            name: "g".into(),
            tensors: vec![
                t("i", &[1, 4, 4, c], false),
                t("x", &[1, 4, 4, c], false),
                t("p", &[1, ph, pw, c], false),
                t("f", &[3, 3, 3, c], true),
                t("y", &[1, oh, ow, 3], false),
                t("z", &[1, ph, pw, c], false),
            ],
            ops: vec![],
            inputs: vec![TensorId(0)],
            outputs: vec![TensorId(4)],
        };
        let x = if case.norm {
            g.ops.push(Op::new(
                OpKind::InstanceNorm { epsilon: 1e-5 },
                vec![TensorId(0)],
                vec![TensorId(1)],
            ));
            TensorId(1)
        } else {
            TensorId(0)
        };
        g.ops.push(Op::new(
            OpKind::Pad {
                pads: vec![[0, 0], [1, 1], [2, 2], [0, 0]],
                mode: PadMode::Reflect,
            },
            vec![x],
            vec![TensorId(2)],
        ));
        g.ops.push(Op::new(
            OpKind::Conv2d(ConvAttrs::unit_stride(pad)),
            vec![TensorId(2), TensorId(3)],
            vec![TensorId(4)],
        ));
        if case.relu_of_pad {
            let relu = OpKind::Unary(heimdall_ir::UnaryKind::Relu);
            g.ops
                .push(Op::new(relu, vec![TensorId(2)], vec![TensorId(5)]));
            g.outputs.push(TensorId(5));
        }
        if case.norm_is_output {
            g.outputs.push(x);
        }
        g.validate().expect("valid test graph");
        g
    }

    #[test]
    fn a_reflect_pad_only_convolutions_read_goes_into_them() {
        for c in [2, 32] {
            let g = graph(Case { c, ..PLAIN });
            let f = ReflectPads::find(&g);
            assert!(f.is_fused(0) && !f.is_fused(1));
            assert_eq!(f.source(1), Some((TensorId(0), [1, 2])));
            assert!(f.op(0, &g.ops[0]).outputs.is_empty());
            assert_eq!(f.op(1, &g.ops[1]).inputs[0], TensorId(0));
        }
        // A normalisation whose output is a graph output too cannot write the pad: the
        // convolution takes it.
        let g = graph(Case {
            norm: true,
            norm_is_output: true,
            ..PLAIN
        });
        let f = ReflectPads::find(&g);
        assert!(f.is_fused(1));
        assert_eq!(f.padded_output(0), None);
        assert_eq!(f.source(2), Some((TensorId(1), [1, 2])));
    }

    #[test]
    fn a_reflect_pad_after_an_instance_norm_goes_into_it() {
        for c in [2, 32] {
            let g = graph(Case {
                c,
                norm: true,
                ..PLAIN
            });
            let f = ReflectPads::find(&g);
            assert!(f.is_fused(1));
            assert_eq!(f.padded_output(0), Some((TensorId(2), [[1, 1], [2, 2]])));
            assert_eq!(f.source(2), None);
            assert_eq!(f.op(0, &g.ops[0]).outputs, [TensorId(2)]);
        }
    }

    /// The graph's ops as the pads' fusion rewires them (`crate::cpu_ops` applies it): what
    /// another backend resuming on the CPU must provide.
    #[test]
    fn the_pads_rewire_the_ops() {
        let g = graph(Case {
            norm: true,
            ..PLAIN
        });
        let ops = rewired(&g);
        assert_eq!(ops.len(), 3);
        assert_eq!(
            ops[0].outputs,
            [TensorId(2)],
            "the norm writes the padded tensor"
        );
        assert!(ops[1].inputs.is_empty() && ops[1].outputs.is_empty());
        assert_eq!(ops[2], g.ops[2]);
        let g = graph(PLAIN);
        let ops = rewired(&g);
        assert_eq!(
            ops[1].inputs[0],
            TensorId(0),
            "the convolution reads the pad's input"
        );
    }

    #[test]
    fn other_readers_and_padded_convolutions_keep_the_pad() {
        for case in [
            Case {
                relu_of_pad: true,
                ..PLAIN
            },
            Case {
                conv_pad: 1,
                ..PLAIN
            },
        ] {
            let g = graph(case);
            let f = ReflectPads::find(&g);
            assert!((0..g.ops.len()).all(|k| !f.is_fused(k)), "{:?}", g.ops);
            assert!((0..g.ops.len()).all(|k| f.source(k).is_none()));
            assert!((0..g.ops.len()).all(|k| f.padded_output(k).is_none()));
        }
    }

    /// A separable resize writes the pad after it; TFLite's bilinear resize (its own kernel)
    /// does not: the convolution takes the pad.
    #[test]
    fn a_reflect_pad_after_a_separable_resize_goes_into_it() {
        use heimdall_ir::{CoordMode, ResizeAttrs, ResizeMode, ResizeScale};
        for (scale, fused) in [
            (ResizeScale::Given([2.0, 2.0]), true),
            (ResizeScale::Sizes, false),
        ] {
            let mut g = graph(Case { c: 8, ..PLAIN });
            let attrs = ResizeAttrs {
                mode: ResizeMode::Linear,
                coord: CoordMode::HalfPixel,
                scale,
            };
            // i [1,2,2,8] -> RESIZE -> x [1,4,4,8] -> PAD_REFLECT -> CONV.
            g.tensors.push(TensorInfo {
                name: "small".into(),
                shape: vec![1, 2, 2, 8],
                dtype: DType::F32,
                constant: None,
            });
            let small = TensorId(g.tensors.len() as u32 - 1);
            g.ops.insert(
                0,
                Op::new(OpKind::Resize(attrs), vec![small], vec![TensorId(0)]),
            );
            g.inputs = vec![small];
            g.validate().expect("valid test graph");
            let f = ReflectPads::find(&g);
            assert!(f.is_fused(1));
            assert_eq!(f.padded_output(0).is_some(), fused);
            assert_eq!(f.source(2).is_some(), !fused);
        }
    }
}
