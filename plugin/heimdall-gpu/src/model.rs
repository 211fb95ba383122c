//! The compiled GPU model: buffers planned once, weights uploaded once, every pipeline and bind
//! group created at compile time; [`GpuModel::encode`] records any contiguous range of steps into
//! a caller's command encoder.

use std::ops::Range;
use std::time::{Duration, Instant};

use heimdall_ir::{Graph, OpKind};

use crate::aliases::slot_aliases;
use crate::context::GpuContext;
use crate::conv_cache::{CachedDispatch, ConvCache};
use crate::cpu_step::CpuStep;
use crate::dispatch::{ConstBuffer, Dispatch, OpContext};
use crate::error::GpuError;
use crate::layout::Phwc4;
use crate::memory;
use crate::options::{CompileReport, GpuOptions, PipelineCacheState};
use crate::plan::{Placement, placement};
use crate::precision::Precision;
use crate::readback::{IoTensor, Readback};
use crate::resources::{self, EncodedDispatch, Resources, open_pipeline_cache, write_atomically};
use crate::storage::{op_precisions, tensor_precisions};

/// A model input's slot (where the preprocessing writes) or output's (what `tensor_to_rgba`
/// reads): its buffer, geometry and precision.
pub(crate) struct InputTarget {
    pub buffer: wgpu::Buffer,
    pub bytes: u64,
    pub geom: Phwc4,
    pub precision: Precision,
}

/// A graph compiled for a [`GpuContext`].
pub struct GpuModel {
    pub(crate) ctx: GpuContext,
    steps: Vec<Vec<EncodedDispatch>>,
    names: Vec<&'static str>,
    pub(crate) placement: Vec<Placement>,
    pipelines: Vec<wgpu::ComputePipeline>,
    slots: Vec<wgpu::Buffer>,
    _consts: Vec<wgpu::Buffer>,
    _uniforms: wgpu::Buffer,
    inputs: Vec<IoTensor>,
    outputs: Vec<IoTensor>,
    readback: Readback,
    cpu_steps: Vec<Option<CpuStep>>,
    report: CompileReport,
    cache: Option<wgpu::PipelineCache>,
    conv_cache: Option<ConvCache>,
    first_gpu_step: usize,
}

impl std::fmt::Debug for GpuModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuModel")
            .field("steps", &self.steps.len())
            .field("report", &self.report)
            .finish()
    }
}

impl GpuModel {
    /// Compiles a validated graph for `ctx`: plans the activation slots, pre-transforms and
    /// uploads every weight, composes and creates every pipeline (deduplicated) and bind group.
    pub fn compile(
        ctx: &GpuContext,
        graph: &Graph,
        options: GpuOptions,
    ) -> Result<GpuModel, GpuError> {
        let start = Instant::now();
        graph.validate()?;
        let tuning = match options.tuning {
            Some(t) => {
                t.validate(&ctx.limits).map_err(GpuError::Options)?;
                t
            }
            None => ctx.tuning(),
        };
        let precision = match options.precision {
            Precision::F16 if !ctx.has_f16() => Precision::PackedF16,
            p => p,
        };
        let placement = placement(graph);
        let op_precisions = op_precisions(graph, &options, ctx.has_f16());
        let precisions = tensor_precisions(graph, precision, &op_precisions);
        let mut bytes = vec![0u64; graph.tensors.len()];
        for (i, t) in graph.tensors.iter().enumerate() {
            if t.constant.is_none() {
                let g = Phwc4::of(&t.shape)?;
                bytes[i] = (g.stored_values() * precisions[i].bytes_per_value()) as u64;
            }
        }
        let aliases = slot_aliases(
            graph,
            &placement,
            &precisions,
            u64::from(ctx.limits.min_storage_buffer_offset_alignment),
        );
        let cache_plan = match &options.conv_cache {
            Some(c) => {
                c.validate().map_err(GpuError::Options)?;
                Some((
                    *c,
                    heimdall_ir::conv_cache::CachePlan::new(graph, c.layers)
                        .map_err(GpuError::Options)?,
                ))
            }
            None => None,
        };
        let mut consts: Vec<ConstBuffer> = Vec::new();
        let mut dispatches: Vec<Vec<Dispatch>> = Vec::with_capacity(graph.ops.len());
        for (index, op) in graph.ops.iter().enumerate() {
            if placement[index] == Placement::Cpu || aliases.free[index] {
                // A CPU step, a reshape whose output shares its input's slot, or a concatenation
                // whose inputs were written into its output's slot: no dispatch.
                dispatches.push(Vec::new());
                continue;
            }
            let mut octx = OpContext {
                graph,
                op,
                precisions: &precisions,
                // An op producing a graph output reads f32 (see `tensor_precisions`), so its
                // weights and constant inputs are f32 too.
                weights: if op.outputs.iter().any(|o| graph.outputs.contains(o)) {
                    Precision::F32
                } else {
                    op_precisions[index]
                },
                tuning,
                consts: &mut consts,
            };
            let d = crate::ops::build(&mut octx).map_err(|message| GpuError::Op {
                index,
                name: op.kind.name().into(),
                message,
            })?;
            // The parameters take one more storage binding where they live in one.
            let params = u32::from(ctx.params_space() == crate::params::ParamsSpace::Storage);
            for k in &d {
                let n = k.source.storage_bindings() as u32 + params;
                if n > ctx.limits.max_storage_buffers_per_shader_stage {
                    return Err(GpuError::Op {
                        index,
                        name: op.kind.name().into(),
                        message: format!(
                            "needs {n} storage buffers, the device allows {}",
                            ctx.limits.max_storage_buffers_per_shader_stage
                        ),
                    });
                }
            }
            dispatches.push(d);
        }
        // The conv cache's dispatches: ops it may skip whose one dispatch has a known thread
        // order and a binding to spare for its work group list. Their outputs keep their slots.
        let params_binding = u32::from(ctx.params_space() == crate::params::ParamsSpace::Storage);
        let mut cached: Vec<CachedDispatch> = Vec::new();
        let mut persistent = vec![false; graph.tensors.len()];
        if let Some((_, plan)) = &cache_plan {
            for (i, ds) in dispatches.iter().enumerate() {
                let ([d], true, false) = (
                    ds.as_slice(),
                    plan.cacheable[i] && placement[i] == Placement::Gpu,
                    aliases.free[i],
                ) else {
                    continue;
                };
                let out = graph.ops[i].outputs[0];
                let (Some(tiles), Some(field), &[1, h, w, _]) =
                    (d.tiles, plan.field(out), graph.tensor(out).shape.as_slice())
                else {
                    continue;
                };
                let bindings = d.source.storage_bindings() as u32 + params_binding + 1;
                if bindings > ctx.limits.max_storage_buffers_per_shader_stage || d.workgroups == 0 {
                    continue;
                }
                cached.push(CachedDispatch {
                    step: i,
                    workgroups: d.workgroups,
                    tiles,
                    field,
                    out_hw: [h as u32, w as u32],
                });
                persistent[out.index()] = true;
            }
        }
        let mem = memory::plan_persistent(graph, &bytes, &aliases.alias, &persistent);
        let mut conv_cache = match &cache_plan {
            Some((config, plan)) if !cached.is_empty() => Some(ConvCache::new(
                ctx,
                *config,
                plan.in_hw,
                plan.channels,
                &cached,
            )?),
            _ => None,
        };
        let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let (cache, mut cache_state) = open_pipeline_cache(ctx, options.pipeline_cache.as_deref());
        let built = resources::create(
            ctx,
            graph,
            &mem,
            cache.as_ref(),
            &consts,
            &dispatches,
            conv_cache.as_ref(),
        )
        .and_then(|r| {
            if let (Some(c), Some((_, plan))) = (conv_cache.as_mut(), &cache_plan) {
                let input = plan.input;
                let slot = mem.slot_of[input.index()]
                    .ok_or_else(|| GpuError::Unsupported("the cached input has no slot".into()))?;
                c.attach_input(
                    ctx,
                    &r.slots[slot],
                    precisions[input.index()],
                    cache.as_ref(),
                )?;
            }
            Ok(r)
        });
        let error = pollster::block_on(scope.pop());
        if let Some(e) = error {
            return Err(GpuError::Wgpu(e.to_string()));
        }
        let Resources {
            slots,
            consts: const_buffers,
            uniforms,
            pipelines,
            steps,
        } = built?;
        let io = |t: heimdall_ir::TensorId| -> Result<IoTensor, GpuError> {
            let slot = mem.slot_of[t.index()].ok_or_else(|| {
                GpuError::Unsupported(format!("tensor {} is a constant, not an activation", t.0))
            })?;
            Ok(IoTensor {
                slot,
                geom: Phwc4::of(&graph.tensor(t).shape)?,
                precision: precisions[t.index()],
                shape: graph.tensor(t).shape.clone(),
            })
        };
        let inputs = graph
            .inputs
            .iter()
            .map(|&t| io(t))
            .collect::<Result<Vec<_>, _>>()?;
        let outputs = graph
            .outputs
            .iter()
            .map(|&t| io(t))
            .collect::<Result<Vec<_>, _>>()?;
        let cpu_steps = placement
            .iter()
            .enumerate()
            .map(|(i, p)| match p {
                Placement::Cpu => CpuStep::new(&ctx.device, graph, i, io).map(Some),
                Placement::Gpu => Ok(None),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let readback = Readback::new(
            &ctx.device,
            &outputs,
            conv_cache.as_ref().map(ConvCache::counters_bytes),
        );
        if let (Some(cache), Some(path)) = (&cache, &options.pipeline_cache)
            && let Some(data) = cache.get_data()
            && let Err(e) = write_atomically(path, &data)
        {
            cache_state = PipelineCacheState::Failed(format!("{}: {e}", path.display()));
        }
        let report = CompileReport {
            compile_time: start.elapsed(),
            precision,
            pipelines: pipelines.len(),
            dispatches: steps.iter().map(Vec::len).sum(),
            free_concats: graph
                .ops
                .iter()
                .zip(&aliases.free)
                .filter(|(op, free)| **free && matches!(op.kind, OpKind::Concatenation { .. }))
                .count(),
            peak_bytes: mem.peak_bytes(),
            total_bytes: mem.total_bytes,
            weight_bytes: consts.iter().map(|c| c.bytes.len() as u64).sum(),
            pipeline_cache: cache_state,
            cached_ops: cached.iter().map(|c| c.step).collect(),
        };
        let first_gpu_step = placement
            .iter()
            .position(|p| *p == Placement::Gpu)
            .unwrap_or(0);
        Ok(GpuModel {
            ctx: ctx.clone(),
            steps,
            names: graph.ops.iter().map(|o| o.kind.name()).collect(),
            placement,
            pipelines,
            slots,
            _consts: const_buffers,
            _uniforms: uniforms,
            inputs,
            outputs,
            readback,
            cpu_steps,
            report,
            cache,
            conv_cache,
            first_gpu_step,
        })
    }

    /// Number of steps (one per op of the graph, in graph order).
    pub fn num_steps(&self) -> usize {
        self.steps.len()
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
        let input = self.inputs.get(index).ok_or(GpuError::Input {
            index,
            expected: 0,
            got: 0,
        })?;
        Ok(InputTarget {
            buffer: self.slots[input.slot].clone(),
            bytes: input.bytes(),
            geom: input.geom,
            precision: input.precision,
        })
    }

    /// Output `index`'s slot, for kernels that read it in place (`tensor_to_rgba`).
    pub(crate) fn output_target(&self, index: usize) -> Result<InputTarget, GpuError> {
        let output = self
            .outputs
            .get(index)
            .ok_or(GpuError::Unsupported(format!(
                "the model has {} outputs, not {}",
                self.outputs.len(),
                index + 1
            )))?;
        Ok(InputTarget {
            buffer: self.slots[output.slot].clone(),
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
        self.inputs.iter().map(|t| t.shape.clone()).collect()
    }

    /// Shapes of the model's outputs.
    pub fn output_shapes(&self) -> Vec<Vec<usize>> {
        self.outputs.iter().map(|t| t.shape.clone()).collect()
    }

    /// Uploads input `index` (NHWC f32) with `queue.write_buffer`, packed to PHWC4 in the input's
    /// precision; the data is visible to the next command buffer submitted on the queue.
    pub fn set_input(&self, index: usize, data: &[f32]) -> Result<(), GpuError> {
        let input = self.inputs.get(index).ok_or(GpuError::Input {
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
        let bytes = input.precision.encode(&input.geom.pack(data));
        self.ctx
            .queue
            .write_buffer(&self.slots[input.slot], 0, &bytes);
        Ok(())
    }

    /// Records steps `steps` (a contiguous range of GPU steps) into `encoder` as one compute
    /// pass, with no other side effect (a range holding a CPU step is refused: run it with
    /// [`GpuModel::run_cpu_step`] between two ranges). Running a model as any sequence of ranges gives
    /// bit-identical results to one whole run.
    pub fn encode(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        steps: Range<usize>,
    ) -> Result<(), GpuError> {
        if steps.start > steps.end || steps.end > self.steps.len() {
            return Err(GpuError::Range {
                start: steps.start,
                end: steps.end,
                message: format!("the model has {} steps", self.steps.len()),
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
        c.is_active().then_some(c)
    }

    /// The convolution cache, if it is on and active.
    fn active_cache(&self) -> Option<&ConvCache> {
        self.conv_cache.as_ref().filter(|c| c.is_active())
    }

    /// Switches the convolution cache on or off at run time (off: every op runs whole through
    /// its plain kernel, as without the cache; the cache's memory stays). Switching it on again
    /// starts with a full run. Does nothing when the model has no cache.
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
        for d in &self.steps[i] {
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
        self.readback.encode(
            encoder,
            &self.slots,
            &self.outputs,
            self.conv_cache.as_ref().map(|c| &c.counters),
        )
    }

    /// The convolution cache's counts for the last run whose outputs were taken (`None` when
    /// the cache is off or inactive, or no run finished yet).
    pub fn conv_cache_counts(&self) -> Option<heimdall_ir::conv_cache::CacheCounts> {
        let c = self.active_cache()?;
        Some(c.counts(&self.readback.extra_values()?))
    }

    /// What the last [`GpuModel::calibrate_conv_cache`] measured, if it ran.
    pub fn conv_cache_calibration(&self) -> Option<crate::conv_cache::CacheCalibration> {
        self.conv_cache.as_ref().and_then(ConvCache::calibration)
    }

    pub(crate) fn conv_cache_handle(&self) -> Option<&ConvCache> {
        self.conv_cache.as_ref()
    }

    /// The convolution cache's dispatches (empty without a cache), for tests and tools
    /// ([`crate::conv_cache::dirty_workgroups`]).
    pub fn conv_cache_dispatches(&self) -> &[crate::conv_cache::CachedDispatch] {
        self.conv_cache
            .as_ref()
            .map_or(&[], |c| c.dispatches.as_slice())
    }

    /// The convolution cache's settings, if it is on (and any op is cached).
    pub fn conv_cache_config(&self) -> Option<&heimdall_ir::conv_cache::ConvCacheConfig> {
        self.conv_cache.as_ref().map(ConvCache::config)
    }

    /// Makes the next run recompute everything (call when the input's crop, region of interest
    /// or meaning changes). Does nothing when the cache is off.
    pub fn invalidate_conv_cache(&self) {
        if let Some(c) = &self.conv_cache {
            c.invalidate();
        }
    }

    /// Lets the cache switch itself off when the scene moves too much for it to pay, and on
    /// again at the next probe (`policy` from [`GpuModel::calibrate_conv_cache`]); `None`:
    /// only [`GpuModel::set_conv_cache_active`] switches it. Does nothing without a cache.
    pub fn set_conv_cache_auto(&self, policy: Option<crate::conv_cache::AutoPolicy>) {
        if let Some(c) = &self.conv_cache {
            c.set_auto(policy);
        }
    }

    /// The automatic switch's averaged hit rate (`None` without one or before a sample).
    pub fn conv_cache_expected_hit(&self) -> Option<f64> {
        self.conv_cache.as_ref().and_then(ConvCache::expected_hit)
    }

    /// A fixed clock (milliseconds) for the cache's expiry, for tests; `None`: the wall clock.
    pub fn set_conv_cache_now_ms(&self, now_ms: Option<u32>) {
        if let Some(c) = &self.conv_cache {
            c.set_now_ms(now_ms);
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
        let taken = self.readback.take(&self.outputs)?;
        if taken.is_some()
            && let (Some(c), Some(counts)) = (self.active_cache(), self.conv_cache_counts())
        {
            c.observe(&counts);
        }
        Ok(taken)
    }

    /// Runs the whole model on `inputs` and waits for the outputs (tests and the CLI only: it
    /// blocks on `device.poll`).
    pub fn run(&self, inputs: &[&[f32]]) -> Result<Vec<Vec<f32>>, GpuError> {
        let whole = 0..self.num_steps();
        self.run_ranges(inputs, std::slice::from_ref(&whole))
    }

    fn cpu_step(&self, step: usize) -> Result<&CpuStep, GpuError> {
        self.cpu_steps
            .get(step)
            .and_then(Option::as_ref)
            .ok_or_else(|| GpuError::Range {
                start: step,
                end: step + 1,
                message: "not a CPU step".into(),
            })
    }

    /// Records the download of CPU step `step`'s inputs (GPU slots to staging buffers). Submit
    /// the encoder after the GPU steps before it, then call
    /// [`GpuModel::request_cpu_step_inputs`].
    pub fn encode_cpu_step_inputs(
        &self,
        step: usize,
        encoder: &mut wgpu::CommandEncoder,
    ) -> Result<(), GpuError> {
        self.cpu_step(step)?.encode_download(encoder, &self.slots)
    }

    /// Starts mapping CPU step `step`'s downloaded inputs (after the copies were submitted).
    pub fn request_cpu_step_inputs(&self, step: usize) -> Result<(), GpuError> {
        self.cpu_step(step)?.request_download()
    }

    /// Whether CPU step `step` can run without waiting.
    pub fn cpu_step_ready(&self, step: usize) -> bool {
        self.cpu_step(step).is_ok_and(CpuStep::is_ready)
    }

    /// Runs CPU step `step` on this thread and uploads its output (visible to the next
    /// submission); `Ok(false)` if its inputs have not arrived yet. Never blocks on the GPU.
    pub fn run_cpu_step(&self, step: usize) -> Result<bool, GpuError> {
        self.cpu_step(step)?.run(&self.ctx.queue, &self.slots)
    }

    pub(crate) fn wait(&self) -> Result<(), GpuError> {
        self.ctx
            .device
            .poll(wgpu::PollType::Wait {
                submission_index: None,
                timeout: None,
            })
            .map(|_| ())
            .map_err(|e| GpuError::Wgpu(e.to_string()))
    }

    /// Polls until `ready()` holds. One `poll(Wait)` is not enough when several threads poll
    /// the same device: another thread's poll may be the one running our `map_async` callback,
    /// and ours can return before that callback has finished.
    pub(crate) fn wait_for(&self, ready: impl Fn() -> bool) -> Result<(), GpuError> {
        let start = std::time::Instant::now();
        loop {
            self.wait()?;
            if ready() {
                return Ok(());
            }
            if start.elapsed() > Duration::from_secs(60) {
                return Err(GpuError::Readback("no result after 60 s of waiting".into()));
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    pub(crate) fn submit_gpu(&self, steps: Range<usize>) -> Result<(), GpuError> {
        if steps.is_empty() {
            return Ok(());
        }
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("heimdall run"),
            });
        self.encode(&mut encoder, steps)?;
        self.ctx.queue.submit([encoder.finish()]);
        Ok(())
    }

    /// Runs CPU step `i` now: downloads its inputs, waits, computes, uploads.
    pub(crate) fn run_cpu_step_blocking(&self, i: usize) -> Result<(), GpuError> {
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("heimdall CPU step inputs"),
            });
        self.encode_cpu_step_inputs(i, &mut encoder)?;
        self.ctx.queue.submit([encoder.finish()]);
        self.request_cpu_step_inputs(i)?;
        self.wait_for(|| self.cpu_step_ready(i))?;
        if self.run_cpu_step(i)? {
            Ok(())
        } else {
            Err(GpuError::Readback(format!(
                "inputs of CPU step {i} not ready after waiting"
            )))
        }
    }

    /// Like [`GpuModel::run`], encoding and submitting each range separately; CPU steps inside
    /// a range run in place (download, wait, CPU, upload).
    pub fn run_ranges(
        &self,
        inputs: &[&[f32]],
        ranges: &[Range<usize>],
    ) -> Result<Vec<Vec<f32>>, GpuError> {
        if inputs.len() != self.inputs.len() {
            return Err(GpuError::Input {
                index: inputs.len(),
                expected: self.inputs.len(),
                got: inputs.len(),
            });
        }
        for (i, x) in inputs.iter().enumerate() {
            self.set_input(i, x)?;
        }
        self.run_ranges_preset(ranges)
    }

    /// Like [`GpuModel::run_ranges`] on the inputs already in place (set by
    /// [`GpuModel::set_input`] or written by a preprocessing kernel submitted before).
    pub fn run_ranges_preset(&self, ranges: &[Range<usize>]) -> Result<Vec<Vec<f32>>, GpuError> {
        for r in ranges {
            if r.start > r.end || r.end > self.steps.len() {
                return Err(GpuError::Range {
                    start: r.start,
                    end: r.end,
                    message: format!("the model has {} steps", self.steps.len()),
                });
            }
            let mut gpu_start = r.start;
            for i in r.clone() {
                if self.placement[i] == Placement::Cpu {
                    self.submit_gpu(gpu_start..i)?;
                    gpu_start = i + 1;
                    self.run_cpu_step_blocking(i)?;
                }
            }
            self.submit_gpu(gpu_start..r.end)?;
        }
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("heimdall readback"),
            });
        self.encode_readback(&mut encoder)?;
        self.ctx.queue.submit([encoder.finish()]);
        self.request_readback()?;
        self.wait_for(|| self.readback_ready())?;
        self.take_outputs()?
            .ok_or_else(|| GpuError::Readback("outputs not ready after waiting".into()))
    }
}
