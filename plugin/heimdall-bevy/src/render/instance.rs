//! One DNN entity in the render world: its compiled models (GPU on Bevy's device, CPU for
//! offload and fallback), its preprocessing, and the inference in flight.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bevy::prelude::*;
use bevy::render::render_asset::RenderAssets;
use bevy::render::texture::GpuImage;
use bevy::tasks::{AsyncComputeTaskPool, Task, futures::check_ready};
use heimdall_coordinator::{CpuWork, ModelProfile, StepCost, WorkId};
use heimdall_cpu::{CpuModel, CpuOptions};
use heimdall_gpu::preprocess::Preprocessor;
use heimdall_gpu::{GpuContext, GpuModel, GpuOptions, Placement, Precision};

use super::{BackendMode, Extracted, HeimdallRender, request_of};
use crate::crop::Crop;
use crate::decode;
use crate::dnn::{Backend, Decoder, Normalization};
use crate::shared::{HeimdallShared, ResultMsg};

/// Whether a device can run the GPU backend's kernels.
pub(crate) fn gpu_capable(ctx: &GpuContext) -> Result<(), String> {
    let l = &ctx.limits;
    if l.max_compute_workgroup_size_x < 64 || l.max_compute_invocations_per_workgroup < 64 {
        return Err(format!(
            "compute work groups of at most {} invocations",
            l.max_compute_invocations_per_workgroup
        ));
    }
    if l.max_storage_buffers_per_shader_stage < 4 {
        return Err(format!(
            "{} storage buffers per shader stage (4 needed)",
            l.max_storage_buffers_per_shader_stage
        ));
    }
    if l.max_storage_buffer_binding_size < (16 << 20) {
        return Err(format!(
            "storage bindings of at most {} bytes",
            l.max_storage_buffer_binding_size
        ));
    }
    if l.max_compute_workgroups_per_dimension == 0 {
        return Err("no compute shaders".into());
    }
    Ok(())
}

pub(crate) struct Compiled {
    pub gpu: Option<Arc<GpuModel>>,
    pub pre: Option<Preprocessor>,
    /// Bind groups of the preprocessing, per source texture.
    pub bindings: HashMap<
        bevy::render::render_resource::TextureId,
        heimdall_gpu::preprocess::PreprocessBinding,
    >,
    pub cpu: Arc<Mutex<CpuModel>>,
    pub steps: usize,
    /// Input `[H, W, C]`.
    pub input: [usize; 3],
    pub placement: Vec<Placement>,
}

pub(crate) enum InstanceState {
    Compiling(Task<Result<(Compiled, Vec<StepCost>), String>>),
    Ready(Box<Compiled>),
    Failed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadbackState {
    None,
    /// Copies encoded in this frame's encoder.
    Encoded,
    /// Mapping requested.
    Requested,
}

pub(crate) struct Job {
    pub frame_index: u64,
    pub capture_ms: f64,
    pub crop: Crop,
    pub pixels: Arc<Vec<u8>>,
    pub frame_size: UVec2,
    /// The whole remaining inference runs on the CPU model (from op 0).
    pub on_cpu: bool,
    pub need_readback: bool,
    pub readback: ReadbackState,
    /// CPU fallback step whose inputs are being downloaded: (work, step, requested).
    pub cpu_step: Option<(WorkId, usize, bool)>,
}

pub(crate) struct Instance {
    pub index: u32,
    pub name: String,
    pub model: AssetId<crate::asset::DnnModel>,
    pub source: Entity,
    pub decoder: Decoder,
    pub normalization: Normalization,
    pub state: InstanceState,
    pub model_id: Option<heimdall_coordinator::ModelId>,
    pub job: Option<Job>,
    pub pending: Option<Crop>,
}

/// A CPU worker's report.
pub(crate) struct CpuDone {
    pub entity: Entity,
    pub work: WorkId,
    pub worker: usize,
    pub start_ms: f64,
    pub end_ms: f64,
    /// Outputs when the inference finished on the CPU.
    pub outputs: Option<Vec<Vec<f32>>>,
    pub error: Option<String>,
}

/// Compiles `graph` for the CPU (always) and the GPU (when `ctx`), measuring step costs.
fn compile(
    graph: Arc<heimdall_ir::Graph>,
    ctx: Option<GpuContext>,
    precision: Precision,
    norm: Normalization,
) -> Result<(Compiled, Vec<StepCost>), String> {
    let &input = graph.inputs.first().ok_or("the model has no input")?;
    let shape = graph.tensor(input).shape.clone();
    let input3 = match shape.as_slice() {
        [1, h, w, c] if (1..=4).contains(c) => [*h, *w, *c],
        other => {
            return Err(format!(
                "camera input needs a [1, H, W, C≤4] first input, the model has {other:?}"
            ));
        }
    };
    let mut cpu =
        CpuModel::compile(&graph, CpuOptions { threads: 1 }).map_err(|e| e.to_string())?;
    let n = cpu.num_ops();
    // CPU step costs: one warm-up run, then one timed run.
    let zeros: Vec<Vec<f32>> = cpu
        .input_shapes()
        .iter()
        .map(|s| vec![0.0; s.iter().product()])
        .collect();
    for (i, z) in zeros.iter().enumerate() {
        cpu.set_input(i, z).map_err(|e| e.to_string())?;
    }
    cpu.run().map_err(|e| e.to_string())?;
    let mut cpu_times = vec![Duration::ZERO; n];
    cpu.run_range_timed(0..n, Some(&mut cpu_times))
        .map_err(|e| e.to_string())?;
    let (gpu, pre, placement, costs) = match ctx {
        Some(ctx) => {
            let model = GpuModel::compile(&ctx, &graph, GpuOptions::new(precision))
                .map_err(|e| e.to_string())?;
            let pre = Preprocessor::new(&model, 0, norm).map_err(|e| e.to_string())?;
            let refs: Vec<&[f32]> = zeros.iter().map(Vec::as_slice).collect();
            // Warms every pipeline and measures the steps (median of 5 after 2 warm-ups).
            let profile = model.profile(&refs, 2, 5).map_err(|e| e.to_string())?;
            let placement = model.placement().to_vec();
            let costs = (0..n)
                .map(|i| {
                    let c = cpu_times[i].as_secs_f64() * 1e3;
                    match placement.get(i) {
                        Some(Placement::Gpu) => {
                            StepCost::gpu_and_cpu(profile.steps[i].as_secs_f64() * 1e3, c)
                        }
                        _ => StepCost::cpu_only(c),
                    }
                })
                .collect();
            (Some(Arc::new(model)), Some(pre), placement, costs)
        }
        None => (
            None,
            None,
            vec![Placement::Cpu; n],
            cpu_times
                .iter()
                .map(|t| StepCost::cpu_only(t.as_secs_f64() * 1e3))
                .collect(),
        ),
    };
    Ok((
        Compiled {
            gpu,
            pre,
            bindings: HashMap::new(),
            cpu: Arc::new(Mutex::new(cpu)),
            steps: n,
            input: input3,
            placement,
        },
        costs,
    ))
}

impl Instance {
    pub fn request_readback(&mut self) {
        let (Some(job), InstanceState::Ready(c)) = (self.job.as_mut(), &self.state) else {
            return;
        };
        if job.readback == ReadbackState::Encoded
            && let Some(gpu) = &c.gpu
        {
            match gpu.request_readback() {
                Ok(()) => job.readback = ReadbackState::Requested,
                Err(e) => error!("heimdall: {}: readback: {e}", self.name),
            }
        }
    }

    pub fn request_cpu_step(&mut self, step: usize) {
        let (Some(job), InstanceState::Ready(c)) = (self.job.as_mut(), &self.state) else {
            return;
        };
        if let (Some((_, s, requested)), Some(gpu)) = (job.cpu_step.as_mut(), &c.gpu)
            && *s == step
            && !*requested
        {
            match gpu.request_cpu_step_inputs(step) {
                Ok(()) => *requested = true,
                Err(e) => error!("heimdall: {}: CPU step {step}: {e}", self.name),
            }
        }
    }
}

impl HeimdallRender {
    /// Starts compiling new DNN entities, registers compiled ones, drops removed ones.
    pub(super) fn sync_instances(&mut self, ex: &Extracted, shared: &HeimdallShared, _now: f64) {
        self.instances.retain(|e, i| {
            ex.dnns
                .get(e)
                .is_some_and(|d| d.model == i.model && d.source == i.source)
        });
        for (e, d) in &ex.dnns {
            if self.instances.contains_key(e) {
                continue;
            }
            let Some(graph) = d.graph.clone() else {
                continue; // the asset is still loading
            };
            let ctx = match &self.mode {
                BackendMode::Gpu(ctx) => Some((**ctx).clone()),
                BackendMode::Cpu => None,
            };
            let precision = self.settings.precision;
            let norm = d.normalization;
            let task = AsyncComputeTaskPool::get()
                .spawn(async move { compile(graph, ctx, precision, norm) });
            let index = self.next_index;
            self.next_index += 1;
            shared.set_status(*e, &d.name, "compiling");
            shared.set_instance_name(index, &d.name);
            self.instances.insert(
                *e,
                Instance {
                    index,
                    name: d.name.clone(),
                    model: d.model,
                    source: d.source,
                    decoder: d.decoder,
                    normalization: d.normalization,
                    state: InstanceState::Compiling(task),
                    model_id: None,
                    job: None,
                    pending: None,
                },
            );
        }
        for (e, inst) in &mut self.instances {
            let InstanceState::Compiling(task) = &mut inst.state else {
                continue;
            };
            let Some(result) = check_ready(task) else {
                continue;
            };
            match result {
                Ok((compiled, steps)) => {
                    let d = &ex.dnns[e];
                    let id = self.coordinator.register_with_profile(
                        inst.name.clone(),
                        ModelProfile::new(inst.name.clone(), steps),
                        d.utility,
                        d.deadline_ms,
                    );
                    inst.model_id = Some(id);
                    let where_ = if compiled.gpu.is_some() { "gpu" } else { "cpu" };
                    shared.set_status(*e, &inst.name, where_);
                    if let Some(g) = &compiled.gpu {
                        shared.record_model_device(g.context().device.clone());
                        info!(
                            "heimdall: {} compiled for {} in {:.0} ms ({} steps)",
                            inst.name,
                            g.context().info.name,
                            g.report().compile_time.as_secs_f64() * 1e3,
                            compiled.steps
                        );
                    }
                    inst.state = InstanceState::Ready(Box::new(compiled));
                }
                Err(why) => {
                    error!("heimdall: {} cannot run: {why}", inst.name);
                    shared.set_status(*e, &inst.name, &format!("failed: {why}"));
                    inst.state = InstanceState::Failed;
                }
            }
        }
    }

    /// Starts the pending request of `e` if it is idle: stamps it with the frame now in its
    /// source's texture and preprocesses that frame into the model's input (GPU mode).
    pub(super) fn start_if_idle(
        &mut self,
        e: Entity,
        ex: &Extracted,
        images: &RenderAssets<GpuImage>,
        encoder: &mut wgpu::CommandEncoder,
        now: f64,
    ) -> bool {
        let Some(inst) = self.instances.get_mut(&e) else {
            return false;
        };
        let (Some(id), InstanceState::Ready(c)) = (inst.model_id, &mut inst.state) else {
            return false;
        };
        if inst.job.is_some() || self.coordinator.busy(id) {
            return false;
        }
        let Some(crop) = inst.pending else {
            return false;
        };
        let Some(frame) = ex.frames.get(&inst.source) else {
            return false;
        };
        let mut preprocessed = false;
        if let (Some(gpu), Some(pre)) = (&c.gpu, &c.pre) {
            let Some(image) = images.get(frame.image) else {
                return false; // not uploaded yet
            };
            let key = image.texture.id();
            if let std::collections::hash_map::Entry::Vacant(slot) = c.bindings.entry(key) {
                match pre.bind(&image.texture_view) {
                    Ok(b) => {
                        slot.insert(b);
                    }
                    Err(err) => {
                        error!("heimdall: {}: binding the camera texture: {err}", inst.name);
                        inst.state = InstanceState::Failed;
                        return false;
                    }
                }
            }
            if let Err(err) = pre.set_transform(&gpu.context().queue, &crop.to_gpu()) {
                warn!("heimdall: {}: crop {crop:?}: {err}", inst.name);
                inst.pending = None;
                return false;
            }
            pre.encode(encoder, &c.bindings[&key]);
            preprocessed = true;
        }
        inst.pending = None;
        inst.job = Some(Job {
            frame_index: frame.index,
            capture_ms: frame.capture_ms,
            crop,
            pixels: frame.pixels.clone(),
            frame_size: frame.size,
            on_cpu: false,
            need_readback: false,
            readback: ReadbackState::None,
            cpu_step: None,
        });
        self.coordinator.submit(id, request_of(frame), now);
        preprocessed
    }

    /// Encodes GPU steps `ops` of `e`'s job.
    pub(super) fn encode_chunk(
        &mut self,
        e: Entity,
        ops: Range<usize>,
        encoder: &mut wgpu::CommandEncoder,
    ) -> Result<(), String> {
        let inst = self.instances.get_mut(&e).ok_or("no such DNN")?;
        let InstanceState::Ready(c) = &inst.state else {
            return Err("not compiled".into());
        };
        let job = inst.job.as_mut().ok_or("no inference in flight")?;
        let gpu = c.gpu.as_ref().ok_or("no GPU model")?;
        if job.on_cpu {
            return Err("the inference moved to the CPU".into());
        }
        gpu.encode(encoder, ops.clone())
            .map_err(|e| e.to_string())?;
        if ops.end == c.steps {
            job.need_readback = true;
        }
        Ok(())
    }

    /// Encodes the output copies of jobs whose last step was encoded (or ran on the CPU).
    pub(super) fn encode_pending_readbacks(&mut self, encoder: &mut wgpu::CommandEncoder) {
        for (e, inst) in &mut self.instances {
            let (Some(job), InstanceState::Ready(c)) = (inst.job.as_mut(), &inst.state) else {
                continue;
            };
            if !job.need_readback || job.readback != ReadbackState::None {
                continue;
            }
            let Some(gpu) = &c.gpu else { continue };
            match gpu.encode_readback(encoder) {
                Ok(()) => {
                    job.readback = ReadbackState::Encoded;
                    job.need_readback = false;
                    self.readbacks_to_request.push(*e);
                }
                Err(err) => error!("heimdall: {}: readback: {err}", inst.name),
            }
        }
    }

    /// Takes finished readbacks and hands them to a worker for decoding.
    pub(super) fn collect_readbacks(&mut self, shared: &HeimdallShared) {
        let mut done = Vec::new();
        for (e, inst) in &mut self.instances {
            let (Some(job), InstanceState::Ready(c)) = (inst.job.as_ref(), &inst.state) else {
                continue;
            };
            if job.readback != ReadbackState::Requested {
                continue;
            }
            let Some(gpu) = &c.gpu else { continue };
            if !gpu.readback_ready() {
                continue;
            }
            match gpu.take_outputs() {
                Ok(Some(outputs)) => done.push((*e, outputs)),
                Ok(None) => {}
                Err(err) => {
                    error!("heimdall: {}: readback: {err}", inst.name);
                    inst.job = None;
                }
            }
        }
        for (e, outputs) in done {
            self.finish_job(e, outputs, Backend::Gpu, shared);
        }
    }

    /// Sends a finished inference to a worker for decoding; the instance becomes idle.
    fn finish_job(
        &mut self,
        e: Entity,
        outputs: Vec<Vec<f32>>,
        backend: Backend,
        shared: &HeimdallShared,
    ) {
        let Some(inst) = self.instances.get_mut(&e) else {
            return;
        };
        let Some(job) = inst.job.take() else { return };
        let decoder = inst.decoder;
        let tx = shared.0.results.sender();
        let name = inst.name.clone();
        self.pool.spawn(move || {
            let decoded = decode::decode(decoder, &outputs, &job.crop, job.frame_size);
            let decoded = match decoded {
                Ok(d) => d,
                Err(err) => {
                    warn!("heimdall: {name}: decoding: {err}");
                    decode::Decoded::None
                }
            };
            tx.send(ResultMsg {
                entity: e,
                frame_index: job.frame_index,
                capture_ms: job.capture_ms,
                tensors: Arc::new(outputs),
                backend,
                crop: job.crop,
                decoded,
            })
            .ok();
        });
    }

    /// Hands CPU work to a worker: a fallback step of a GPU model, or (part of) an inference on
    /// the CPU model (offloaded, or the CPU-only mode).
    pub(super) fn dispatch_cpu(
        &mut self,
        work: CpuWork,
        now: f64,
        encoder: &mut wgpu::CommandEncoder,
    ) {
        let Some(e) = self.entity_of(work.model) else {
            self.coordinator.cpu_done(work.id, 0, now, now);
            return;
        };
        let worker = self.pool.size() - self.pool.idle();
        let inst = self.instances.get_mut(&e).expect("entity_of found it");
        let (Some(job), InstanceState::Ready(c)) = (inst.job.as_mut(), &inst.state) else {
            self.coordinator.cpu_done(work.id, worker, now, now);
            return;
        };
        let fallback_step = c.gpu.is_some()
            && !job.on_cpu
            && !work.offloaded
            && work.ops.len() == 1
            && c.placement.get(work.ops.start) == Some(&Placement::Cpu);
        if fallback_step {
            // The step's inputs come down after this frame's chunks; it runs when they arrive.
            let step = work.ops.start;
            if let Some(gpu) = &c.gpu {
                // After this frame's chunks, in the same encoder.
                if gpu.encode_cpu_step_inputs(step, encoder).is_ok() {
                    job.cpu_step = Some((work.id, step, false));
                    self.cpu_steps_to_request.push((e, step));
                    return;
                }
            }
        }
        // The rest of the inference on the CPU model (from op 0 if the GPU had started it:
        // GPU activations are not copied back).
        let start_op = if job.on_cpu { work.ops.start } else { 0 };
        job.on_cpu = true;
        let cpu = c.cpu.clone();
        let [h, w, ch] = c.input;
        let pixels = job.pixels.clone();
        let size = job.frame_size;
        let crop = job.crop.to_gpu();
        let norm = inst.normalization;
        let ops = start_op..work.ops.end;
        let last = work.ops.end == c.steps;
        let tx = self.cpu_done.sender();
        let id = work.id;
        let clock = self.clock();
        self.pool.spawn(move || {
            let start_ms = clock();
            let run = || -> Result<Option<Vec<Vec<f32>>>, String> {
                let mut m = cpu.lock().map_err(|_| "CPU model poisoned".to_string())?;
                if ops.start == 0 {
                    let x = heimdall_gpu::preprocess::preprocess_cpu(
                        &pixels,
                        size.x as usize,
                        size.y as usize,
                        &crop,
                        &norm,
                        [h, w, ch],
                    )
                    .map_err(|e| e.to_string())?;
                    m.set_input(0, &x).map_err(|e| e.to_string())?;
                }
                m.run_range(ops.clone()).map_err(|e| e.to_string())?;
                if !last {
                    return Ok(None);
                }
                let n = m.output_shapes().len();
                (0..n)
                    .map(|i| m.output(i).map(<[f32]>::to_vec).map_err(|e| e.to_string()))
                    .collect::<Result<Vec<_>, _>>()
                    .map(Some)
            };
            let (outputs, error) = match run() {
                Ok(o) => (o, None),
                Err(e) => (None, Some(e)),
            };
            tx.send(CpuDone {
                entity: e,
                work: id,
                worker,
                start_ms,
                end_ms: clock(),
                outputs,
                error,
            })
            .ok();
        });
    }

    fn clock(&self) -> impl Fn() -> f64 + Send + 'static {
        let start = self.clock_start;
        move || start.elapsed().as_secs_f64() * 1e3
    }

    /// CPU fallback steps whose inputs arrived: run them on a worker.
    pub(super) fn run_ready_cpu_steps(&mut self) {
        for (e, inst) in &mut self.instances {
            let (Some(job), InstanceState::Ready(c)) = (inst.job.as_mut(), &inst.state) else {
                continue;
            };
            let Some((id, step, true)) = job.cpu_step else {
                continue;
            };
            let Some(gpu) = c.gpu.clone() else { continue };
            if !gpu.cpu_step_ready(step) {
                continue;
            }
            job.cpu_step = None;
            let tx = self.cpu_done.sender();
            let e = *e;
            let start = self.clock_start;
            let worker = self.pool.size() - self.pool.idle();
            let last = step + 1 == c.steps;
            if last {
                job.need_readback = true;
            }
            self.pool.spawn(move || {
                let start_ms = start.elapsed().as_secs_f64() * 1e3;
                let error = match gpu.run_cpu_step(step) {
                    Ok(true) => None,
                    Ok(false) => Some("inputs not ready".to_string()),
                    Err(err) => Some(err.to_string()),
                };
                tx.send(CpuDone {
                    entity: e,
                    work: id,
                    worker,
                    start_ms,
                    end_ms: start.elapsed().as_secs_f64() * 1e3,
                    outputs: None,
                    error,
                })
                .ok();
            });
        }
    }

    /// Reports finished CPU work to the coordinator; finished CPU inferences go to decoding.
    pub(super) fn collect_cpu_done(&mut self, shared: &HeimdallShared, now: f64) {
        for d in self.cpu_done.drain() {
            self.coordinator
                .cpu_done(d.work, d.worker, d.start_ms, d.end_ms.max(d.start_ms));
            if let Some(err) = d.error {
                error!("heimdall: {}: CPU work: {err}", self.name_of(d.entity));
                if let Some(inst) = self.instances.get_mut(&d.entity) {
                    inst.job = None;
                }
                continue;
            }
            if let Some(outputs) = d.outputs {
                self.finish_job(d.entity, outputs, Backend::Cpu, shared);
            }
        }
        let _ = now;
    }
}
