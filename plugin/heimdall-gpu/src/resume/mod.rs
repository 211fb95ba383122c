//! Moving a run to the CPU between two steps: the GPU's live activations at a step boundary,
//! downloaded in the layout the CPU backend keeps them in, so that a [`CpuModel`] can run the
//! remaining ops instead of starting the inference again from op 0.
//!
//! At boundary `k` (ops `0..k` ran on the GPU, `k` from 0 to [`crate::GpuModel::num_steps`]) the CPU
//! backend needs every tensor that its ops `0..k` would have written and that its ops `k..`
//! read or the caller reads as a graph output (step 0: the graph inputs; step `n`: the
//! outputs). Its ops are the graph's as [`heimdall_cpu::cpu_ops`] rewires them, so the set
//! follows the CPU backend's own fusions. Each of those tensors must be in GPU memory at `k`
//! with the values ops `0..k` gave it:
//! - produced by a GPU op `< k` (or a graph input). The CPU fuses a reflect pad into the
//!   instance normalisation or separable resize before it, which then writes the padded
//!   tensor: between the two ops the CPU needs the pad's output, which the GPU, running the pad
//!   as an op of its own, has not written yet ([`NotResumable::NotProduced`]); likewise it fuses
//!   the per-channel `ADD` of a constant (and a `GELU` after it) into the convolution before it,
//!   which then writes the add's (the GELU's) output: not written by the GPU between them;
//! - not overwritten since: the GPU's slots are shared by tensors whose lifetimes do not
//!   overlap ([`crate::memory`]), and a tensor the GPU no longer reads is not kept. The CPU fuses
//!   a reflect pad that only convolutions read into them, which then read the pad's input: from
//!   the pad to the last of those convolutions the CPU needs that input, whose GPU slot is free
//!   once the pad has run ([`NotResumable::Overwritten`] where an op wrote over it before `k`;
//!   checked write by write against the memory plan of the current run). Likewise it fuses a
//!   large 1x1 expansion into the depthwise convolution after it, which then reads the
//!   expansion's input: between the two the CPU needs that input, not the expanded tensor. Tensors stored inside
//!   another tensor's slot (the slot aliases: reshapes that keep the bytes, inputs of free
//!   concatenations) are read at their offset, and are intact until a write to their byte range.
//!
//! Nothing else the GPU backend does leaves a live tensor unwritten: it fuses nothing across ops
//! beyond the IR's own passes (which every backend sees alike), a CPU step writes its outputs
//! into their slots, and the convolution cache keeps its ops' outputs in slots of their own for
//! the model's life (their values are the cached run's, as the GPU itself would read them).
//!
//! The download itself is one copy per tensor into a staging buffer, mapped like the outputs'
//! readback (nothing blocks): [`crate::GpuModel::resume`]`.encode_download` records it into the caller's
//! encoder after the steps before `k`; submit, [`ResumeDownload::request`], then
//! [`ResumeDownload::take`] once [`ResumeDownload::is_ready`]. The values come as NHWC `f32`,
//! what [`CpuModel::set_tensor`] takes ([`restore_cpu`] sets them all).

use heimdall_cpu::CpuModel;
use heimdall_ir::{Graph, Op, OpKind, TensorId};
use thiserror::Error;

use crate::aliases::SlotAliases;
use crate::error::GpuError;
use crate::memory::MemoryPlan;
use crate::plan::Placement;
use crate::readback::{IoTensor, Readback};

pub mod points;

/// Why a run cannot move to the CPU at a step boundary.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum NotResumable {
    /// The boundary is past the last step.
    #[error("step {step}: the model has {steps} steps (boundaries 0 to {steps})")]
    OutOfRange {
        /// The boundary asked for.
        step: usize,
        /// The model's number of steps.
        steps: usize,
    },
    /// The CPU needs a tensor that its own ops write before the boundary but the GPU writes
    /// after it (a reflect pad the CPU fuses into the op before it).
    #[error(
        "step {step}: the CPU needs tensor {} ({name}), which it writes in op {cpu_op} \
         ({cpu_op_name}) but the GPU writes in op {gpu_op} ({gpu_op_name}), not run before \
         step {step}",
        tensor.0
    )]
    NotProduced {
        /// The boundary.
        step: usize,
        /// The tensor.
        tensor: TensorId,
        /// Its name in the graph.
        name: String,
        /// The op that writes it on the CPU.
        cpu_op: usize,
        /// That op's name.
        cpu_op_name: &'static str,
        /// The op that writes it on the GPU (at or after `step`).
        gpu_op: usize,
        /// That op's name.
        gpu_op_name: &'static str,
    },
    /// The CPU needs a tensor that has no GPU memory.
    #[error("step {step}: the CPU needs tensor {} ({name}), which has no GPU memory", tensor.0)]
    NoStorage {
        /// The boundary.
        step: usize,
        /// The tensor.
        tensor: TensorId,
        /// Its name in the graph.
        name: String,
    },
    /// The CPU needs a tensor whose GPU memory another tensor took before the boundary (one
    /// the GPU no longer reads: the input of a reflect pad the CPU fuses into the convolutions
    /// after it).
    #[error(
        "step {step}: the CPU needs tensor {} ({name}), written by {}, but op {by_op} \
         ({by_op_name}) wrote tensor {} over it in its GPU slot before step {step}",
        tensor.0,
        writer(.op, .op_name),
        by_tensor.0
    )]
    Overwritten {
        /// The boundary.
        step: usize,
        /// The tensor.
        tensor: TensorId,
        /// Its name in the graph.
        name: String,
        /// The op that wrote it on the GPU (`None`: a graph input).
        op: Option<usize>,
        /// That op's name (empty for a graph input).
        op_name: &'static str,
        /// The op that wrote over it.
        by_op: usize,
        /// That op's name.
        by_op_name: &'static str,
        /// The tensor that op wrote there.
        by_tensor: TensorId,
    },
}

fn writer(op: &Option<usize>, name: &str) -> String {
    match op {
        Some(k) => format!("op {k} ({name})"),
        None => "the graph input".into(),
    }
}

/// What can go wrong downloading the state at a boundary or handing it to the CPU.
#[derive(Debug, Error)]
pub enum ResumeError {
    /// The boundary cannot be resumed from.
    #[error(transparent)]
    NotResumable(#[from] NotResumable),
    /// Recording, mapping or reading the download failed.
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// The CPU model refused a tensor ([`CpuModel::set_tensor`]: no storage for it, or a
    /// length that is not its shape's; a CPU model of another graph).
    #[error("the CPU model refused tensor {} ({len} values)", tensor.0)]
    CpuRefused {
        /// The tensor.
        tensor: TensorId,
        /// The number of values given.
        len: usize,
    },
}

/// One tensor to download at a boundary: its id and where it is on the GPU.
#[derive(Clone, Debug)]
struct Live {
    id: TensorId,
    at: IoTensor,
}

/// The boundaries of one memory plan: per boundary `0..=n`, what to download or why not.
pub(crate) struct ResumeTable {
    boundaries: Vec<Result<Vec<Live>, NotResumable>>,
}

/// What [`ResumeTable::new`] reads of a model being compiled.
pub(crate) struct ResumeSources<'a> {
    pub graph: &'a Graph,
    pub placement: &'a [Placement],
    pub aliases: &'a SlotAliases,
    /// The ops the CPU runs ([`heimdall_cpu::cpu_ops`]).
    pub cpu_ops: &'a [Op],
}

/// A write into a slot: at time `time` (op `time - 1`), tensor `tensor` over bytes `range`.
#[derive(Clone, Copy)]
struct SlotWrite {
    time: usize,
    tensor: TensorId,
    range: (u64, u64),
}

fn overlap(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < b.0 + b.1 && b.0 < a.0 + a.1
}

/// The CPU's view of a run: when it writes each tensor (0: a graph input, `k + 1`: op `k`), and
/// the last time it reads it (`n + 1` for the graph's outputs).
fn cpu_view(src: &ResumeSources) -> (Vec<Option<usize>>, Vec<usize>) {
    let graph = src.graph;
    let (n, nt) = (graph.ops.len(), graph.tensors.len());
    let mut cpu_write: Vec<Option<usize>> = vec![None; nt];
    let mut cpu_last = vec![0usize; nt];
    for &t in &graph.inputs {
        cpu_write[t.index()] = Some(0);
    }
    for (k, op) in src.cpu_ops.iter().enumerate() {
        for t in op.reads() {
            cpu_last[t.index()] = cpu_last[t.index()].max(k + 1);
        }
        for o in &op.outputs {
            cpu_write[o.index()].get_or_insert(k + 1);
        }
    }
    for &t in &graph.outputs {
        cpu_last[t.index()] = n + 1;
    }
    (cpu_write, cpu_last)
}

/// Every write into each slot of `mem` by the GPU's ops (free ops write nothing), in time
/// order; `range` gives a tensor's bytes in its slot.
fn slot_writes(
    src: &ResumeSources,
    mem: &MemoryPlan,
    range: impl Fn(usize) -> (u64, u64),
) -> Vec<Vec<SlotWrite>> {
    let mut writes: Vec<Vec<SlotWrite>> = vec![Vec::new(); mem.slot_bytes.len()];
    for (k, op) in src.graph.ops.iter().enumerate() {
        if src.placement[k] == Placement::Gpu && src.aliases.free[k] {
            continue;
        }
        for &o in &op.outputs {
            if let Some(s) = mem.slot_of[o.index()] {
                writes[s].push(SlotWrite {
                    time: k + 1,
                    tensor: o,
                    range: range(o.index()),
                });
            }
        }
    }
    writes
}

/// The tensors whose writes make up `t`'s bytes: through a free reshape its input's, through a
/// free concatenation its inputs'.
fn contents(src: &ResumeSources, producers: &[Option<usize>], t: TensorId) -> Vec<TensorId> {
    let mut out = Vec::new();
    let mut todo = vec![t];
    while let Some(t) = todo.pop() {
        match producers[t.index()] {
            Some(k) if src.aliases.free[k] && src.placement[k] == Placement::Gpu => {
                let op = &src.graph.ops[k];
                match op.kind {
                    OpKind::Reshape => todo.extend(op.inputs.first().copied()),
                    _ => todo.extend(op.inputs.iter().copied()),
                }
            }
            _ => out.push(t),
        }
    }
    out
}

impl ResumeTable {
    /// The table of the memory plan `mem`; `io` gives the GPU location of a tensor with a slot.
    /// Times as in [`crate::memory`]: 0 for the graph inputs, `k + 1` for op `k`; boundary `s`
    /// follows time `s`.
    pub fn new(
        src: &ResumeSources,
        mem: &MemoryPlan,
        io: impl Fn(TensorId) -> Result<IoTensor, GpuError>,
    ) -> Result<ResumeTable, GpuError> {
        let graph = src.graph;
        let (n, nt) = (graph.ops.len(), graph.tensors.len());
        let id = |i: usize| TensorId(i as u32);
        let (cpu_write, cpu_last) = cpu_view(src);
        // The GPU's view: who writes each tensor, and every write into each slot.
        let producers = graph.producers();
        let gpu_write = |t: usize| match producers[t] {
            Some(k) => Some(k + 1),
            None => graph.inputs.contains(&id(t)).then_some(0),
        };
        let mut located: Vec<Option<IoTensor>> = vec![None; nt];
        for (t, slot) in mem.slot_of.iter().enumerate() {
            if slot.is_some() {
                located[t] = Some(io(id(t))?);
            }
        }
        let range = |t: usize| {
            mem.view_of[t].unwrap_or((0, located[t].as_ref().map_or(0, IoTensor::bytes)))
        };
        let writes = slot_writes(src, mem, range);
        let contents = |t: TensorId| contents(src, &producers, t);
        let op_name = |k: usize| graph.ops[k].kind.name();
        let check = |step: usize, t: usize| -> Result<Live, NotResumable> {
            let tensor = id(t);
            let name = graph.tensors[t].name.clone();
            let gpu = gpu_write(t);
            if gpu.is_none_or(|w| w > step) {
                let cpu_op = cpu_write[t].map_or(0, |w| w.saturating_sub(1));
                return Err(match producers[t] {
                    Some(gpu_op) => NotResumable::NotProduced {
                        step,
                        tensor,
                        name,
                        cpu_op,
                        cpu_op_name: op_name(cpu_op),
                        gpu_op,
                        gpu_op_name: op_name(gpu_op),
                    },
                    None => NotResumable::NoStorage { step, tensor, name },
                });
            }
            let Some(at) = located[t].clone() else {
                return Err(NotResumable::NoStorage { step, tensor, name });
            };
            for c in contents(tensor) {
                let (Some(slot), Some(written)) = (mem.slot_of[c.index()], gpu_write(c.index()))
                else {
                    return Err(NotResumable::NoStorage { step, tensor, name });
                };
                let bytes = range(c.index());
                let over = writes[slot]
                    .iter()
                    .find(|w| w.time > written && w.time <= step && overlap(w.range, bytes));
                if let Some(w) = over {
                    return Err(NotResumable::Overwritten {
                        step,
                        tensor,
                        name,
                        op: producers[t],
                        op_name: producers[t].map_or("", op_name),
                        by_op: w.time - 1,
                        by_op_name: op_name(w.time - 1),
                        by_tensor: w.tensor,
                    });
                }
            }
            Ok(Live { id: tensor, at })
        };
        let boundaries = (0..=n)
            .map(|step| {
                (0..nt)
                    .filter(|&t| {
                        graph.tensors[t].constant.is_none()
                            && cpu_write[t].is_some_and(|w| w <= step)
                            && cpu_last[t] > step
                    })
                    .map(|t| check(step, t))
                    .collect()
            })
            .collect();
        Ok(ResumeTable { boundaries })
    }

    fn at(&self, step: usize) -> Result<&[Live], NotResumable> {
        match self.boundaries.get(step) {
            Some(Ok(live)) => Ok(live),
            Some(Err(e)) => Err(e.clone()),
            None => Err(NotResumable::OutOfRange {
                step,
                steps: self.boundaries.len().saturating_sub(1),
            }),
        }
    }
}

/// The download of the GPU's state at a boundary, recorded by
/// [`crate::GpuModel::resume`]`.encode_download`: submit the encoder, call [`ResumeDownload::request`],
/// then [`ResumeDownload::take`] once [`ResumeDownload::is_ready`] (the device must be polled,
/// as Bevy does every frame). Owns its staging buffers: it can be kept (and sent to another
/// thread) while the model runs on; dropping it frees them.
pub struct ResumeDownload {
    step: usize,
    live: Vec<Live>,
    /// The tensors of `live` with bytes to copy (an empty tensor has no staging buffer).
    staged: Vec<IoTensor>,
    readback: Readback,
}

impl std::fmt::Debug for ResumeDownload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResumeDownload")
            .field("step", &self.step)
            .field("tensors", &self.tensors())
            .finish()
    }
}

/// The CPU backend's state at a boundary: each tensor the CPU needs with its values (NHWC
/// `f32`, what [`CpuModel::set_tensor`] takes), in tensor order.
pub type ResumeState = Vec<(TensorId, Vec<f32>)>;

impl ResumeDownload {
    /// The boundary: the CPU runs ops `step..` next.
    pub fn step(&self) -> usize {
        self.step
    }

    /// The tensors downloaded, in the order [`ResumeDownload::take`] gives them.
    pub fn tensors(&self) -> Vec<TensorId> {
        self.live.iter().map(|l| l.id).collect()
    }

    /// Bytes copied from the GPU.
    pub fn bytes(&self) -> u64 {
        self.live.iter().map(|l| l.at.bytes()).sum()
    }

    /// Starts mapping the staging buffers (after the encoder holding the copies was
    /// submitted).
    pub fn request(&self) -> Result<(), GpuError> {
        self.readback.request()
    }

    /// Whether [`ResumeDownload::take`] has the values without waiting.
    pub fn is_ready(&self) -> bool {
        self.readback.is_ready()
    }

    /// The values if the download is complete (then again `None`), else `None`. Never blocks.
    pub fn take(&self) -> Result<Option<ResumeState>, GpuError> {
        let Some(values) = self.readback.take(&self.staged)? else {
            return Ok(None);
        };
        let mut values = values.into_iter();
        let state = (self.live.iter())
            .map(|l| match l.at.bytes() {
                0 => (l.id, Vec::new()),
                _ => (l.id, values.next().unwrap_or_default()),
            })
            .collect();
        Ok(Some(state))
    }
}

/// Sets every tensor of `state` in `cpu` (a model compiled from the same graph), which can then
/// run the remaining ops: `cpu.run_range(step..cpu.num_ops())`.
pub fn restore_cpu(cpu: &mut CpuModel, state: &[(TensorId, Vec<f32>)]) -> Result<(), ResumeError> {
    for (t, v) in state {
        cpu.set_tensor(*t, v).ok_or(ResumeError::CpuRefused {
            tensor: *t,
            len: v.len(),
        })?;
    }
    Ok(())
}
