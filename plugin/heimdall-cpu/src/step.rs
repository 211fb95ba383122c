//! What one op of a compiled model is: the [`Kernel`] its family prepares at compile time from
//! the op's compile-time view ([`PrepareCx`]), run on the op's run-time view ([`StepIo`]).
//! Each family of `crate::ops` implements the trait for its kernels; `crate::model` only
//! stores and runs them.

use heimdall_ir::shape::as_nhwc;
use heimdall_ir::{ConvAttrs, Graph, Op};

use crate::kernels::{Epilogue, Par, Tail, Window};

/// Where a tensor's values are.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Loc {
    /// `len` values of the arena from `offset`.
    Arena {
        /// First value.
        offset: usize,
        /// Number of values.
        len: usize,
    },
    /// Constant buffer `index` of the model.
    Const {
        /// Index into the model's constants.
        index: usize,
    },
}

/// One op prepared for the CPU (weights packed, geometry resolved): computes its output from
/// its inputs.
pub(crate) trait Kernel: Send + Sync {
    /// Writes the whole output.
    fn run(&self, io: StepIo<'_>);
}

/// A prepared kernel and the scratch space (f32 values) it needs.
pub(crate) struct Prepared {
    /// The kernel.
    pub kernel: Box<dyn Kernel>,
    /// Scratch values the kernel needs (shared by every step).
    pub scratch: usize,
    /// Whether the kernel computes in half precision ([`crate::CpuPrecision::F16`]).
    pub f16: bool,
}

impl Prepared {
    /// A kernel that needs no scratch.
    pub fn new(kernel: impl Kernel + 'static) -> Prepared {
        Prepared::with_scratch(kernel, 0)
    }

    /// A kernel that needs `scratch` values of scratch.
    pub fn with_scratch(kernel: impl Kernel + 'static, scratch: usize) -> Prepared {
        Prepared {
            kernel: Box::new(kernel),
            scratch,
            f16: false,
        }
    }
}

/// The arena of a running model as a raw pointer, so that a step can read its inputs while it
/// writes its output (the compile-time plan keeps them apart).
pub(crate) struct ArenaPtr(pub *mut f32, pub usize);

// SAFETY: the pointer is only used inside `CpuModel::run_range_timed` while the arena is
// mutably borrowed.
unsafe impl Send for ArenaPtr {}
// SAFETY: as above.
unsafe impl Sync for ArenaPtr {}

/// The inputs of a running step.
#[derive(Clone, Copy)]
pub(crate) struct Inputs<'a> {
    locs: &'a [Loc],
    arena: &'a ArenaPtr,
    constants: &'a [Vec<f32>],
}

impl<'a> Inputs<'a> {
    /// The inputs at `locs`.
    ///
    /// # Safety
    /// Every arena range in `locs` lies in the arena and does not overlap what the step writes
    /// while the inputs are in use (checked when the model is compiled).
    pub unsafe fn new(locs: &'a [Loc], arena: &'a ArenaPtr, constants: &'a [Vec<f32>]) -> Self {
        Inputs {
            locs,
            arena,
            constants,
        }
    }

    /// The values at `loc` (an input, or an epilogue operand).
    pub fn at(&self, loc: Loc) -> &'a [f32] {
        match loc {
            // SAFETY: within the arena and not overlapping the step's output (`new`'s contract).
            Loc::Arena { offset, len } => unsafe {
                std::slice::from_raw_parts(self.arena.0.add(offset), len)
            },
            Loc::Const { index } => &self.constants[index],
        }
    }

    /// The values of input `i`.
    pub fn get(&self, i: usize) -> &'a [f32] {
        self.at(self.locs[i])
    }

    /// Number of inputs.
    pub fn len(&self) -> usize {
        self.locs.len()
    }
}

/// What a kernel sees when it runs: its inputs, its output, the shared scratch, the thread
/// pool and the op's fused epilogue.
pub(crate) struct StepIo<'a> {
    /// The op's inputs.
    pub inputs: Inputs<'a>,
    /// The op's output.
    pub out: &'a mut [f32],
    /// Scratch space (at least what the kernel asked for).
    pub scratch: &'a mut [f32],
    /// The thread pool.
    pub par: &'a Par,
    /// The fused epilogue (identity unless the passes fused one).
    pub ep: &'a Epilogue<'a>,
}

/// The compile-time view of one op: its graph, shapes and constants.
pub(crate) struct PrepareCx<'a> {
    /// The graph.
    pub graph: &'a Graph,
    /// The op.
    pub op: &'a Op,
    /// Threads the model runs on ([`crate::kernels::Par::threads`]): per-thread scratch is
    /// planned for this many.
    pub threads: usize,
    /// `[top, left]` of a `PAD_REFLECT` fused into this convolution ([`crate::fuse`]): the op's
    /// input 0 is the pad's input, to be read mirrored at its edges; `None` for every other op.
    pub reflect_pad: Option<[usize; 2]>,
    /// `[[top, bottom], [left, right]]` of a `PAD_REFLECT` fused into this instance
    /// normalisation or resize ([`crate::fuse`]): the op's output is the pad's, the padded
    /// image; `None` for every other op.
    pub pad_output: Option<[[usize; 2]; 2]>,
    /// For an `ADD` reading a zero channel `PAD` fused into it ([`crate::fuse`]): which input
    /// is the pad's input, to be read as zero beyond its channels; `None` for every other op.
    pub channel_padded: Option<usize>,
    /// For a convolution or depthwise convolution the CPU fused the per-channel `ADD` (and
    /// `GELU`) after it into ([`crate::fuse_tail`]): what it applies after its products; the
    /// op writes the last fused op's output. `None` for every other op.
    pub tail: Option<Tail>,
    /// For a depthwise convolution that took over the 1x1 expansion before it
    /// ([`crate::fuse_expand`]): that op (as in the graph) and whether half-precision kernels
    /// are wanted for it; the op's input 0 is the expansion's input. `None` for every other op.
    pub expansion: Option<(&'a Op, bool)>,
    /// Whether half-precision kernels are wanted ([`crate::CpuPrecision::F16`]) where the CPU
    /// has them.
    pub f16: bool,
}

impl<'a> PrepareCx<'a> {
    /// The shape of input `i`.
    pub fn shape(&self, i: usize) -> Vec<usize> {
        self.graph.tensor(self.op.inputs[i]).shape.clone()
    }

    /// The shape of the (single) output.
    pub fn out_shape(&self) -> Vec<usize> {
        self.graph.tensor(self.op.outputs[0]).shape.clone()
    }

    /// The output's shape as four NHWC dimensions.
    pub fn out4(&self) -> [usize; 4] {
        as_nhwc(&self.out_shape())
    }

    /// The dense values of input `i`, which must be a constant.
    pub fn constant(&self, i: usize) -> Result<&'a [f32], String> {
        let t = self.graph.tensor(self.op.inputs[i]);
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
    }

    /// The optional constant input `i` (a bias), `None` when the op has no such input.
    pub fn bias(&self, i: usize) -> Result<Option<&'a [f32]>, String> {
        if self.op.inputs.len() > i {
            self.constant(i).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Whether an input beyond the first (weights, bias) is computed at run time (only when
    /// the load-time passes are off, e.g. fp16 weights still behind a `DEQUANTIZE`).
    pub fn weights_dynamic(&self) -> bool {
        self.op
            .inputs
            .iter()
            .skip(1)
            .any(|&t| self.graph.tensor(t).constant.is_none())
    }

    /// The window of a convolution-like op over input 0 with a `k` kernel and `a`'s strides,
    /// dilations and padding, producing the op's output.
    pub fn window(&self, k: [usize; 2], a: &ConvAttrs) -> Window {
        let x = self.shape(0);
        let out = self.out4();
        Window {
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
        }
    }
}
