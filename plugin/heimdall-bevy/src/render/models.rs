//! The DNNs in the render world: each [`Dnn`] entity's model compiled for Bevy's own
//! `RenderDevice` (and always for the CPU, the fallback and offload target) on a background
//! task, warmed and profiled before its first inference, and the inference it has in flight.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bevy::prelude::*;
use bevy::render::Extract;
use bevy::render::sync_world::MainEntity;
use bevy::tasks::Task;
use bevy::tasks::futures::check_ready;
use heimdall_cpu::{CpuModel, CpuOptions};
use heimdall_gpu::{GpuContext, Precision};
use heimdall_vision::image::{Crop, Normalization};

use super::backend::InferenceBackend;
use super::background::BackgroundWork;
use super::cache::{GpuJob, compile_gpu};
use super::state::{CalibrationFrame, GuardPhase, GuardPlan, GuardStart};
pub(crate) use super::state::{
    Compiled, CpuPart, DnnQuery, DnnSetup, ExtractedDnn, Inference, Job, ModelState, ReadbackState,
    RenderDnnBundle, RenderDnnItem, RenderDnnReadOnlyItem, RenderDnns, RenderModel,
    min_interval_ms,
};
use crate::asset::DnnModel;
use crate::bridge::channel::{Outbox, RenderMessage};
use crate::dnn::{Backend, ConvCache, Dnn, DnnError, DnnStatus, InputCrop, RequestMode};
use crate::guard::{Calibration, GuardOutcome, GuardStatus};
use crate::settings::HeimdallSettings;

/// The DNNs' render entities as `extract_dnns` updates them: each one's main world's entity, the
/// DNN as extracted, and its model and guard once it compiles.
type ExtractedDnns<'w, 's> = Query<
    'w,
    's,
    (
        Entity,
        &'static MainEntity,
        &'static mut ExtractedDnn,
        Option<&'static RenderModel>,
        Option<&'static GuardPhase>,
    ),
>;

/// Extracts every [`Dnn`] onto its render entity ([`ExtractedDnn`]): a DNN new to the render
/// world gets an entity (with its main world's [`MainEntity`]); the entity of a DNN gone from
/// the main world is despawned, and its model leaves the coordination (`RenderDnns::removed`).
pub(crate) fn extract_dnns(
    mut commands: Commands,
    dnns: Extract<Query<(Entity, &Dnn)>>,
    models: Extract<Res<Assets<DnnModel>>>,
    images: Extract<Option<Res<Assets<Image>>>>,
    server: Extract<Res<AssetServer>>,
    mut render: ExtractedDnns,
    mut book: ResMut<RenderDnns>,
) {
    let mut entities = HashMap::new();
    for (r, main, _, d, _) in &render {
        if dnns.contains(main.id()) {
            entities.insert(main.id(), r);
        } else {
            book.removed.extend(d.and_then(|d| d.model_id));
            commands.entity(r).despawn();
        }
    }
    for (e, d) in &dnns {
        let model = models.get(&d.model);
        let existing = entities.get(&e).and_then(|&r| render.get_mut(r).ok());
        let awaiting = existing
            .as_ref()
            .and_then(|(.., g)| *g)
            .is_some_and(|g| matches!(g, GuardPhase::AwaitingInput { .. }));
        let calibration_image = match &d.calibration {
            Calibration::Image(handle) if awaiting => {
                calibration_frame(handle, d, model, images.as_deref(), &server)
            }
            _ => None,
        };
        let extracted = extracted_dnn(d, model, calibration_image);
        match existing {
            Some((_, _, mut x, ..)) => *x = extracted,
            None => {
                commands.spawn((MainEntity::from(e), extracted));
            }
        }
    }
}

/// Main-world DNN `d` (its model `model`, once loaded) as the render world sees it.
fn extracted_dnn(
    d: &Dnn,
    model: Option<&DnnModel>,
    calibration_image: Option<Result<CalibrationFrame, String>>,
) -> ExtractedDnn {
    ExtractedDnn {
        name: model.map(|m| m.name.clone()).unwrap_or_default(),
        model: d.model.id(),
        graph: model.map(|m| m.graph.clone()),
        source: d.source,
        normalization: d.normalization,
        conv_cache: d.conv_cache,
        roi: matches!(d.crop, InputCrop::Roi(_)),
        request_period_ms: match d.request {
            RequestMode::Every(p) => Some(p.as_secs_f64() * 1e3),
            RequestMode::Continuous | RequestMode::OnDemand => None,
        },
        on_demand: d.request == RequestMode::OnDemand,
        decoder: d.decoder.clone(),
        deadline_ms: d.deadline.map(|d| d.as_secs_f64() * 1e3),
        utility: d.utility,
        calibrate_on_frame: d.calibration == Calibration::FirstFrame,
        calibration_image,
    }
}

/// The app's calibration image as RGBA8 pixels with the DNN's crop ([`Calibration::Image`]):
/// `None` while it loads.
fn calibration_frame(
    handle: &Handle<Image>,
    dnn: &Dnn,
    model: Option<&DnnModel>,
    images: Option<&Assets<Image>>,
    server: &AssetServer,
) -> Option<Result<CalibrationFrame, String>> {
    let shown = || {
        handle
            .path()
            .map_or_else(|| format!("{:?}", handle.id()), |p| p.to_string())
    };
    if let Some(bevy::asset::LoadState::Failed(err)) = server.get_load_state(handle) {
        return Some(Err(format!("the calibration image {}: {err}", shown())));
    }
    let image = images?.get(handle)?;
    let (w, h) = (image.width(), image.height());
    let rgba8 = matches!(
        image.texture_descriptor.format,
        wgpu::TextureFormat::Rgba8Unorm | wgpu::TextureFormat::Rgba8UnormSrgb
    );
    let data = match &image.data {
        Some(d) if rgba8 => Some(d.clone()),
        Some(_) => image
            .convert(wgpu::TextureFormat::Rgba8UnormSrgb)
            .and_then(|i| i.data),
        None => None,
    };
    let Some(rgba) = data.filter(|d| d.len() == 4 * w as usize * h as usize && w > 0 && h > 0)
    else {
        return Some(Err(format!(
            "the calibration image {} ({:?}, {w}x{h}) has no 8-bit RGBA pixels in the main world",
            shown(),
            image.texture_descriptor.format
        )));
    };
    let crop = match dnn.crop {
        InputCrop::Letterbox => {
            let shape = model?.input_shape(0)?;
            let (mh, mw) = (*shape.get(1)? as u32, *shape.get(2)? as u32);
            Crop::letterbox(w, h, mw, mh)
        }
        InputCrop::Full | InputCrop::Roi(_) => Crop::FULL,
    };
    Some(Ok(CalibrationFrame {
        rgba: Arc::new(rgba),
        size: UVec2::new(w, h),
        crop,
    }))
}

/// One CPU piece's target time, ms: a model whose one-thread inference takes longer runs on
/// `ceil(t1 / CPU_PIECE_MS)` threads (see [`cpu_threads_for`]).
pub(crate) const CPU_PIECE_MS: f64 = 8.0;
/// The most threads one model's CPU inference runs on.
pub(crate) const MAX_CPU_THREADS: usize = 8;
/// The least speedup, measured at compile, for which a model keeps its threads: below it the
/// extra slots would buy nothing (a host with fewer free cores than it looks), and the model
/// runs on one thread.
pub(crate) const MIN_CPU_SPEEDUP: f64 = 1.2;

/// The CPU slots a DNN's model is compiled for ([`compile_cpu`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CpuShare {
    /// The pool's slots.
    pub slots: usize,
    /// It may take all of them (an on-demand DNN with `HeimdallSettings::events_take_all_slots`),
    /// not half.
    pub all_slots: bool,
}

/// The threads a model whose one-thread inference takes `t1_ms` runs on with `slots` CPU slots:
/// small models (up to [`CPU_PIECE_MS`]) one, so they run one per worker; bigger ones `ceil(t1 /
/// CPU_PIECE_MS)`, at most half the slots and [`MAX_CPU_THREADS`], at least 1. With `all_slots` (an
/// on-demand DNN) a model longer than two pieces may take every slot: it waits at most one piece of
/// continuous work (or an on-demand inference already running) to start (the coordinator cuts
/// continuous work into pieces while an on-demand model could need the slots it would take), and
/// continuous DNNs wait while it runs. On the H200 host's 4 cores (2 slots) multistyle26 ran in
/// 36–47 ms on two threads against 53–62 ms on one
/// (docs/measurements/contention/2026-12-02-h200-events/).
pub(crate) fn cpu_threads_for(t1_ms: f64, slots: usize, all_slots: bool) -> usize {
    if t1_ms.is_nan() || t1_ms <= CPU_PIECE_MS {
        return 1;
    }
    let want = (t1_ms / CPU_PIECE_MS).ceil().min(MAX_CPU_THREADS as f64) as usize;
    let cap = if all_slots && t1_ms > 2.0 * CPU_PIECE_MS {
        slots
    } else {
        slots / 2
    };
    want.min(cap).clamp(1, MAX_CPU_THREADS)
}

/// Zeros into every input of `cpu` (the profile's inputs).
fn zero_inputs(cpu: &mut CpuModel) -> Result<(), DnnError> {
    let zeros: Vec<Vec<f32>> = cpu
        .input_shapes()
        .iter()
        .map(|s| vec![0.0; s.iter().product()])
        .collect();
    for (i, z) in zeros.iter().enumerate() {
        cpu.set_input(i, z)
            .map_err(|e| DnnError::Compile(e.to_string()))?;
    }
    Ok(())
}

/// The most timed one-thread runs [`measure_steps`] makes.
pub(crate) const MEASURE_RUNS: usize = 3;
/// The one-thread runs [`measure_steps`] makes stop once they have taken this long together,
/// ms (a 480 ms text detector is timed once, a 9 ms palm detector three times).
pub(crate) const MEASURE_BUDGET_MS: f64 = 100.0;

/// Each step's one-thread time, ms: the fastest of up to [`MEASURE_RUNS`] timed runs of `cpu`
/// (at least one; they stop after [`MEASURE_BUDGET_MS`]). Models compile while the app starts,
/// beside the other models' compilation and the first frames: one timed run was an outlier often
/// enough to change a model's threads from run to run (palm detection, 8.7 ms in the steady
/// state, measured above two pieces on the H200 host's 4 cores and given both slots;
/// docs/measurements/contention/2026-12-03d-h200/).
fn measure_steps(cpu: &mut CpuModel, n: usize) -> Result<Vec<f64>, DnnError> {
    let mut best: Vec<f64> = Vec::new();
    let (mut runs, mut spent) = (0, 0.0);
    while more_runs(runs, spent) {
        let mut times = vec![Duration::ZERO; n];
        cpu.run_range_timed(0..n, Some(&mut times))
            .map_err(|e| DnnError::Compile(e.to_string()))?;
        let ms: Vec<f64> = times.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        spent += ms.iter().sum::<f64>();
        runs += 1;
        fastest_steps(&mut best, &ms);
    }
    Ok(best)
}

/// Whether [`measure_steps`] times another run after `runs` that took `spent_ms` together.
fn more_runs(runs: usize, spent_ms: f64) -> bool {
    runs == 0 || (runs < MEASURE_RUNS && spent_ms < MEASURE_BUDGET_MS)
}

/// Keeps in `best` each step's fastest time so far (`best` empty: the first run's).
fn fastest_steps(best: &mut Vec<f64>, run: &[f64]) {
    if best.is_empty() {
        best.extend_from_slice(run);
    } else {
        for (b, &t) in best.iter_mut().zip(run) {
            *b = b.min(t);
        }
    }
}

/// The fastest of `runs` whole runs of `cpu`, ms.
fn best_run_ms(cpu: &mut CpuModel, runs: usize) -> Result<f64, DnnError> {
    let mut best = f64::INFINITY;
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        cpu.run().map_err(|e| DnnError::Compile(e.to_string()))?;
        best = best.min(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(best)
}

/// Compiles `graph` for the CPU and measures its steps on one thread (one warm-up run, then the
/// fastest of a few timed runs: [`measure_steps`]); a model slower than [`CPU_PIECE_MS`] on one thread is compiled again for
/// [`cpu_threads_for`] threads of the `slots` and measured there (the fastest of two runs after
/// a warm-up), and keeps them if they make it at least [`MIN_CPU_SPEEDUP`] times faster. The
/// step costs stay one-thread times; the threads and the speedup go to the coordinator
/// (`set_cpu_parallelism`).
pub(crate) fn compile_cpu(
    graph: &heimdall_ir::Graph,
    share: CpuShare,
) -> Result<CpuPart, DnnError> {
    let &input = graph
        .inputs
        .first()
        .ok_or_else(|| DnnError::Input("the model has no input".into()))?;
    let shape = graph.tensor(input).shape.clone();
    let input3 = match shape.as_slice() {
        [1, h, w, c] if (1..=4).contains(c) => [*h, *w, *c],
        other => {
            return Err(DnnError::Input(format!(
                "camera input needs a [1, H, W, C≤4] first input, the model has {other:?}"
            )));
        }
    };
    let compile_err = |e: &dyn std::fmt::Display| DnnError::Compile(e.to_string());
    let mut cpu =
        CpuModel::compile(graph, CpuOptions { threads: 1 }).map_err(|e| compile_err(&e))?;
    let n = cpu.num_ops();
    let output_shapes = Arc::new(cpu.output_shapes().to_vec());
    zero_inputs(&mut cpu)?;
    cpu.run().map_err(|e| compile_err(&e))?;
    let cpu_ms = measure_steps(&mut cpu, n)?;
    let t1_ms: f64 = cpu_ms.iter().sum();
    let (mut threads, mut speedup) = (1, 1.0);
    let want = cpu_threads_for(t1_ms, share.slots, share.all_slots);
    if want > 1 {
        let mut par =
            CpuModel::compile(graph, CpuOptions { threads: want }).map_err(|e| compile_err(&e))?;
        zero_inputs(&mut par)?;
        par.run().map_err(|e| compile_err(&e))?;
        let tn_ms = best_run_ms(&mut par, 2)?;
        let measured = t1_ms / tn_ms.max(1e-6);
        info!(
            "heimdall: {}: CPU {t1_ms:.1} ms on 1 thread, {tn_ms:.1} ms on {want} \
             ({measured:.2}x){}",
            graph.name,
            if measured >= MIN_CPU_SPEEDUP {
                ""
            } else {
                "; too little: one thread"
            }
        );
        if measured >= MIN_CPU_SPEEDUP {
            (cpu, threads, speedup) = (par, want, measured);
        }
    }
    Ok(CpuPart {
        cpu: Arc::new(Mutex::new(cpu)),
        steps: n,
        input: input3,
        output_shapes,
        cpu_ms: Arc::new(cpu_ms),
        threads,
        speedup,
    })
}

/// Compiles `graph` for the CPU (always, on its share of the CPU slots: [`compile_cpu`]) and
/// the GPU (when `ctx`), measuring step costs; on the
/// GPU with the convolution cache `conv_cache` asks for, the second member telling whether the
/// crop is a region of interest (see [`compile_gpu`]), for runs at least `min_interval_ms`
/// apart. In reduced precision with `guard`, the GPU model is the one of a stored decision, or
/// f32 until the guard decides ([`GuardStart`]).
#[allow(clippy::too_many_arguments)]
fn compile(
    graph: Arc<heimdall_ir::Graph>,
    ctx: Option<GpuContext>,
    cpu_share: CpuShare,
    precision: Precision,
    norm: Normalization,
    (conv_cache, roi): (ConvCache, bool),
    min_interval_ms: f64,
    guard: Option<GuardPlan>,
) -> Result<(Compiled, GuardStart), DnnError> {
    let cpu = compile_cpu(&graph, cpu_share)?;
    let Some(ctx) = ctx else {
        return Ok((Compiled::assemble(cpu, None), GuardStart::Off));
    };
    // Kernels that bind more than the device allows (a phone's 4 storage buffers per shader
    // stage), known before compiling: the model runs on the CPU backend, and says why.
    let options = heimdall_gpu::GpuOptions::new(precision);
    if let Err(heimdall_gpu::GpuError::Limits(e)) =
        heimdall_gpu::check_limits(&ctx, &graph, &options)
    {
        let mut compiled = Compiled::assemble(cpu, None);
        compiled.cpu_fallback = Some(format!("{} cannot run it: {e}", ctx.info.name));
        return Ok((compiled, GuardStart::Off));
    }
    let start = match guard.filter(|_| precision != Precision::F32) {
        Some(plan) => super::guard::start(&ctx, &graph, precision, &plan),
        None => GuardStart::Off,
    };
    let (precision, overrides, cache) = match &start {
        GuardStart::Off => (precision, Vec::new(), conv_cache),
        GuardStart::Reused(d) => (precision, d.overrides.clone(), conv_cache),
        // The f32 model only runs until the guarded one replaces it: no cache to calibrate.
        GuardStart::Pending { .. } => (Precision::F32, Vec::new(), ConvCache::Off),
    };
    let zeros = cpu.zeros();
    let refs: Vec<&[f32]> = zeros.iter().map(Vec::as_slice).collect();
    let gpu = compile_gpu(&GpuJob {
        ctx: &ctx,
        graph: &graph,
        precision,
        overrides,
        norm,
        channels: cpu.input[2],
        cache,
        roi,
        min_interval_ms,
        inputs: &refs,
    })?;
    Ok((Compiled::assemble(cpu, Some(gpu)), start))
}

/// The render entities of the DNNs, each with its main world's entity, as extracted, and what
/// it was compiled with, its model and guard once it compiles.
type PreparedDnns<'w, 's> = Query<
    'w,
    's,
    (
        Entity,
        &'static MainEntity,
        &'static ExtractedDnn,
        Option<(
            &'static mut DnnSetup,
            &'static mut RenderModel,
            &'static Inference,
            &'static mut GuardPhase,
        )>,
    ),
>;

/// Starts compiling new DNNs (and those whose model, source or convolution cache changed: a
/// change recompiles, and the old model leaves the coordination, `RenderDnns::removed`), picks
/// up finished compilations and advances the guards.
#[allow(clippy::too_many_arguments)]
pub(crate) fn prepare_models(
    mut commands: Commands,
    mut dnns: PreparedDnns,
    mut book: ResMut<RenderDnns>,
    backend: Res<InferenceBackend>,
    settings: Res<HeimdallSettings>,
    outbox: Res<Outbox>,
    work: Res<BackgroundWork>,
) {
    let book = &mut *book;
    // Render entities whose model went away (before any new one is inserted), and the new
    // models of this frame, inserted once polled.
    let mut dropped = Vec::new();
    let mut added = Vec::new();
    for (r, main, x, d) in &mut dnns {
        if let Some((mut existing, model, ..)) = d {
            if same_model(x, &existing) {
                // Settings that may change while it runs.
                existing.decoder = x.decoder.clone();
                existing.deadline_ms = x.deadline_ms;
                existing.utility = x.utility;
                existing.on_demand = x.on_demand;
                continue;
            }
            book.removed.extend(model.model_id);
            dropped.push(r);
        }
        let Some(graph) = x.graph.clone() else {
            continue; // the asset is still loading (or failed: the main world reports it)
        };
        let task = spawn_compile(x, graph, &backend, &settings, &work);
        added.push((
            r,
            main.id(),
            compiling_dnn(book, main.id(), x, task, &outbox),
            GuardPhase::Idle,
        ));
    }
    for (r, main, _, d) in &mut dnns {
        if let Some((setup, mut model, run, mut guard)) = d.filter(|_| !dropped.contains(&r)) {
            let on = (main.id(), &*setup, run);
            poll_compile(on, &mut model, &mut guard, book, &outbox);
        }
    }
    for (_, main, (setup, model, run), guard) in &mut added {
        poll_compile((*main, setup, run), model, guard, book, &outbox);
    }
    let ctx = backend.gpu();
    for (r, main, x, d) in &mut dnns {
        if let Some((setup, model, _, mut guard)) = d.filter(|_| !dropped.contains(&r)) {
            let on = (main.id(), x, &*setup, &*model);
            super::guard::advance(on, &mut guard, ctx, &settings, &outbox, &work);
        }
    }
    for (r, main, dnn, mut guard) in added {
        if let Ok((.., x, _)) = dnns.get(r) {
            let on = (main, x, &dnn.0, &dnn.1);
            super::guard::advance(on, &mut guard, ctx, &settings, &outbox, &work);
        }
        dropped.retain(|&e| e != r);
        commands.entity(r).insert((dnn, guard));
    }
    for r in dropped {
        commands.entity(r).remove::<(RenderDnnBundle, GuardPhase)>();
    }
}

/// Whether a DNN compiled as `d` was compiled for the model, source and convolution cache
/// extracted as `x`.
fn same_model(x: &ExtractedDnn, d: &DnnSetup) -> bool {
    x.model == d.model && x.source == d.source && (x.conv_cache, x.roi) == d.conv_cache
}

/// Picks up the compilation of DNN `main` (its main-world entity, compiled as `setup`, its
/// inference `run`) into `model` if it finished; a ready one is registered with the
/// coordinator at this frame's planning (`RenderDnns::newly_ready`).
fn poll_compile(
    (main, setup, run): (Entity, &DnnSetup, &Inference),
    model: &mut RenderModel,
    guard: &mut GuardPhase,
    book: &mut RenderDnns,
    outbox: &Outbox,
) {
    let ModelState::Compiling(task) = &mut model.state else {
        return;
    };
    let Some(result) = check_ready(task) else {
        return;
    };
    if on_compiled((main, setup, run), model, guard, result, outbox) {
        book.newly_ready.push(main);
    }
}

/// What compiling a DNN's model yields: the compiled model and where its guard starts.
type CompileTask = Task<Result<(Compiled, GuardStart), DnnError>>;

/// Compiles extracted DNN `d`'s model `graph` on a background task, for Bevy's device (when the
/// backend has one) and the CPU, with the settings' precision, CPU slots and guard.
fn spawn_compile(
    d: &ExtractedDnn,
    graph: Arc<heimdall_ir::Graph>,
    backend: &InferenceBackend,
    settings: &HeimdallSettings,
    work: &BackgroundWork,
) -> CompileTask {
    let ctx = backend.gpu().cloned();
    let cpu_share = CpuShare {
        slots: settings.cpu_slots(),
        all_slots: d.on_demand && settings.events_take_all_slots,
    };
    let (precision, norm, cache) = (settings.precision, d.normalization, d.conv_cache);
    let roi = d.roi;
    let min_interval_ms = min_interval_ms(settings, d.request_period_ms);
    let guard = settings.guard.clone().map(|config| GuardPlan {
        config,
        store: settings.guard_store.clone(),
    });
    let name = d.name.clone();
    work.spawn(async move {
        let (waits, since) = (heimdall_gpu::waits_on_this_thread(), Instant::now());
        // A panic while compiling (a device lost under the profile's readbacks) fails this
        // DNN, not the render world that polls the task.
        let compiled = crate::faults::catch(|| {
            compile(
                graph,
                ctx,
                cpu_share,
                precision,
                norm,
                (cache, roi),
                min_interval_ms,
                guard,
            )
        })
        .unwrap_or_else(|m| Err(crate::faults::panicked("compiling it", &m)));
        // Each wait for the GPU also waits for the frames queued before it: the count says
        // what the start-up costs beside a busy renderer.
        info!(
            "heimdall: {name}: compile task {:.0} ms, {} GPU waits",
            since.elapsed().as_secs_f64() * 1e3,
            heimdall_gpu::waits_on_this_thread() - waits
        );
        compiled
    })
}

/// DNN `e` (its main-world entity; extracted as `d`) while `task` compiles its model, with the
/// next instance index; tells the main world it is compiling.
fn compiling_dnn(
    book: &mut RenderDnns,
    e: Entity,
    d: &ExtractedDnn,
    task: CompileTask,
    outbox: &Outbox,
) -> RenderDnnBundle {
    let index = book.next_index;
    book.next_index += 1;
    outbox.send(RenderMessage::Status(e, DnnStatus::Compiling));
    outbox.send(RenderMessage::Instance(index, d.name.clone()));
    let setup = DnnSetup {
        index,
        name: d.name.clone(),
        model: d.model,
        source: d.source,
        decoder: d.decoder.clone(),
        normalization: d.normalization,
        conv_cache: (d.conv_cache, d.roi),
        deadline_ms: d.deadline_ms,
        utility: d.utility,
        on_demand: d.on_demand,
    };
    let run = Inference {
        calibrate_on_frame: d.calibrate_on_frame,
        ..Inference::default()
    };
    (setup, RenderModel::compiling(task), run)
}

/// DNN `e`'s compilation finished with `result`: it becomes ready (the main world hears its
/// backend, convolution cache, CPU fallback and guard, which starts in `guard`) or failed.
/// Whether it is ready (to register with the coordinator).
fn on_compiled(
    (e, d, run): (Entity, &DnnSetup, &Inference),
    model: &mut RenderModel,
    guard: &mut GuardPhase,
    result: Result<(Compiled, GuardStart), DnnError>,
    outbox: &Outbox,
) -> bool {
    let (compiled, start) = match result {
        Ok(ready) => ready,
        Err(error) => {
            error!("heimdall: {} cannot run: {error}", d.name);
            model.state = ModelState::Failed;
            outbox.send(RenderMessage::Status(e, DnnStatus::Failed(error)));
            return false;
        }
    };
    let on = if compiled.gpu.is_some() {
        Backend::Gpu
    } else {
        Backend::Cpu
    };
    report_compiled(e, &d.name, &compiled, outbox);
    model.state = ModelState::Ready(Box::new(compiled));
    outbox.send(RenderMessage::Status(e, DnnStatus::Ready(on)));
    let status = guard_status((&d.name, run.calibrate_on_frame), guard, start);
    outbox.send(RenderMessage::Guard(e, status));
    true
}

/// Logs where DNN `e` (`name`) compiled and tells the main world its convolution cache's
/// decision and its CPU fallback, if any.
fn report_compiled(e: Entity, name: &str, compiled: &Compiled, outbox: &Outbox) {
    if let Some(g) = &compiled.gpu {
        info!(
            "heimdall: {} compiled for {} in {:.0} ms ({} steps)",
            name,
            g.context().info.name,
            g.report().compile_time.as_secs_f64() * 1e3,
            compiled.steps
        );
        if let Some(decision) = &compiled.cache_decision {
            let ops = g.report().cached_ops.len();
            info!("heimdall: {}: convolution cache {decision}", name);
            outbox.send(RenderMessage::ConvCacheDecision {
                dnn: e,
                decision: decision.clone(),
                cached_ops: ops,
            });
        }
    }
    if let Some(why) = &compiled.cpu_fallback {
        warn!("heimdall: {} runs on the CPU backend: {why}", name);
        outbox.send(RenderMessage::CpuFallback(e, why.clone()));
    }
}

/// Where a newly compiled DNN's accuracy guard starts: off, waiting for its calibration input
/// (the DNN runs in f32 meanwhile), or decided by a stored decision, for DNN `name` (`on_frame`:
/// its guard calibrates on its first input).
fn guard_status(
    (name, on_frame): (&str, bool),
    guard: &mut GuardPhase,
    start: GuardStart,
) -> GuardStatus {
    match start {
        GuardStart::Off => GuardStatus::Off,
        GuardStart::Pending { key } => {
            info!(
                "heimdall: {}: f16 guard: runs in f32 until checked on its {}",
                name,
                if on_frame {
                    "first input"
                } else {
                    "calibration image"
                }
            );
            *guard = GuardPhase::AwaitingInput { key };
            GuardStatus::Pending
        }
        GuardStart::Reused(decision) => {
            info!("{} (stored: no check)", decision.log_line(name));
            GuardStatus::Decided(GuardOutcome {
                decision: Arc::new(*decision),
                reused: true,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CPU costs on a 16-core host (13 slots): hands 4.5-7 ms, selfie 3 ms one
    /// thread each; SSD 26 ms 4 threads; multistyle26 46 ms 6 (half the slots); a 100 ms model 8
    /// at most. With 1 slot (4 cores), everything on one thread.
    #[test]
    fn big_models_get_threads_small_ones_one() {
        for (t1, slots, threads) in [
            (3.0, 13, 1),
            (7.0, 13, 1),
            (8.0, 13, 1),
            (9.0, 13, 2),
            (26.0, 13, 4),
            (46.0, 13, 6),
            (46.0, 20, 6),
            (100.0, 20, 8),
            (100.0, 64, 8),
            (46.0, 1, 1),
            (46.0, 3, 1),
            (46.0, 4, 2),
            (f64::NAN, 13, 1),
            (f64::INFINITY, 13, 6),
        ] {
            assert_eq!(
                cpu_threads_for(t1, slots, false),
                threads,
                "{t1} ms, {slots} slots"
            );
        }
    }

    /// An on-demand model (multistyle26, 46 ms on one thread) takes every slot of a phone's two
    /// or three, and no more than it wants on a host; one of two pieces or less (palm detection,
    /// 9-12 ms) keeps to half, as continuous models.
    #[test]
    fn an_on_demand_model_longer_than_two_pieces_may_take_every_slot() {
        for (t1, slots, threads) in [
            (46.0, 2, 2),
            (46.0, 3, 3),
            (46.0, 14, 6),
            (100.0, 64, 8),
            (12.0, 2, 1),
            (16.0, 2, 1),
            (17.0, 2, 2),
            (7.0, 14, 1),
            (f64::NAN, 2, 1),
        ] {
            assert_eq!(
                cpu_threads_for(t1, slots, true),
                threads,
                "{t1} ms, {slots} slots"
            );
        }
    }

    /// Palm detection's steps as measured in the steady state (8.7 ms) and once beside the
    /// start-up's compilation (twice as slow, one step nine times): its threads on 2 slots come
    /// from the fastest time of each step, one (half the slots), as in the steady state; the slow
    /// run alone would have given it both slots.
    #[test]
    fn a_slow_timed_run_at_start_up_does_not_change_the_threads() {
        let steady = [2.9, 3.1, 2.7];
        let slow = [2.9 * 9.0, 3.1, 2.7];
        let t1 = |steps: &[f64]| steps.iter().sum::<f64>();
        assert_eq!(cpu_threads_for(t1(&slow), 2, true), 2);
        for order in [
            [&slow, &steady, &slow],
            [&steady, &slow, &slow],
            [&slow, &slow, &steady],
        ] {
            let mut best = Vec::new();
            let (mut runs, mut spent) = (0, 0.0);
            for run in order {
                if !more_runs(runs, spent) {
                    break;
                }
                fastest_steps(&mut best, run);
                spent += t1(run);
                runs += 1;
            }
            assert_eq!(runs, MEASURE_RUNS, "{order:?}");
            assert_eq!(best, steady, "{order:?}");
            assert_eq!(cpu_threads_for(t1(&best), 2, true), 1, "{order:?}");
        }
    }

    /// A slow model is timed once: the runs stop at the budget.
    #[test]
    fn a_slow_model_is_timed_once() {
        assert!(more_runs(0, 0.0));
        assert!(!more_runs(1, 480.0));
        assert!(more_runs(1, 9.0) && more_runs(2, 18.0) && !more_runs(3, 27.0));
    }
}
