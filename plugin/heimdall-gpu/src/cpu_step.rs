//! CPU steps: ops with no GPU kernel (see [`crate::plan::Placement::Cpu`]; no op of the supported
//! models: the MediaPipe custom ops have GPU kernels too) run on the CPU
//! backend, with explicit transfers: their inputs are copied from the GPU slots into staging
//! buffers and mapped (download), the op runs as a one-op [`CpuModel`], and its
//! output is written back to its GPU slot with `queue.write_buffer` (upload, visible to the next
//! submission).

use std::sync::Mutex;

use heimdall_cpu::{CpuModel, CpuOptions};
use heimdall_ir::{Graph, Op, TensorId, TensorInfo};

use crate::error::GpuError;
use crate::readback::{IoTensor, Readback};

/// One op of the graph compiled for the CPU, with its transfers.
pub(crate) struct CpuStep {
    model: Mutex<CpuModel>,
    inputs: Vec<IoTensor>,
    outputs: Vec<IoTensor>,
    download: Readback,
}

/// The graph of op `index` alone: its non-constant reads become graph inputs, its outputs graph
/// outputs, constants are kept.
fn one_op_graph(graph: &Graph, index: usize) -> (Graph, Vec<TensorId>) {
    let op = &graph.ops[index];
    let mut tensors: Vec<TensorInfo> = Vec::new();
    let mut map: Vec<(TensorId, TensorId)> = Vec::new();
    let mut id = |t: TensorId, tensors: &mut Vec<TensorInfo>| -> TensorId {
        if let Some(&(_, new)) = map.iter().find(|(old, _)| *old == t) {
            return new;
        }
        tensors.push(graph.tensor(t).clone());
        let new = TensorId(tensors.len() as u32 - 1);
        map.push((t, new));
        new
    };
    let mut inputs = Vec::new();
    let mut outer_inputs = Vec::new();
    for t in op.reads() {
        let new = id(t, &mut tensors);
        if graph.tensor(t).constant.is_none() && !inputs.contains(&new) {
            inputs.push(new);
            outer_inputs.push(t);
        }
    }
    let mut sub = Op::new(
        op.kind.clone(),
        op.inputs.iter().map(|&t| id(t, &mut tensors)).collect(),
        op.outputs.iter().map(|&t| id(t, &mut tensors)).collect(),
    );
    sub.epilogue = op.epilogue;
    if let Some(r) = op.epilogue.residual {
        sub.epilogue.residual = Some(id(r, &mut tensors));
    }
    if let heimdall_ir::Activation::Prelu(a) = op.epilogue.activation {
        sub.epilogue.activation = heimdall_ir::Activation::Prelu(id(a, &mut tensors));
    }
    let outputs = sub.outputs.clone();
    let g = Graph {
        name: format!("{} op {index}", graph.name),
        tensors,
        ops: vec![sub],
        inputs,
        outputs,
    };
    (g, outer_inputs)
}

impl CpuStep {
    /// Compiles op `index` for the CPU; `io` gives the GPU location of a tensor.
    pub fn new(
        device: &wgpu::Device,
        graph: &Graph,
        index: usize,
        io: impl Fn(TensorId) -> Result<IoTensor, GpuError>,
    ) -> Result<CpuStep, GpuError> {
        let (sub, outer_inputs) = one_op_graph(graph, index);
        let err = |message: String| GpuError::Op {
            index,
            name: graph.ops[index].kind.name().into(),
            message,
        };
        let model = CpuModel::compile(&sub, CpuOptions { threads: 1 })
            .map_err(|e| err(format!("as a CPU step: {e}")))?;
        let inputs = outer_inputs
            .iter()
            .map(|&t| io(t))
            .collect::<Result<Vec<_>, _>>()?;
        let outputs = graph.ops[index]
            .outputs
            .iter()
            .map(|&t| io(t))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(CpuStep {
            model: Mutex::new(model),
            download: Readback::new(device, &inputs, &[], None),
            inputs,
            outputs,
        })
    }

    /// Records the copies of the step's inputs into its staging buffers.
    pub fn encode_download(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        slots: &[wgpu::Buffer],
    ) -> Result<(), GpuError> {
        let sources: Vec<(&wgpu::Buffer, u64)> = (self.inputs.iter())
            .map(|t| (&slots[t.slot], t.offset))
            .collect();
        self.download.encode(encoder, &sources, None)
    }

    /// Starts mapping the staging buffers (after the copies were submitted).
    pub fn request_download(&self) -> Result<(), GpuError> {
        self.download.request()
    }

    /// Whether the inputs are on the host.
    pub fn is_ready(&self) -> bool {
        self.download.is_ready()
    }

    /// Runs the op on the CPU and uploads its output; `false` if the inputs are not ready yet.
    pub fn run(&self, queue: &wgpu::Queue, slots: &[wgpu::Buffer]) -> Result<bool, GpuError> {
        let Some(values) = self.download.take(&self.inputs)? else {
            return Ok(false);
        };
        let mut model = self.model.lock().unwrap_or_else(|e| e.into_inner());
        let cpu = |e: heimdall_cpu::CpuError| GpuError::Unsupported(format!("CPU step: {e}"));
        for (i, v) in values.iter().enumerate() {
            model.set_input(i, v).map_err(cpu)?;
        }
        model.run().map_err(cpu)?;
        for (i, o) in self.outputs.iter().enumerate() {
            let out = model.output(i).map_err(cpu)?;
            queue.write_buffer(&slots[o.slot], 0, &o.precision.encode(&o.geom.pack(out)));
        }
        Ok(true)
    }
}

/// The CPU steps of a compiled model's current run, as
/// [`GpuModel::cpu_steps`](crate::GpuModel::cpu_steps) returns them: download a step's inputs,
/// run it on this thread, upload its outputs, without blocking on the GPU.
pub struct CpuSteps<'a> {
    pub(crate) steps: &'a [Option<CpuStep>],
    pub(crate) slots: &'a [wgpu::Buffer],
    pub(crate) queue: &'a wgpu::Queue,
}

impl CpuSteps<'_> {
    fn step(&self, step: usize) -> Result<&CpuStep, GpuError> {
        self.steps
            .get(step)
            .and_then(Option::as_ref)
            .ok_or_else(|| GpuError::Range {
                start: step,
                end: step + 1,
                message: "not a CPU step".into(),
            })
    }

    /// Records the download of CPU step `step`'s inputs (GPU slots to staging buffers). Submit
    /// the encoder after the GPU steps before it, then call [`CpuSteps::request_inputs`].
    pub fn encode_inputs(
        &self,
        step: usize,
        encoder: &mut wgpu::CommandEncoder,
    ) -> Result<(), GpuError> {
        self.step(step)?.encode_download(encoder, self.slots)
    }

    /// Starts mapping CPU step `step`'s downloaded inputs (after the copies were submitted).
    pub fn request_inputs(&self, step: usize) -> Result<(), GpuError> {
        self.step(step)?.request_download()
    }

    /// Whether CPU step `step` can run without waiting.
    pub fn is_ready(&self, step: usize) -> bool {
        self.step(step).is_ok_and(CpuStep::is_ready)
    }

    /// Runs CPU step `step` on this thread and uploads its output (visible to the next
    /// submission); `Ok(false)` if its inputs have not arrived yet. Never blocks on the GPU.
    pub fn run(&self, step: usize) -> Result<bool, GpuError> {
        self.step(step)?.run(self.queue, self.slots)
    }
}
