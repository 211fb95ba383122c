//! The compiled CPU model: prepared kernels, the planned arena, and execution of any range of
//! ops (Heimdall's `RunPartial`).

use std::ops::Range;
use std::time::{Duration, Instant};

use heimdall_ir::shape::as_nhwc;
use heimdall_ir::{
    Activation, BinaryFn, BlockOrder, Graph, Op, OpKind, ReduceKind, TensorId, UnaryKind,
};

use crate::error::CpuError;
use crate::kernels::conv::PackedConv;
use crate::kernels::depthwise::PackedDepthwise;
use crate::kernels::elementwise::{self, BinaryOp};
use crate::kernels::fully_connected::PackedFullyConnected;
use crate::kernels::interp;
use crate::kernels::pad_mode::{self, Fill};
use crate::kernels::reduce_ops::{self, Fold};
use crate::kernels::resize::{self, ResizeBilinear};
use crate::kernels::transpose_conv::PackedTransposeConv;
use crate::kernels::{Act, Epilogue, Par, Window, layout, pool, reduce};
use crate::kernels::{math, matmul, norm, select, softmax, space_depth, transpose};
use crate::plan::{ArenaPlan, plan_arena};
use crate::prepare_ext;

/// Options of the CPU backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuOptions {
    /// Worker threads (1 = run on the caller's thread only).
    pub threads: usize,
}

impl Default for CpuOptions {
    fn default() -> Self {
        CpuOptions {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get().min(4)),
        }
    }
}

/// Where a tensor's values are.
#[derive(Clone, Copy, Debug)]
enum Loc {
    Arena { offset: usize, len: usize },
    Const { index: usize },
}

/// An op prepared for execution.
enum Kernel {
    Conv(PackedConv),
    Depthwise(PackedDepthwise),
    TransposeConv(PackedTransposeConv),
    FullyConnected(PackedFullyConnected),
    MaxPool(Window),
    AvgPool(Window),
    Mean {
        shape: Vec<usize>,
        axes: Vec<usize>,
    },
    Binary {
        op: BinaryOp,
        a: Vec<usize>,
        b: Vec<usize>,
    },
    Prelu {
        x: Vec<usize>,
        alpha: Vec<usize>,
    },
    Unary {
        kind: UnaryKind,
        channels: usize,
    },
    Pad {
        shape: Vec<usize>,
        pads: Vec<(usize, usize)>,
    },
    Copy,
    Dequantize {
        bits: Option<Vec<u16>>,
    },
    Densify {
        positions: Vec<usize>,
    },
    Concat {
        shapes: Vec<Vec<usize>>,
        axis: usize,
    },
    Resize(ResizeBilinear),
    DepthToSpace {
        h: usize,
        w: usize,
        c: usize,
        block: usize,
    },
    StridedSlice {
        shape: Vec<usize>,
        begin: Vec<isize>,
        end: Vec<isize>,
        stride: Vec<isize>,
    },
    /// A convolution-like op whose weights or bias are computed at run time (only when the
    /// load-time passes are off, e.g. fp16 weights still behind a `DEQUANTIZE` op): its weights
    /// are packed on every run.
    Dynamic(DynamicKind, Window),
    Landmarks2TransformMatrix(heimdall_ir::Landmarks2TransformMatrixAttrs, Vec<usize>),
    TransformTensorBilinear(
        heimdall_ir::TransformTensorBilinearAttrs,
        Vec<usize>,
        Vec<usize>,
    ),
    TransformLandmarks(heimdall_ir::TransformLandmarksAttrs, Vec<usize>),
    Transpose {
        shape: Vec<usize>,
        perm: Vec<usize>,
    },
    Math(MathKernel),
    InstanceNorm {
        channels: usize,
        epsilon: f32,
        scale: bool,
        bias: bool,
    },
    Interp {
        in_w: usize,
        channels: usize,
        rows: Vec<interp::Tap>,
        cols: Vec<interp::Tap>,
    },
    Interp4 {
        in_w: usize,
        channels: usize,
        rows: Vec<interp::Tap4>,
        cols: Vec<interp::Tap4>,
    },
    PadWith {
        shape: Vec<usize>,
        pads: Vec<(usize, usize)>,
        fill: Fill,
    },
    Softmax {
        shape: Vec<usize>,
        axis: usize,
        log: bool,
    },
    MatMul {
        a: Vec<usize>,
        b: Vec<usize>,
    },
    Reduce {
        shape: Vec<usize>,
        axes: Vec<usize>,
        fold: Fold,
    },
    SpaceToDepth {
        h: usize,
        w: usize,
        c: usize,
        block: usize,
    },
    DepthToSpaceCrd {
        h: usize,
        w: usize,
        c: usize,
        block: usize,
    },
    Select {
        shapes: [Vec<usize>; 3],
        out: Vec<usize>,
    },
}

/// An element-wise function chosen at compile time.
type MathKernel = Box<math::SliceFn>;

#[derive(Clone, Copy)]
enum DynamicKind {
    Conv,
    Depthwise,
    TransposeConv,
    FullyConnected { inputs: usize, outputs: usize },
}

enum EpAct {
    None,
    Unary(UnaryKind),
    Prelu(Loc),
}

struct Step {
    kernel: Kernel,
    inputs: Vec<Loc>,
    output: Loc,
    residual: Option<Loc>,
    act: EpAct,
}

/// A graph compiled for the CPU: weights packed, arena planned, ready to run any op range.
///
/// Intermediate tensors stay in the arena between calls, so running `0..k` then `k..n` gives
/// bit-for-bit the result of running `0..n`.
pub struct CpuModel {
    steps: Vec<Step>,
    names: Vec<&'static str>,
    constants: Vec<Vec<f32>>,
    arena: Vec<f32>,
    scratch: Vec<f32>,
    inputs: Vec<(Loc, Vec<usize>)>,
    outputs: Vec<(Loc, Vec<usize>)>,
    locs: Vec<Option<Loc>>,
    plan: ArenaPlan,
    par: Par,
}

impl std::fmt::Debug for CpuModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuModel")
            .field("ops", &self.steps.len())
            .field("arena_values", &self.arena.len())
            .finish()
    }
}

impl CpuModel {
    /// Compiles a validated graph: packs every weight, plans the arena, sizes scratch.
    pub fn compile(graph: &Graph, options: CpuOptions) -> Result<CpuModel, CpuError> {
        let par = Par::new(options.threads.clamp(1, crate::MAX_THREADS));
        let plan = plan_arena(graph);
        let mut constants = Vec::new();
        let mut locs: Vec<Option<Loc>> = vec![None; graph.tensors.len()];
        for (i, t) in graph.tensors.iter().enumerate() {
            if let Some(c) = &t.constant {
                locs[i] = Some(Loc::Const {
                    index: constants.len(),
                });
                constants.push(c.values.clone());
            } else if let Some(offset) = plan.offsets[i] {
                locs[i] = Some(Loc::Arena {
                    offset,
                    len: t.numel(),
                });
            }
        }
        let mut steps = Vec::with_capacity(graph.ops.len());
        let mut scratch_len = 0;
        for (index, op) in graph.ops.iter().enumerate() {
            let err = |message: String| CpuError::Op {
                index,
                name: op.kind.name().into(),
                message,
            };
            let loc = |t: TensorId| {
                locs[t.index()].ok_or_else(|| err(format!("tensor {} has no storage", t.0)))
            };
            let (kernel, scratch) = prepare(graph, op).map_err(&err)?;
            scratch_len = scratch_len.max(scratch);
            if op.outputs.len() != 1 {
                return Err(err(format!(
                    "{} outputs, the CPU backend supports one",
                    op.outputs.len()
                )));
            }
            let output = loc(op.outputs[0])?;
            let Loc::Arena {
                offset: out_at,
                len: out_len,
            } = output
            else {
                return Err(err("writes a constant".into()));
            };
            let inputs: Vec<Loc> = op
                .inputs
                .iter()
                .map(|&t| loc(t))
                .collect::<Result<_, _>>()?;
            let residual = op.epilogue.residual.map(loc).transpose()?;
            // The kernels read inputs while writing the output: the plan must keep them apart.
            for l in inputs.iter().chain(residual.iter()) {
                if let Loc::Arena { offset, len } = *l
                    && offset < out_at + out_len
                    && out_at < offset + len
                {
                    return Err(err("input and output overlap in the arena plan".into()));
                }
            }
            let act = match op.epilogue.activation {
                Activation::None => EpAct::None,
                Activation::Unary(u) if u.fusable() => EpAct::Unary(u),
                Activation::Unary(u) => {
                    return Err(err(format!("{} cannot be a fused activation", u.name())));
                }
                Activation::Prelu(a) => {
                    let n = graph.tensor(a).numel();
                    let c = graph
                        .tensor(op.outputs[0])
                        .shape
                        .last()
                        .copied()
                        .unwrap_or(1);
                    if n != 1 && n != c {
                        return Err(err(format!(
                            "fused PReLU alpha of {n} values for {c} channels"
                        )));
                    }
                    EpAct::Prelu(loc(a)?)
                }
            };
            steps.push(Step {
                kernel,
                inputs,
                output,
                residual,
                act,
            });
        }
        let io =
            |ids: &[TensorId], what: &'static str| -> Result<Vec<(Loc, Vec<usize>)>, CpuError> {
                ids.iter()
                    .enumerate()
                    .map(|(i, &t)| {
                        locs[t.index()]
                            .map(|l| (l, graph.tensor(t).shape.clone()))
                            .ok_or(CpuError::NoSuchTensor {
                                what,
                                index: i,
                                count: ids.len(),
                            })
                    })
                    .collect()
            };
        Ok(CpuModel {
            names: graph.ops.iter().map(|o| o.kind.name()).collect(),
            steps,
            constants,
            arena: vec![0.0; plan.len],
            scratch: vec![0.0; scratch_len],
            inputs: io(&graph.inputs, "input")?,
            outputs: io(&graph.outputs, "output")?,
            locs,
            plan,
            par,
        })
    }

    /// Number of ops (steps) of the model.
    pub fn num_ops(&self) -> usize {
        self.steps.len()
    }

    /// Name of op `i`.
    pub fn op_name(&self, i: usize) -> &'static str {
        self.names[i]
    }

    /// Bytes of the activation arena (peak activation memory) and of all activations without
    /// reuse.
    pub fn arena_bytes(&self) -> (usize, usize) {
        (4 * self.plan.len, 4 * self.plan.total)
    }

    /// Shapes of the model's inputs.
    pub fn input_shapes(&self) -> Vec<Vec<usize>> {
        self.inputs.iter().map(|(_, s)| s.clone()).collect()
    }

    /// Shapes of the model's outputs.
    pub fn output_shapes(&self) -> Vec<Vec<usize>> {
        self.outputs.iter().map(|(_, s)| s.clone()).collect()
    }

    /// Copies `data` into input `index`; its length must match the input's shape.
    pub fn set_input(&mut self, index: usize, data: &[f32]) -> Result<(), CpuError> {
        let count = self.inputs.len();
        let (loc, shape) = self.inputs.get(index).ok_or(CpuError::NoSuchTensor {
            what: "input",
            index,
            count,
        })?;
        match *loc {
            Loc::Arena { offset, len } if len == data.len() => {
                self.arena[offset..offset + len].copy_from_slice(data);
                Ok(())
            }
            _ => Err(CpuError::InputShape {
                index,
                expected: shape.clone(),
                got: data.len(),
            }),
        }
    }

    /// The values of output `index` (valid after the op producing it has run).
    pub fn output(&self, index: usize) -> Result<&[f32], CpuError> {
        let count = self.outputs.len();
        let (loc, _) = self.outputs.get(index).ok_or(CpuError::NoSuchTensor {
            what: "output",
            index,
            count,
        })?;
        Ok(self.view(*loc))
    }

    /// The values of any tensor of the graph (constants, or activations whose memory has not
    /// been reused yet), for debugging and per-op comparisons.
    pub fn tensor(&self, id: TensorId) -> Option<&[f32]> {
        self.locs
            .get(id.index())
            .copied()
            .flatten()
            .map(|l| self.view(l))
    }

    /// Overwrites an activation in the arena (for experiments such as emulating a lower
    /// storage precision between ops). Constants cannot be changed: `None` for them, for
    /// tensors without storage and for a length mismatch.
    pub fn set_tensor(&mut self, id: TensorId, data: &[f32]) -> Option<()> {
        match self.locs.get(id.index()).copied().flatten()? {
            Loc::Arena { offset, len } if len == data.len() => {
                self.arena[offset..offset + len].copy_from_slice(data);
                Some(())
            }
            _ => None,
        }
    }

    fn view(&self, loc: Loc) -> &[f32] {
        match loc {
            Loc::Arena { offset, len } => &self.arena[offset..offset + len],
            Loc::Const { index } => &self.constants[index],
        }
    }

    /// Runs every op.
    pub fn run(&mut self) -> Result<(), CpuError> {
        self.run_range(0..self.steps.len())
    }

    /// Runs ops `range` (op indices of the graph). Tensors produced by earlier ranges are read
    /// from the arena, so a model may be run as any sequence of contiguous ranges.
    pub fn run_range(&mut self, range: Range<usize>) -> Result<(), CpuError> {
        self.run_range_timed(range, None)
    }

    /// Like [`CpuModel::run_range`], recording each op's wall time into `times` (indexed by op).
    pub fn run_range_timed(
        &mut self,
        range: Range<usize>,
        times: Option<&mut [Duration]>,
    ) -> Result<(), CpuError> {
        let len = self.steps.len();
        if range.start > range.end || range.end > len {
            return Err(CpuError::Range {
                start: range.start,
                end: range.end,
                len,
            });
        }
        let CpuModel {
            steps,
            constants,
            arena,
            scratch,
            par,
            ..
        } = self;
        let arena_ptr = ArenaPtr(arena.as_mut_ptr(), arena.len());
        let (steps, constants, scratch, par) = (&*steps, &*constants, scratch, &*par);
        par.install(move || {
            let mut times = times;
            for i in range {
                let start = Instant::now();
                // SAFETY: `compile` checked that no input or residual of a step overlaps its
                // output, constants live outside the arena, and this closure is the arena's only
                // user while it runs (`self` is borrowed mutably).
                unsafe { run_step(&steps[i], &arena_ptr, constants, scratch, par) };
                if let Some(t) = times.as_deref_mut() {
                    t[i] = start.elapsed();
                }
            }
        });
        Ok(())
    }
}

struct ArenaPtr(*mut f32, usize);
// SAFETY: the pointer is only used inside `run_range_timed` while the arena is mutably borrowed.
unsafe impl Send for ArenaPtr {}
unsafe impl Sync for ArenaPtr {}

/// Executes one step.
///
/// # Safety
/// The step's output range must not overlap any range it reads (checked at compile).
unsafe fn run_step(
    step: &Step,
    arena: &ArenaPtr,
    constants: &[Vec<f32>],
    scratch: &mut [f32],
    par: &Par,
) {
    let read = |l: Loc| -> &[f32] {
        match l {
            // SAFETY: within the arena (planned), not overlapping the output (caller's contract).
            Loc::Arena { offset, len } => unsafe {
                std::slice::from_raw_parts(arena.0.add(offset), len)
            },
            Loc::Const { index } => &constants[index],
        }
    };
    let Loc::Arena { offset, len } = step.output else {
        unreachable!("checked at compile")
    };
    debug_assert!(offset + len <= arena.1);
    // SAFETY: as above.
    let out: &mut [f32] = unsafe { std::slice::from_raw_parts_mut(arena.0.add(offset), len) };
    let input = |i: usize| read(step.inputs[i]);
    let act = match step.act {
        EpAct::None => Act::None,
        EpAct::Unary(u) => unary_act(u),
        EpAct::Prelu(l) => Act::Prelu(read(l)),
    };
    let ep = Epilogue {
        residual: step.residual.map(read),
        act,
    };
    match &step.kernel {
        Kernel::Conv(k) => k.run(par, input(0), out, scratch, &ep),
        Kernel::Depthwise(k) => k.run(par, input(0), out, &ep),
        Kernel::TransposeConv(k) => k.run(par, input(0), out, scratch, &ep),
        Kernel::FullyConnected(k) => k.run(par, input(0), out, &ep),
        Kernel::MaxPool(w) => pool::max_pool(par, w, input(0), out, &ep),
        Kernel::AvgPool(w) => pool::avg_pool(par, w, input(0), out, &ep),
        Kernel::Mean { shape, axes } => reduce::mean(input(0), shape, axes, out),
        Kernel::Binary { op, a, b } => {
            elementwise::binary(par, *op, input(0), a, input(1), b, out, &ep)
        }
        Kernel::Prelu { x, alpha } => {
            elementwise::prelu(par, input(0), x, input(1), alpha, out, &ep)
        }
        Kernel::Unary { kind, channels } => elementwise::activation(
            par,
            input(0),
            out,
            *channels,
            &Epilogue {
                residual: None,
                act: unary_act(*kind),
            },
        ),
        Kernel::Pad { shape, pads } => layout::pad(input(0), shape, pads, 0.0, out),
        Kernel::Copy => layout::copy(input(0), out),
        Kernel::Dequantize { bits } => match bits {
            Some(bits) => out
                .iter_mut()
                .zip(bits)
                .for_each(|(o, &b)| *o = half_to_f32(b)),
            None => layout::copy(input(0), out),
        },
        Kernel::Densify { positions } => {
            out.fill(0.0);
            for (&p, &v) in positions.iter().zip(input(0)) {
                out[p] = v;
            }
        }
        Kernel::Concat { shapes, axis } => {
            // No allocation per run for the usual few inputs (the models concatenate 2 or 3).
            const STACK: usize = 8;
            if shapes.len() <= STACK {
                let mut parts: [(&[f32], &[usize]); STACK] = [(&[], &[]); STACK];
                for (i, shape) in shapes.iter().enumerate() {
                    parts[i] = (input(i), shape.as_slice());
                }
                layout::concat(&parts[..shapes.len()], *axis, out);
            } else {
                let parts: Vec<(&[f32], &[usize])> = (0..shapes.len())
                    .map(|i| (input(i), shapes[i].as_slice()))
                    .collect();
                layout::concat(&parts, *axis, out);
            }
        }
        Kernel::Resize(r) => resize::resize_bilinear(par, r, input(0), out),
        Kernel::DepthToSpace { h, w, c, block } => {
            layout::depth_to_space(input(0), *h, *w, *c, *block, out)
        }
        Kernel::StridedSlice {
            shape,
            begin,
            end,
            stride,
        } => layout::strided_slice(input(0), shape, begin, end, stride, out),
        Kernel::Dynamic(kind, w) => {
            let bias = (step.inputs.len() > 2).then(|| input(2));
            match *kind {
                DynamicKind::Conv => {
                    PackedConv::new(input(1), bias, *w).run(par, input(0), out, scratch, &ep)
                }
                DynamicKind::Depthwise => {
                    PackedDepthwise::new(input(1), bias, *w).run(par, input(0), out, &ep)
                }
                DynamicKind::TransposeConv => PackedTransposeConv::new(input(1), bias, *w).run(
                    par,
                    input(0),
                    out,
                    scratch,
                    &ep,
                ),
                DynamicKind::FullyConnected { inputs, outputs } => PackedFullyConnected::new(
                    input(1),
                    bias,
                    inputs,
                    outputs,
                )
                .run(par, input(0), out, &ep),
            }
        }
        Kernel::Landmarks2TransformMatrix(a, shape) => {
            crate::mediapipe::landmarks_to_transform_matrix(a, input(0), shape, out)
        }
        Kernel::TransformTensorBilinear(a, shape, out_shape) => {
            crate::mediapipe::transform_tensor_bilinear(
                a,
                input(0),
                shape,
                input(1),
                out,
                out_shape,
            )
        }
        Kernel::TransformLandmarks(a, shape) => {
            crate::mediapipe::transform_landmarks(a, input(0), shape, input(1), out)
        }
        Kernel::Transpose { shape, perm } => transpose::transpose(input(0), shape, perm, out),
        Kernel::Math(f) => math::map(par, input(0), out, &**f),
        Kernel::InstanceNorm {
            channels,
            epsilon,
            scale,
            bias,
        } => norm::instance_norm(
            input(0),
            *channels,
            scale.then(|| input(1)),
            bias.then(|| input(2)),
            *epsilon,
            out,
        ),
        Kernel::Interp {
            in_w,
            channels,
            rows,
            cols,
        } => interp::resize(input(0), *in_w, *channels, rows, cols, out),
        Kernel::Interp4 {
            in_w,
            channels,
            rows,
            cols,
        } => interp::resize4(input(0), *in_w, *channels, rows, cols, out),
        Kernel::PadWith { shape, pads, fill } => {
            pad_mode::pad_with(input(0), shape, pads, *fill, out)
        }
        Kernel::Softmax { shape, axis, log } => softmax::softmax(input(0), shape, *axis, *log, out),
        Kernel::MatMul { a, b } => matmul::matmul(input(0), a, input(1), b, out),
        Kernel::Reduce { shape, axes, fold } => {
            reduce_ops::reduce(input(0), shape, axes, *fold, out)
        }
        Kernel::SpaceToDepth { h, w, c, block } => {
            space_depth::space_to_depth(input(0), *h, *w, *c, *block, out)
        }
        Kernel::DepthToSpaceCrd { h, w, c, block } => {
            space_depth::depth_to_space_crd(input(0), *h, *w, *c, *block, out)
        }
        Kernel::Select { shapes, out: shape } => select::select(
            (input(0), &shapes[0]),
            (input(1), &shapes[1]),
            (input(2), &shapes[2]),
            shape,
            out,
        ),
    }
}

fn half_to_f32(bits: u16) -> f32 {
    // IEEE binary16 to binary32, exact.
    let sign = ((bits >> 15) as u32) << 31;
    let exp = ((bits >> 10) & 0x1f) as u32;
    let mant = (bits & 0x3ff) as u32;
    let v = match (exp, mant) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: value = m * 2^-24.
            let f = m as f32 * f32::from_bits(0x3380_0000);
            return if sign != 0 { -f } else { f };
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(v)
}

fn unary_act(u: UnaryKind) -> Act<'static> {
    match u {
        UnaryKind::Relu => Act::Relu,
        UnaryKind::Relu6 => Act::Relu6,
        UnaryKind::ReluN1To1 => Act::ReluN1To1,
        UnaryKind::Logistic => Act::Logistic,
        UnaryKind::HardSwish => Act::HardSwish,
        UnaryKind::Tanh => Act::Tanh,
        other => unreachable!("{} is not an activation (checked at compile)", other.name()),
    }
}

/// Prepares an op's kernel; returns it and the scratch (f32 values) it needs.
fn prepare(graph: &Graph, op: &Op) -> Result<(Kernel, usize), String> {
    let shape = |i: usize| graph.tensor(op.inputs[i]).shape.clone();
    let out_shape = graph.tensor(op.outputs[0]).shape.clone();
    let constant = |i: usize| -> Result<&[f32], String> {
        let t = graph.tensor(op.inputs[i]);
        match &t.constant {
            Some(c) if c.sparsity.is_none() => Ok(&c.values),
            Some(_) => Err(format!(
                "input {i} ('{}') is sparse: run the passes (DENSIFY) first",
                t.name
            )),
            None => Err(format!(
                "input {i} ('{}') must be a constant (weights computed at run time are not supported)",
                t.name
            )),
        }
    };
    let bias = |i: usize| -> Result<Option<&[f32]>, String> {
        if op.inputs.len() > i {
            constant(i).map(Some)
        } else {
            Ok(None)
        }
    };
    let window = |x: &[usize], k: [usize; 2], a: &heimdall_ir::ConvAttrs, out: &[usize]| Window {
        in_h: x[1],
        in_w: x[2],
        in_c: x[3],
        out_h: out[1],
        out_w: out[2],
        out_c: out[3],
        k_h: k[0],
        k_w: k[1],
        stride_h: a.stride[0],
        stride_w: a.stride[1],
        dil_h: a.dilation[0],
        dil_w: a.dilation[1],
        pad_top: a.pad.top,
        pad_left: a.pad.left,
    };
    let out4 = as_nhwc(&out_shape);
    let weights_dynamic = op
        .inputs
        .iter()
        .skip(1)
        .any(|&t| graph.tensor(t).constant.is_none());
    if weights_dynamic {
        let conv_attrs = |a: &heimdall_ir::ConvAttrs| {
            let f = shape(1);
            window(&shape(0), [f[1], f[2]], a, &out4)
        };
        match &op.kind {
            OpKind::Conv2d(a) => {
                let w = conv_attrs(a);
                return Ok((
                    Kernel::Dynamic(DynamicKind::Conv, w),
                    crate::kernels::conv::conv_scratch_len(&w, crate::MAX_THREADS),
                ));
            }
            OpKind::DepthwiseConv2d { attrs, .. } => {
                return Ok((
                    Kernel::Dynamic(DynamicKind::Depthwise, conv_attrs(attrs)),
                    0,
                ));
            }
            OpKind::TransposeConv2d(a) => {
                let w = conv_attrs(a);
                return Ok((
                    Kernel::Dynamic(DynamicKind::TransposeConv, w),
                    crate::kernels::transpose_conv::transpose_conv_scratch_len(&w),
                ));
            }
            OpKind::FullyConnected => {
                let wsh = shape(1);
                return Ok((
                    Kernel::Dynamic(
                        DynamicKind::FullyConnected {
                            inputs: wsh[1],
                            outputs: wsh[0],
                        },
                        Window {
                            in_h: 1,
                            in_w: 1,
                            in_c: wsh[1],
                            out_h: 1,
                            out_w: 1,
                            out_c: wsh[0],
                            k_h: 1,
                            k_w: 1,
                            stride_h: 1,
                            stride_w: 1,
                            dil_h: 1,
                            dil_w: 1,
                            pad_top: 0,
                            pad_left: 0,
                        },
                    ),
                    0,
                ));
            }
            _ => {}
        }
    }
    Ok(match &op.kind {
        OpKind::Conv2d(a) => {
            let f = shape(1);
            let w = window(&shape(0), [f[1], f[2]], a, &out4);
            let k = PackedConv::new(constant(1)?, bias(2)?, w);
            let s = crate::kernels::conv::conv_scratch_len(&w, crate::MAX_THREADS);
            (Kernel::Conv(k), s)
        }
        OpKind::DepthwiseConv2d { attrs, .. } => {
            let f = shape(1);
            let w = window(&shape(0), [f[1], f[2]], attrs, &out4);
            (
                Kernel::Depthwise(PackedDepthwise::new(constant(1)?, bias(2)?, w)),
                0,
            )
        }
        OpKind::TransposeConv2d(a) => {
            let f = shape(1);
            let w = window(&shape(0), [f[1], f[2]], a, &out4);
            let k = PackedTransposeConv::new(constant(1)?, bias(2)?, w);
            let s = k.scratch_len();
            (Kernel::TransposeConv(k), s)
        }
        OpKind::FullyConnected => {
            let wsh = shape(1);
            (
                Kernel::FullyConnected(PackedFullyConnected::new(
                    constant(1)?,
                    bias(2)?,
                    wsh[1],
                    wsh[0],
                )),
                0,
            )
        }
        OpKind::MaxPool2d(p) | OpKind::AvgPool2d(p) => {
            let x = shape(0);
            let a = heimdall_ir::ConvAttrs {
                stride: p.stride,
                dilation: [1, 1],
                pad: p.pad,
            };
            let w = window(&x, p.filter, &a, &out4);
            (
                if matches!(op.kind, OpKind::MaxPool2d(_)) {
                    Kernel::MaxPool(w)
                } else {
                    Kernel::AvgPool(w)
                },
                0,
            )
        }
        OpKind::Reduce {
            kind: ReduceKind::Mean,
            axes,
            ..
        } => (
            Kernel::Mean {
                shape: shape(0),
                axes: axes.clone(),
            },
            0,
        ),
        OpKind::Binary(BinaryFn::Prelu) => (
            Kernel::Prelu {
                x: shape(0),
                alpha: shape(1),
            },
            0,
        ),
        OpKind::Unary(u) if u.fusable() => (
            Kernel::Unary {
                kind: *u,
                channels: out_shape.last().copied().unwrap_or(1),
            },
            0,
        ),
        OpKind::Pad { pads, mode } if mode.is_zero() => (
            Kernel::Pad {
                shape: shape(0),
                pads: pads.iter().map(|p| (p[0], p[1])).collect(),
            },
            0,
        ),
        OpKind::Reshape => (Kernel::Copy, 0),
        OpKind::Dequantize => {
            let t = graph.tensor(op.inputs[0]);
            let bits = t.constant.as_ref().and_then(|c| {
                if c.sparsity.is_none() {
                    c.fp16.clone()
                } else {
                    None
                }
            });
            (Kernel::Dequantize { bits }, 0)
        }
        OpKind::Densify => {
            let t = graph.tensor(op.inputs[0]);
            let c = t.constant.as_ref().ok_or("DENSIFY of a non-constant")?;
            let sp = c.sparsity.as_ref().ok_or("DENSIFY of a dense constant")?;
            // Dense position of each stored value: densify the sequence 1, 2, 3, ...
            let ordinals: Vec<u32> = (1..=c.values.len() as u32).collect();
            let dense = heimdall_ir::sparse::densify(sp, &ordinals, &t.shape)?;
            let mut positions = vec![0usize; c.values.len()];
            for (p, &o) in dense.iter().enumerate() {
                if o > 0 {
                    positions[o as usize - 1] = p;
                }
            }
            (Kernel::Densify { positions }, 0)
        }
        OpKind::Concatenation { axis } => (
            Kernel::Concat {
                shapes: (0..op.inputs.len()).map(shape).collect(),
                axis: *axis,
            },
            0,
        ),
        OpKind::Resize(a) if a.tflite_flags().is_some() => {
            let x = shape(0);
            let (align_corners, half_pixel_centers) = a.tflite_flags().expect("checked");
            (
                Kernel::Resize(ResizeBilinear {
                    in_h: x[1],
                    in_w: x[2],
                    channels: x[3],
                    out_h: out4[1],
                    out_w: out4[2],
                    align_corners,
                    half_pixel_centers,
                }),
                0,
            )
        }
        OpKind::DepthToSpace {
            block,
            order: BlockOrder::Dcr,
        } => {
            let x = shape(0);
            (
                Kernel::DepthToSpace {
                    h: x[1],
                    w: x[2],
                    c: x[3],
                    block: *block,
                },
                0,
            )
        }
        OpKind::StridedSlice(a) => {
            let end = a
                .begin
                .iter()
                .zip(&a.stride)
                .zip(&a.count)
                .map(|((&b, &s), &n)| (b + s * n as i64) as isize)
                .collect();
            (
                Kernel::StridedSlice {
                    shape: shape(0),
                    begin: a.begin.iter().map(|&b| b as isize).collect(),
                    end,
                    stride: a.stride.iter().map(|&s| s as isize).collect(),
                },
                0,
            )
        }
        OpKind::Landmarks2TransformMatrix(a) => {
            (Kernel::Landmarks2TransformMatrix(a.clone(), shape(0)), 0)
        }
        OpKind::TransformTensorBilinear(a) => (
            Kernel::TransformTensorBilinear(a.clone(), shape(0), out_shape.clone()),
            0,
        ),
        OpKind::TransformLandmarks(a) => (Kernel::TransformLandmarks(a.clone(), shape(0)), 0),
        OpKind::Transpose { perm } => (
            Kernel::Transpose {
                shape: shape(0),
                perm: perm.clone(),
            },
            0,
        ),
        OpKind::Unary(f) => (Kernel::Math(prepare_ext::math_fn(*f)), 0),
        OpKind::Binary(f) => (
            Kernel::Binary {
                op: prepare_ext::binary_op(*f),
                a: shape(0),
                b: shape(1),
            },
            0,
        ),
        OpKind::InstanceNorm { epsilon } => (
            Kernel::InstanceNorm {
                channels: shape(0).last().copied().unwrap_or(1),
                epsilon: *epsilon,
                scale: op.inputs.len() > 1,
                bias: op.inputs.len() > 2,
            },
            0,
        ),
        OpKind::Resize(a) if matches!(a.mode, heimdall_ir::ResizeMode::Cubic { .. }) => {
            let x = shape(0);
            let (rows, cols) = prepare_ext::cubic_taps(a, &x, &out4);
            (
                Kernel::Interp4 {
                    in_w: x[2],
                    channels: x[3],
                    rows,
                    cols,
                },
                0,
            )
        }
        OpKind::Resize(a) => {
            let x = shape(0);
            let (rows, cols) = prepare_ext::resize_taps(a, &x, &out4);
            (
                Kernel::Interp {
                    in_w: x[2],
                    channels: x[3],
                    rows,
                    cols,
                },
                0,
            )
        }
        OpKind::Pad { pads, mode } => (
            Kernel::PadWith {
                shape: shape(0),
                pads: pads.iter().map(|p| (p[0], p[1])).collect(),
                fill: prepare_ext::fill(*mode),
            },
            0,
        ),
        OpKind::Softmax { axis, log } => (
            Kernel::Softmax {
                shape: shape(0),
                axis: *axis,
                log: *log,
            },
            0,
        ),
        OpKind::MatMul => (
            Kernel::MatMul {
                a: shape(0),
                b: shape(1),
            },
            0,
        ),
        OpKind::Reduce { kind, axes, .. } => (
            Kernel::Reduce {
                shape: shape(0),
                axes: axes.clone(),
                fold: prepare_ext::fold(*kind),
            },
            0,
        ),
        OpKind::Where => (
            Kernel::Select {
                shapes: [shape(0), shape(1), shape(2)],
                out: out_shape.clone(),
            },
            0,
        ),
        OpKind::SpaceToDepth { block }
        | OpKind::DepthToSpace {
            block,
            order: BlockOrder::Crd,
        } => {
            let x = shape(0);
            let (h, w, c, block) = (x[1], x[2], x[3], *block);
            (
                if matches!(op.kind, OpKind::SpaceToDepth { .. }) {
                    Kernel::SpaceToDepth { h, w, c, block }
                } else {
                    Kernel::DepthToSpaceCrd { h, w, c, block }
                },
                0,
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use super::half_to_f32;

    #[test]
    fn half_conversion_is_exact() {
        // 1.0, -2.0, 65504 (max), smallest subnormal 2^-24, 0.333 ≈ 0x3555.
        assert_eq!(half_to_f32(0x3c00), 1.0);
        assert_eq!(half_to_f32(0xc000), -2.0);
        assert_eq!(half_to_f32(0x7bff), 65504.0);
        assert_eq!(half_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(half_to_f32(0x3555), 0.333_251_95);
        assert!(half_to_f32(0x7c00).is_infinite());
    }
}
