//! The compiled GPU model: buffers planned once, weights uploaded once, every pipeline and bind
//! group created at compile time; [`GpuModel::encode`] records any contiguous range of steps into
//! a caller's command encoder.

use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::context::GpuContext;
use crate::conv_cache::ConvCache;
use crate::conv_cache::control::ConvCacheControl;
use crate::cpu_step::{CpuStep, CpuSteps};
use crate::error::GpuError;
use crate::io_pack::{DenseInputs, DenseOutputs};
use crate::layout::Phwc4;
use crate::options::CompileReport;
use crate::plan::Placement;
use crate::precision::Precision;
use crate::readback::{IoTensor, Readback};
use crate::resources::EncodedDispatch;
use crate::resume::ResumeTable;
use crate::resume::points::ResumePoints;

/// A model input's slot (where the preprocessing writes) or output's (what `tensor_to_rgba`
/// reads): its buffer, geometry and precision.
pub(crate) struct InputTarget {
    pub buffer: wgpu::Buffer,
    pub bytes: u64,
    pub geom: Phwc4,
    pub precision: Precision,
}

/// One memory plan's resources: its activation slots, every dispatch bound to them, where the
/// inputs and outputs live in them, and the CPU steps' transfers.
pub(crate) struct Bound {
    pub(crate) steps: Vec<Vec<EncodedDispatch>>,
    pub(crate) slots: Vec<wgpu::Buffer>,
    pub(crate) inputs: Vec<IoTensor>,
    pub(crate) outputs: Vec<IoTensor>,
    pub(crate) cpu_steps: Vec<Option<CpuStep>>,
    /// What a CPU run resuming at each step boundary downloads ([`crate::resume`]).
    pub(crate) resume: ResumeTable,
}

/// A graph compiled for a [`GpuContext`].
pub struct GpuModel {
    pub(crate) ctx: GpuContext,
    pub(crate) names: Vec<&'static str>,
    pub(crate) placement: Vec<Placement>,
    pub(crate) pipelines: Vec<wgpu::ComputePipeline>,
    pub(crate) _consts: Vec<wgpu::Buffer>,
    pub(crate) _uniforms: wgpu::Buffer,
    /// `[0]`: the plan the model was compiled with (with the convolution cache: its outputs in
    /// slots of their own). `[1]`, with a cache only: the plain plan the model runs while the
    /// cache is off, so that an idle cache costs no time. Both share the input and output buffers.
    pub(crate) bound: Vec<Bound>,
    /// The index in `bound` of the plan the current run uses (chosen as a run starts).
    pub(crate) current: AtomicUsize,
    /// The inputs' dense buffers and packing kernels ([`crate::io_pack`]).
    pub(crate) dense_inputs: DenseInputs,
    /// The outputs' unpacking kernels.
    pub(crate) dense_outputs: DenseOutputs,
    pub(crate) readback: Readback,
    /// Host memory the inputs are packed into before `write_buffer` (kept: no allocation and no
    /// page faults per run).
    pub(crate) upload: Mutex<Vec<u32>>,
    pub(crate) report: CompileReport,
    pub(crate) cache: Option<wgpu::PipelineCache>,
    pub(crate) conv_cache: Option<ConvCache>,
    pub(crate) first_gpu_step: usize,
}

impl std::fmt::Debug for GpuModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuModel")
            .field("steps", &self.num_steps())
            .field("report", &self.report)
            .finish()
    }
}

impl GpuModel {
    /// The plan of the current run.
    fn plan(&self) -> &Bound {
        let i = self.current.load(Ordering::Relaxed);
        &self.bound[i.min(self.bound.len() - 1)]
    }

    /// The plan the model was compiled with (its input and output buffers are every plan's).
    fn first_plan(&self) -> &Bound {
        &self.bound[0]
    }

    /// Number of steps (one per op of the graph, in graph order).
    pub fn num_steps(&self) -> usize {
        self.names.len()
    }

    /// Where each step runs.
    pub fn placement(&self) -> &[Placement] {
        &self.placement
    }

    /// The op name of step `i` (empty if out of range).
    pub fn step_name(&self, i: usize) -> &'static str {
        self.names.get(i).copied().unwrap_or("")
    }

    /// What compilation produced and cost.
    pub fn report(&self) -> &CompileReport {
        &self.report
    }

    /// The pipeline cache the model's pipelines were created through, if any (for pipelines
    /// created later for the same model, e.g. preprocessing).
    pub(crate) fn pipeline_cache(&self) -> Option<&wgpu::PipelineCache> {
        self.cache.as_ref()
    }

    /// The slot, geometry and precision of input `index` (what preprocessing writes).
    pub(crate) fn input_target(&self, index: usize) -> Result<InputTarget, GpuError> {
        let plan = self.first_plan();
        let input = plan.inputs.get(index).ok_or(GpuError::Input {
            index,
            expected: 0,
            got: 0,
        })?;
        Ok(InputTarget {
            buffer: plan.slots[input.slot].clone(),
            bytes: input.bytes(),
            geom: input.geom,
            precision: input.precision,
        })
    }

    /// Output `index`'s slot, for kernels that read it in place (`tensor_to_rgba`).
    pub(crate) fn output_target(&self, index: usize) -> Result<InputTarget, GpuError> {
        let plan = self.first_plan();
        let output = plan
            .outputs
            .get(index)
            .ok_or(GpuError::Unsupported(format!(
                "the model has {} outputs, not {}",
                plan.outputs.len(),
                index + 1
            )))?;
        Ok(InputTarget {
            buffer: plan.slots[output.slot].clone(),
            bytes: output.bytes(),
            geom: output.geom,
            precision: output.precision,
        })
    }

    /// The context the model was compiled for.
    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    /// Shapes of the model's inputs.
    pub fn input_shapes(&self) -> Vec<Vec<usize>> {
        let plan = self.first_plan();
        plan.inputs.iter().map(|t| t.shape.clone()).collect()
    }

    /// Shapes of the model's outputs.
    pub fn output_shapes(&self) -> Vec<Vec<usize>> {
        let plan = self.first_plan();
        plan.outputs.iter().map(|t| t.shape.clone()).collect()
    }

    /// Uploads input `index` (NHWC f32): as it is to its dense buffer, then packed into its
    /// PHWC4 slot in its precision by a kernel submitted at once (inputs already dense in
    /// their slot are written there directly); visible to everything submitted afterwards.
    pub fn set_input(&self, index: usize, data: &[f32]) -> Result<(), GpuError> {
        if self.write_input(index, data)? {
            // Packed at once, in a submission of its own, so that whatever writes the input's
            // slot next (a preprocessing kernel) comes after it, as the calls came.
            let mut encoder =
                self.ctx
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("heimdall pack input"),
                    });
            self.encode_staged_inputs(&mut encoder);
            self.ctx.queue.submit([encoder.finish()]);
        }
        Ok(())
    }

    /// Checks and writes input `index`: to its dense buffer, staged for packing by the next
    /// [`GpuModel::encode_staged_inputs`], which the caller must encode before anything reads
    /// the input (`true`); or, for an input with no packing kernel, into its slot (`false`).
    pub(crate) fn write_input(&self, index: usize, data: &[f32]) -> Result<bool, GpuError> {
        let plan = self.first_plan();
        let input = plan.inputs.get(index).ok_or(GpuError::Input {
            index,
            expected: 0,
            got: data.len(),
        })?;
        let n: usize = input.shape.iter().product();
        if data.len() != n {
            return Err(GpuError::Input {
                index,
                expected: n,
                got: data.len(),
            });
        }
        if let Some(dense) = self.dense_inputs.buffer(index) {
            self.ctx
                .queue
                .write_buffer(dense, 0, bytemuck::cast_slice(data));
            self.dense_inputs.mark_written(index);
            return Ok(true);
        }
        let mut scratch = self.upload.lock().unwrap_or_else(|e| e.into_inner());
        let bytes = input
            .precision
            .encode_packed(&input.geom, data, &mut scratch);
        self.ctx
            .queue
            .write_buffer(&plan.slots[input.slot], 0, bytes);
        Ok(false)
    }

    /// Records the packing of the inputs staged since the last packing.
    pub(crate) fn encode_staged_inputs(&self, encoder: &mut wgpu::CommandEncoder) {
        self.dense_inputs.encode_pending(encoder);
    }

    /// Records steps `steps` (a contiguous range of GPU steps) into `encoder` as one compute
    /// pass, with no other side effect (a range holding a CPU step is refused: run it with
    /// [`CpuSteps::run`] between two ranges). Running a model as any sequence of ranges gives
    /// bit-identical results to one whole run.
    pub fn encode(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        steps: Range<usize>,
    ) -> Result<(), GpuError> {
        if steps.start > steps.end || steps.end > self.num_steps() {
            return Err(GpuError::Range {
                start: steps.start,
                end: steps.end,
                message: format!("the model has {} steps", self.num_steps()),
            });
        }
        if let Some(i) = steps.clone().find(|&i| self.placement[i] != Placement::Gpu) {
            return Err(GpuError::Range {
                start: steps.start,
                end: steps.end,
                message: format!("step {i} runs on the CPU"),
            });
        }
        if steps.is_empty() {
            return Ok(());
        }
        let cache = self.cache_starting_in(&steps);
        if let Some(c) = cache {
            c.begin_run(&self.ctx.queue, encoder);
        }
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("heimdall steps"),
            timestamp_writes: None,
        });
        if let Some(c) = cache {
            c.record(&mut pass);
        }
        for i in steps {
            self.record_step(&mut pass, i);
        }
        Ok(())
    }

    /// The convolution cache, when `steps` holds the model's first GPU step: a run starts there,
    /// and the cache decides what to skip before it.
    pub(crate) fn cache_starting_in(&self, steps: &Range<usize>) -> Option<&ConvCache> {
        let c = self.conv_cache.as_ref()?;
        if !steps.contains(&self.first_gpu_step) {
            return None;
        }
        c.run_starts();
        let active = c.is_active();
        // The plain plan while the cache is off; the cached one (its kept values stale after
        // plain runs: switching on invalidates them) while it is on.
        if self.bound.len() > 1 {
            self.current.store(usize::from(!active), Ordering::Relaxed);
        }
        active.then_some(c)
    }

    /// The convolution cache, if it is on and active.
    fn active_cache(&self) -> Option<&ConvCache> {
        self.conv_cache.as_ref().filter(|c| c.is_active())
    }

    /// Switches the convolution cache on or off at run time (off: from the next run on, every op
    /// runs whole through its plain kernel on the plain memory plan, as without the cache; the
    /// cache's memory stays). Switching it on again starts with a full run. Does nothing when
    /// the model has no cache.
    pub fn set_conv_cache_active(&self, active: bool) {
        if let Some(c) = &self.conv_cache {
            if active && !c.is_active() {
                c.invalidate();
            }
            c.set_active(active);
        }
    }

    /// Whether the model has a convolution cache and it is active.
    pub fn conv_cache_active(&self) -> bool {
        self.active_cache().is_some()
    }

    /// Records the dispatches of GPU step `i` into a compute pass.
    pub(crate) fn record_step(&self, pass: &mut wgpu::ComputePass<'_>, i: usize) {
        for d in &self.plan().steps[i] {
            if d.groups[0] == 0 {
                continue;
            }
            match (&d.listed, self.active_cache()) {
                (Some(x), Some(c)) => {
                    pass.set_pipeline(&self.pipelines[x.pipeline]);
                    pass.set_bind_group(0, &x.bind_group, &[]);
                    pass.set_bind_group(1, &x.list, &[]);
                    if c.indirect {
                        pass.dispatch_workgroups_indirect(&c.args, x.args_offset);
                    } else {
                        pass.dispatch_workgroups(d.groups[0], d.groups[1], 1);
                    }
                }
                _ => {
                    pass.set_pipeline(&self.pipelines[d.pipeline]);
                    pass.set_bind_group(0, &d.bind_group, &[]);
                    pass.dispatch_workgroups(d.groups[0], d.groups[1], 1);
                }
            }
        }
    }

    /// Records copies of every output into its staging buffer. Submit the encoder, then call
    /// [`GpuModel::request_readback`].
    pub fn encode_readback(&self, encoder: &mut wgpu::CommandEncoder) -> Result<(), GpuError> {
        let plan = self.plan();
        self.dense_outputs.encode(encoder);
        let sources: Vec<(&wgpu::Buffer, u64)> = (plan.outputs.iter().enumerate())
            .map(|(i, o)| self.dense_outputs.source(i, o, &plan.slots))
            .collect();
        self.readback.encode(
            encoder,
            &sources,
            self.conv_cache.as_ref().map(|c| &c.counters),
        )
    }

    /// The convolution cache's counts for the last run whose outputs were taken (`None` when
    /// the cache is off or inactive, or no run finished yet).
    pub fn conv_cache_counts(&self) -> Option<heimdall_ir::conv_cache::CacheCounts> {
        let c = self.active_cache()?;
        Some(c.counts(&self.readback.extra_values()?))
    }

    /// The convolution cache, if the model has one (on or off): its settings, the automatic
    /// switch, what [`GpuModel::calibrate_conv_cache`] measured, its dispatches.
    pub fn conv_cache(&self) -> Option<ConvCacheControl<'_>> {
        (self.conv_cache.as_ref()).map(|cache| ConvCacheControl { cache })
    }

    /// The cache itself, for the crate's profiles and calibrations.
    pub(crate) fn conv_cache_handle(&self) -> Option<&ConvCache> {
        self.conv_cache.as_ref()
    }

    /// Makes the next run recompute everything (call when the input's crop, region of interest
    /// or meaning changes). Does nothing when the cache is off.
    pub fn invalidate_conv_cache(&self) {
        if let Some(c) = &self.conv_cache {
            c.invalidate();
        }
    }

    /// Starts mapping the staging buffers (after the readback copies were submitted).
    pub fn request_readback(&self) -> Result<(), GpuError> {
        self.readback.request()
    }

    /// Whether the requested outputs can be taken without waiting.
    pub fn readback_ready(&self) -> bool {
        self.readback.is_ready()
    }

    /// The outputs (NHWC f32, in the model's output order) if the readback is complete, else
    /// `None`. Never blocks.
    pub fn take_outputs(&self) -> Result<Option<Vec<Vec<f32>>>, GpuError> {
        let taken = self.readback.take(&self.plan().outputs)?;
        if taken.is_some()
            && let (Some(c), Some(counts)) = (self.active_cache(), self.conv_cache_counts())
        {
            c.observe(&counts);
        }
        Ok(taken)
    }

    /// The CPU steps of the current run ([`CpuSteps`]): download a step's inputs, run it,
    /// upload its outputs.
    pub fn cpu_steps(&self) -> CpuSteps<'_> {
        let plan = self.plan();
        CpuSteps {
            steps: &plan.cpu_steps,
            slots: &plan.slots,
            queue: &self.ctx.queue,
        }
    }

    /// Where the current run can move to the CPU, and the download of its state there
    /// ([`ResumePoints`], for the memory plan of the current run).
    pub fn resume(&self) -> ResumePoints<'_> {
        let plan = self.plan();
        ResumePoints {
            table: &plan.resume,
            slots: &plan.slots,
            ctx: &self.ctx,
            num_steps: self.num_steps(),
        }
    }
}
