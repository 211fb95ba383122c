//! The compiled CPU model: a prepared kernel per op (`crate::ops`), the planned arena, and
//! execution of any range of ops (Heimdall's `RunPartial`).

use std::ops::Range;
use std::time::{Duration, Instant};

use heimdall_ir::conv_cache::{CacheCounts, ConvCacheConfig};
use heimdall_ir::{Activation, Graph, Op, TensorId};

use crate::aligned::AlignedBuf;
use crate::arena::{ArenaPlan, plan_ops};
use crate::conv_cache::{ConvCache, OpAction, skeleton};
use crate::error::CpuError;
use crate::fuse::{FusedPad, ReflectPads};
use crate::fuse_expand::Expansions;
use crate::fuse_tail::Tails;
use crate::kernels::par::MAX_THREADS;
use crate::kernels::{Act, Epilogue, Par};
use crate::step::{ArenaPtr, Inputs, Kernel, Loc, PrepareCx, StepIo};

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

/// Arithmetic precision of the CPU backend's convolutions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CpuPrecision {
    /// f32 everywhere: the reference (the golden suite holds it to rel-L2 1e-4).
    #[default]
    F32,
    /// The convolutions' matrix products (CONV_2D, except those reading a fused reflect pad)
    /// in half precision, where the core has half-precision arithmetic (aarch64 FEAT_FP16:
    /// Cortex-A55, A75 and later); f32 everywhere else, and every other op in f32.
    /// Activations between ops stay f32. Held to the GPU's f16 bounds (floored rel-L2 1e-2
    /// on the TFLite goldens); [`CpuModel::f16_ops`] says how many ops it reached.
    F16,
}

/// The epilogue activation of a step.
enum EpAct {
    None,
    Unary(Act<'static>),
    Prelu(Loc),
}

struct Step {
    kernel: Box<dyn Kernel>,
    inputs: Vec<Loc>,
    output: Loc,
    residual: Option<Loc>,
    act: EpAct,
}

impl Step {
    /// The step of a reflect pad fused into the convolution after it: nothing to run.
    fn fused_pad() -> Step {
        Step {
            kernel: Box::new(FusedPad),
            inputs: Vec::new(),
            output: Loc::Arena { offset: 0, len: 0 },
            residual: None,
            act: EpAct::None,
        }
    }

    /// The step running `kernel` for op `index` (`op`): where its operands, output, residual
    /// and epilogue activation live in `locs`, checked to fit the CPU backend (one output in
    /// the arena, apart from every input).
    fn new(
        graph: &Graph,
        op: &Op,
        index: usize,
        locs: &[Option<Loc>],
        kernel: Box<dyn Kernel>,
    ) -> Result<Step, CpuError> {
        let err = |message: String| op_error(index, op, message);
        let loc = |t: TensorId| tensor_loc(locs, t, index, op);
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
        let act = EpAct::of(graph, op, index, locs)?;
        Ok(Step {
            kernel,
            inputs,
            output,
            residual,
            act,
        })
    }
}

impl EpAct {
    /// The epilogue activation of op `index` (`op`), a fused PReLU's alpha found in `locs`.
    fn of(graph: &Graph, op: &Op, index: usize, locs: &[Option<Loc>]) -> Result<EpAct, CpuError> {
        let err = |message: String| op_error(index, op, message);
        Ok(match op.epilogue.activation {
            Activation::None => EpAct::None,
            Activation::Unary(u) => EpAct::Unary(
                Act::of(u)
                    .ok_or_else(|| err(format!("{} cannot be a fused activation", u.name())))?,
            ),
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
                EpAct::Prelu(tensor_loc(locs, a, index, op)?)
            }
        })
    }
}

/// The error `message` about op `index` (`op`).
fn op_error(index: usize, op: &Op, message: String) -> CpuError {
    CpuError::Op {
        index,
        name: op.kind.name().into(),
        message,
    }
}

/// Where tensor `t` (an operand of op `index`, `op`) lives, or an error if it has no storage.
fn tensor_loc(locs: &[Option<Loc>], t: TensorId, index: usize, op: &Op) -> Result<Loc, CpuError> {
    locs[t.index()].ok_or_else(|| op_error(index, op, format!("tensor {} has no storage", t.0)))
}

/// The constants' values (in the order of their [`Loc::Const`] indices) and each tensor's
/// location: a constant, its offset in the arena `plan`, or none.
fn tensor_locs(graph: &Graph, plan: &ArenaPlan) -> (Vec<Vec<f32>>, Vec<Option<Loc>>) {
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
    (constants, locs)
}

/// The locations and shapes of the graph's inputs or outputs `ids` (`what` says which, for the
/// error if one has no storage).
fn io_locs(
    graph: &Graph,
    locs: &[Option<Loc>],
    ids: &[TensorId],
    what: &'static str,
) -> Result<Vec<(Loc, Vec<usize>)>, CpuError> {
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
}

/// A graph compiled for the CPU: weights packed, arena planned, ready to run any op range.
///
/// Intermediate tensors stay in the arena between calls, so running `0..k` then `k..n` gives
/// bit-for-bit the result of running `0..n`.
pub struct CpuModel {
    steps: Vec<Step>,
    names: Vec<&'static str>,
    constants: Vec<Vec<f32>>,
    arena: AlignedBuf,
    scratch: AlignedBuf,
    inputs: Vec<(Loc, Vec<usize>)>,
    outputs: Vec<(Loc, Vec<usize>)>,
    locs: Vec<Option<Loc>>,
    plan: ArenaPlan,
    par: Par,
    /// The graph without constant values, for [`CpuModel::enable_conv_cache`].
    skeleton: Graph,
    /// The reflect pads fused into the convolutions after them (`crate::fuse`).
    pads: ReflectPads,
    /// The adds and GELUs fused into the convolutions before them (`crate::fuse_tail`).
    tails: Tails,
    /// The 1x1 expansions fused into the depthwise convolutions after them
    /// (`crate::fuse_expand`).
    expansions: Expansions,
    conv_cache: Option<Box<ConvCache>>,
    /// Ops computing in half precision.
    f16_ops: usize,
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
    /// Compiles a validated graph: packs every weight, fuses the reflect pads before
    /// convolutions into them (`crate::fuse`), plans the arena, sizes scratch.
    pub fn compile(graph: &Graph, options: CpuOptions) -> Result<CpuModel, CpuError> {
        CpuModel::compile_with_precision(graph, options, CpuPrecision::F32)
    }

    /// [`CpuModel::compile`] with the convolutions in `precision` where the CPU supports it
    /// (see [`CpuPrecision`]).
    pub fn compile_with_precision(
        graph: &Graph,
        options: CpuOptions,
        precision: CpuPrecision,
    ) -> Result<CpuModel, CpuError> {
        CpuModel::compile_masked(graph, options, &|_| precision == CpuPrecision::F16)
    }

    /// [`CpuModel::compile`] with half-precision kernels wanted for the ops `f16(index)` says
    /// (where the CPU has them): [`CpuPrecision::F16`] with some ops kept in f32, as the
    /// accuracy guard decides ([`crate::guard`]).
    pub(crate) fn compile_masked(
        graph: &Graph,
        options: CpuOptions,
        f16: &dyn Fn(usize) -> bool,
    ) -> Result<CpuModel, CpuError> {
        let par = Par::new(options.threads.clamp(1, MAX_THREADS));
        let pads = ReflectPads::find(graph);
        let tails = Tails::find(graph, &pads);
        let expansions = Expansions::find(graph, &pads, &tails);
        let ops: Vec<_> = (graph.ops.iter().enumerate())
            .map(|(k, op)| expansions.op(k, tails.op(k, pads.op(k, op)), graph))
            .collect();
        let plan = plan_ops(graph, &ops);
        let (constants, locs) = tensor_locs(graph, &plan);
        let mut steps = Vec::with_capacity(graph.ops.len());
        let mut scratch_len = 0;
        let mut f16_ops = 0;
        for (index, op) in ops.iter().enumerate() {
            if pads.is_fused(index) || tails.is_fused(index) || expansions.is_fused(index) {
                steps.push(Step::fused_pad());
                continue;
            }
            let prepared = crate::ops::prepare(&PrepareCx {
                graph,
                op,
                threads: par.threads(),
                reflect_pad: pads.source(index).map(|(_, p)| p),
                pad_output: pads.padded_output(index).map(|(_, p)| p),
                channel_padded: pads.channel_padded(index),
                tail: tails.tail(index, graph),
                expansion: (expansions.expansion(index)).map(|e| (&graph.ops[e], f16(e))),
                f16: f16(index),
            })
            .map_err(|message| op_error(index, op, message))?;
            f16_ops += usize::from(prepared.f16);
            scratch_len = scratch_len.max(prepared.scratch);
            steps.push(Step::new(graph, op, index, &locs, prepared.kernel)?);
        }
        Ok(CpuModel {
            names: graph.ops.iter().map(|o| o.kind.name()).collect(),
            steps,
            constants,
            arena: AlignedBuf::zeroed(plan.len),
            scratch: AlignedBuf::zeroed(scratch_len),
            inputs: io_locs(graph, &locs, &graph.inputs, "input")?,
            outputs: io_locs(graph, &locs, &graph.outputs, "output")?,
            locs,
            plan,
            par,
            skeleton: skeleton(graph),
            pads,
            tails,
            expansions,
            conv_cache: None,
            f16_ops,
        })
    }

    /// How many ops compute in half precision ([`CpuPrecision::F16`] on a core with
    /// half-precision arithmetic; 0 otherwise).
    pub fn f16_ops(&self) -> usize {
        self.f16_ops
    }

    /// How the model's thread pool ran its split ops since the model was compiled (zeros on
    /// one thread); compare two reads with [`crate::PoolCounters::since`].
    pub fn pool_counters(&self) -> crate::PoolCounters {
        self.par.counters()
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

    /// Where input `index` lives and its shape.
    fn input_slot(&self, index: usize) -> Result<(Loc, &Vec<usize>), CpuError> {
        let count = self.inputs.len();
        let (loc, shape) = self.inputs.get(index).ok_or(CpuError::NoSuchTensor {
            what: "input",
            index,
            count,
        })?;
        Ok((*loc, shape))
    }

    /// Copies `data` into input `index`; its length must match the input's shape.
    pub fn set_input(&mut self, index: usize, data: &[f32]) -> Result<(), CpuError> {
        let (loc, shape) = self.input_slot(index)?;
        match loc {
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

    /// Writes input `index` in place, split over the model's threads: its values are rows of
    /// `row_len` (an image input's `W × C`), and `f(rows, values)` fills the `values` of
    /// `rows`, concurrently for disjoint ranges. For an input computed from another buffer (a
    /// camera frame resampled into it) without a copy and on every thread. An error when the
    /// input does not exist or `row_len` does not divide it.
    pub fn fill_input<F>(&mut self, index: usize, row_len: usize, f: F) -> Result<(), CpuError>
    where
        F: Fn(std::ops::Range<usize>, &mut [f32]) + Sync,
    {
        let (loc, shape) = self.input_slot(index)?;
        match loc {
            Loc::Arena { offset, len } if row_len > 0 && len % row_len == 0 => {
                // Rows enough to be worth a part: about 16 KiB of values each.
                let min_rows = (4096 / row_len).max(1);
                self.par
                    .for_rows(&mut self.arena[offset..offset + len], row_len, min_rows, f);
                Ok(())
            }
            _ => Err(CpuError::InputRows {
                index,
                expected: shape.clone(),
                row_len,
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
    /// been reused yet), for debugging and per-op comparisons; `None` for a tensor inside a
    /// fusion of the CPU backend, which is never stored (the output of a reflect pad fused into
    /// the convolutions after it, of a convolution whose add or GELU it applies, of a 1x1
    /// expansion fused into the depthwise convolution after it: [`crate::cpu_ops()`]). A caller
    /// that reads every activation makes them graph outputs, which are never fused.
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

    /// Turns on the convolution cache (DeepMon; see `heimdall_ir::conv_cache`): from now on
    /// a run starting at op 0 compares input 0's block histograms with the last recomputed
    /// ones, and every cacheable op recomputes only the output pixels whose receptive field
    /// touches a changed block, keeping last run's values elsewhere. The first run computes
    /// everything. Errors: a config `validate` rejects ([`CpuError::CacheConfig`]), a model
    /// whose first input is not an image `[1, H, W, C ≤ 4]` ([`CpuError::CacheInput`]).
    pub fn enable_conv_cache(&mut self, config: ConvCacheConfig) -> Result<(), CpuError> {
        let mut cache = ConvCache::new(&self.skeleton, config)?;
        // A fused pad, add, GELU or expansion writes nothing, and an op writing a fused pad's
        // or tail's output writes it, not its own: both run uncached (the convolutions reading
        // them stay cached). A depthwise convolution that took an expansion over stays cached:
        // a 1x1 convolution does not widen a field, so the pair's field is the depthwise
        // convolution's, and its pixels are recomputed where that is dirty.
        (0..self.steps.len())
            .filter(|&k| {
                self.pads.is_fused(k)
                    || self.expansions.is_fused(k)
                    || self.pads.padded_output(k).is_some()
                    || self.tails.is_fused(k)
                    || self.tails.takes(k)
            })
            .for_each(|k| cache.forget_op(k));
        self.conv_cache = Some(Box::new(cache));
        Ok(())
    }

    /// Turns the convolution cache off and frees what it kept: runs compute every op whole.
    pub fn disable_conv_cache(&mut self) {
        self.conv_cache = None;
    }

    /// Makes the next run recompute everything (a new crop or region of interest); nothing
    /// when the cache is off.
    pub fn invalidate_conv_cache(&mut self) {
        if let Some(c) = &mut self.conv_cache {
            c.invalidate();
        }
    }

    /// The convolution cache's counts of the last run (from op 0 to the last op run since),
    /// `None` when the cache is off.
    pub fn conv_cache_counts(&self) -> Option<CacheCounts> {
        self.conv_cache.as_ref().map(|c| c.counts())
    }

    /// Fixes the convolution cache's clock to `now_ms` for the next runs (for tests and
    /// replays); `None` goes back to the milliseconds since the cache was enabled. Nothing
    /// when the cache is off.
    pub fn set_conv_cache_now_ms(&mut self, now_ms: Option<u32>) {
        if let Some(c) = &mut self.conv_cache {
            c.set_now_ms(now_ms);
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
            inputs,
            conv_cache,
            ..
        } = self;
        let mut cache = conv_cache.as_deref_mut();
        if let Some(c) = cache.as_deref_mut()
            && range.start == 0
            && range.end > 0
            && let Loc::Arena { offset, len } = inputs[0].0
        {
            c.begin(&arena[offset..offset + len]);
        }
        let arena_ptr = ArenaPtr(arena.as_mut_ptr(), arena.len());
        let (steps, constants, scratch, par) = (&*steps, &*constants, scratch, &*par);
        par.install(move || {
            let mut times = times;
            for i in range {
                let start = Instant::now();
                let action = cache
                    .as_deref_mut()
                    .map_or(OpAction::Uncached, |c| c.before_op(i));
                if action != OpAction::Skip {
                    // SAFETY: `compile` checked that no input or residual of a step overlaps its
                    // output, constants live outside the arena, and this closure is the arena's
                    // only user while it runs (`self` is borrowed mutably).
                    unsafe { run_step(&steps[i], &arena_ptr, constants, scratch, par) };
                }
                if let (Some(c), false) = (cache.as_deref_mut(), action == OpAction::Uncached) {
                    // SAFETY: as above; no kernel runs while the cache merges.
                    c.after_op(i, unsafe { output_of(&steps[i], &arena_ptr) });
                }
                if let Some(t) = times.as_deref_mut() {
                    t[i] = start.elapsed();
                }
            }
        });
        Ok(())
    }
}

/// The output of a step in the arena.
///
/// # Safety
/// The arena must outlive `'a`, and nothing else may access the step's output range while the
/// slice lives.
unsafe fn output_of<'a>(step: &Step, arena: &ArenaPtr) -> &'a mut [f32] {
    let Loc::Arena { offset, len } = step.output else {
        unreachable!("checked at compile")
    };
    debug_assert!(offset + len <= arena.1);
    // SAFETY: within the arena (planned); exclusive by the caller's contract.
    unsafe { std::slice::from_raw_parts_mut(arena.0.add(offset), len) }
}

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
    // SAFETY: the caller's contract is `Inputs::new`'s.
    let inputs = unsafe { Inputs::new(&step.inputs, arena, constants) };
    // SAFETY: not overlapping any input (caller's contract).
    let out = unsafe { output_of(step, arena) };
    let act = match step.act {
        EpAct::None => Act::None,
        EpAct::Unary(a) => a,
        EpAct::Prelu(l) => Act::Prelu(inputs.at(l)),
    };
    let ep = Epilogue {
        residual: step.residual.map(|l| inputs.at(l)),
        act,
    };
    step.kernel.run(StepIo {
        inputs,
        out,
        scratch,
        par,
        ep: &ep,
    });
}
