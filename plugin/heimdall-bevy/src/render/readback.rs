//! Results coming back, never waiting on the GPU on the frame path: after the frame's submission
//! the output copies and the timestamps are mapped (`map_async`); a readback thread polls the
//! device (without blocking it: a blocking wait would hold the lock that `queue.submit` needs)
//! until the outputs are there and copies them out; a decode thread ([`super::decode_pool`])
//! decodes them and sends the result to the main world at once. The render world then learns
//! that the DNN is idle again, and collects finished CPU work.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bevy::prelude::*;
use bevy::render::sync_world::MainEntity;
use crossbeam_channel::{Receiver, Sender, TryRecvError, TrySendError, bounded};
use heimdall_gpu::GpuModel;

use super::backend::InferenceBackend;
use super::cpu::run_ready_cpu_steps;
use super::decode_pool::DecodePool;
use super::finish::Finish;
use super::guard::GuardPhase;
use super::models::{
    DnnQuery, ModelState, ReadbackState, RenderDnnBundle, RenderDnns, RenderModel,
};
use super::recording::RunEvent;
use super::schedule::Scheduler;
use super::state::{dnn_mut, finish_of, name_of};
use crate::bridge::channel::{ConvCacheRun, FailedDnns, Outbox, RenderMessage};
use crate::bridge::readback_device::ReadbackDevice;
use crate::clock::HeimdallClock;
use crate::dnn::Backend;
use crate::faults::{ExtractedRestarts, HeimdallFaults, READBACK_QUEUE};
use crate::settings::HeimdallSettings;
use crate::workers::{Mailbox, Workers};

/// How long a readback may take before it is given up (a lost device).
const READBACK_TIMEOUT: Duration = Duration::from_secs(10);
/// Time between two polls of the device while readbacks are pending.
const POLL_EVERY: Duration = Duration::from_micros(300);

/// One readback to wait for.
struct Pending {
    gpu: Arc<GpuModel>,
    finish: Finish,
    since: Instant,
    /// Output elements to copy out (smaller outputs are read first).
    elements: usize,
}

/// A readback that ended: the DNN is idle again.
pub(crate) struct ReadbackDone {
    pub dnn: Entity,
    pub error: Option<String>,
    /// The run's convolution cache hit rate (for the coordinator's expected costs).
    pub cache_hit: Option<f64>,
    /// When the outputs were read (ms on the plugin's clock; `None` when they were not).
    pub read_ms: Option<f64>,
}

/// The readback thread (render world).
#[derive(Resource)]
pub(crate) struct ReadbackWaiter {
    tx: Option<Sender<Pending>>,
    pub done: Mailbox<ReadbackDone>,
    thread: Option<JoinHandle<()>>,
    device: ReadbackDevice,
}

impl ReadbackWaiter {
    /// The render device readbacks belong to from now on: pending readbacks of another device
    /// (a lost one) are dropped unread.
    pub fn set_device(&self, device: Option<wgpu::Device>) {
        self.device.set(device);
    }

    /// The handle on the device readbacks belong to, for the render world's resources (the
    /// device-error handler clears it when the device is lost).
    pub fn device(&self) -> ReadbackDevice {
        self.device.clone()
    }
}

impl ReadbackWaiter {
    /// Starts the readback thread; with `decode_threads` > 0 the outputs it reads are decoded
    /// on that many decode threads ([`HeimdallSettings::parallel_decode`]), with 0 on the
    /// readback thread itself, one after another. Its queue holds [`READBACK_QUEUE`] readbacks.
    pub fn new(decode_threads: usize, faults: HeimdallFaults) -> Self {
        let (tx, rx) = bounded::<Pending>(READBACK_QUEUE);
        let done = Mailbox::default();
        let done_tx = done.sender();
        let device = ReadbackDevice::default();
        let current = device.clone();
        let thread = std::thread::Builder::new()
            .name("heimdall-readback".into())
            .spawn(move || {
                let decoders =
                    (decode_threads > 0).then(|| DecodePool::new(decode_threads, faults));
                wait_loop(rx, done_tx, current, decoders)
            })
            .ok();
        ReadbackWaiter {
            tx: Some(tx),
            done,
            thread,
            device,
        }
    }
}

impl Drop for ReadbackWaiter {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn wait_loop(
    rx: Receiver<Pending>,
    done: Sender<ReadbackDone>,
    current: ReadbackDevice,
    mut decoders: Option<DecodePool<Entity>>,
) {
    let mut pending: Vec<Pending> = Vec::new();
    loop {
        let before = pending.len();
        if pending.is_empty() {
            match rx.recv() {
                Ok(p) => pending.push(p),
                Err(_) => return,
            }
        }
        loop {
            match rx.try_recv() {
                Ok(p) => pending.push(p),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return,
            }
        }
        if pending.len() > before && pending.len() > 1 {
            // Of the outputs ready in one poll, the small ones are copied out first: a hand's
            // 63 landmarks do not wait for the copy of a text detector's whole-frame map
            // (sorted when readbacks arrive, not at every poll).
            pending.sort_by_key(|p| p.elements);
        }
        if let Some(p) = pending.first() {
            // Runs the map callbacks that are due; never waits on the GPU. (A device lost under
            // it may make wgpu panic: the readbacks then time out or are dropped below.)
            let _ = crate::faults::catch(|| p.gpu.context().device.poll(wgpu::PollType::Poll));
        }
        let device = current.current();
        pending.retain(|p| {
            let alive = device.as_ref() == Some(&p.gpu.context().device);
            // A panic here (a decoder on this thread, wgpu) fails this DNN, not the thread.
            let step = crate::faults::catch(|| finish_one(p, alive, decoders.as_mut()));
            let done_now = match step {
                Ok(None) => return true,
                Ok(Some(done)) => done,
                Err(message) => {
                    let error = crate::faults::panicked("reading back its outputs", &message);
                    p.finish.outbox.fail(p.finish.dnn, error.clone());
                    ReadbackDone {
                        dnn: p.finish.dnn,
                        error: Some(error.to_string()),
                        cache_hit: None,
                        read_ms: None,
                    }
                }
            };
            let _ = done.send(done_now);
            false
        });
        if !pending.is_empty() {
            std::thread::sleep(POLL_EVERY);
        }
    }
}

/// Finishes `p` if its outputs are there (or it failed): hands them to a decode thread
/// (`decoders`, else decodes them here) and says what became of the readback; `None` while
/// they are not there yet.
fn finish_one(
    p: &Pending,
    alive: bool,
    decoders: Option<&mut DecodePool<Entity>>,
) -> Option<ReadbackDone> {
    let result = match take(p, alive) {
        Ok(None) if p.since.elapsed() < READBACK_TIMEOUT => return None,
        Ok(None) => Err(format!(
            "no outputs after {} s (device lost?)",
            READBACK_TIMEOUT.as_secs()
        )),
        // The cache's counters were read back with the outputs.
        Ok(Some(outputs)) => Ok((outputs, conv_cache_of(&p.gpu))),
        Err(e) => Err(e),
    };
    let dnn = p.finish.dnn;
    let (error, cache_hit, read_ms) = match result {
        Ok((outputs, cache)) => {
            let hit = cache.as_ref().map(|c| c.counts.hit_rate());
            let read = p.finish.clock.now_ms();
            let finish = p.finish.clone();
            match decoders {
                Some(pool) => {
                    // Dropped undecoded (a newer result of the DNN takes its place), the
                    // inference gives up its frame's pin.
                    let pin = finish.pins.pending(dnn, finish.frame_index);
                    pool.run(dnn, move || {
                        pin.sent();
                        finish.send_ready_at(outputs, Backend::Gpu, cache, read)
                    })
                }
                None => finish.send_ready_at(outputs, Backend::Gpu, cache, read),
            }
            (None, hit, Some(read))
        }
        Err(e) => (Some(e), None, None),
    };
    Some(ReadbackDone {
        dnn,
        error,
        cache_hit,
        read_ms,
    })
}

/// The convolution cache's counts of the run whose outputs were just taken (`None`: off).
fn conv_cache_of(gpu: &GpuModel) -> Option<ConvCacheRun> {
    let counts = gpu.conv_cache_counts()?;
    Some(ConvCacheRun {
        counts,
        cached_ops: gpu.report().cached_ops.len(),
        saved_ms: (gpu.conv_cache())
            .and_then(|c| c.calibration())
            .map(|c| c.saved_ms(counts.hit_rate())),
    })
}

/// The outputs of `p` if its device is the current one. A device lost between this check and
/// the read makes wgpu panic inside `get_mapped_range`: that panic is caught here and reported as
/// a lost readback (the plugin rebuilds on the new device at the next frame).
fn take(p: &Pending, alive: bool) -> Result<Option<Vec<Vec<f32>>>, String> {
    if !alive {
        return Err("the device was lost; the result is dropped".into());
    }
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| p.gpu.take_outputs())) {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(_) => Err("the device was lost while reading the outputs".into()),
    }
}

/// After the frame's submission: maps the timestamps encoded this frame and, when the DNN work
/// went into the frame's own submission, its output copies and CPU steps' inputs
/// ([`map_outputs`]); runs the map callbacks that are due.
pub(crate) fn map_after_submit(
    mut dnns: DnnQuery,
    mut backend: ResMut<InferenceBackend>,
    waiter: Res<ReadbackWaiter>,
    outbox: Res<Outbox>,
    settings: Res<HeimdallSettings>,
    clock: Res<HeimdallClock>,
) {
    let _span = info_span!("heimdall::readback_map").entered();
    if let Some(t) = backend.timer.as_mut() {
        t.after_submit();
    }
    if settings.dnn_work_first {
        // The outputs were mapped after their own submission; only poll.
        if let Some(ctx) = backend.gpu() {
            let _ = ctx.device.poll(wgpu::PollType::Poll);
        }
        return;
    }
    map_outputs(&mut dnns, &backend, &waiter, &outbox, *clock);
}

/// Maps the output copies and CPU steps' input downloads just submitted, hands each readback
/// to the readback thread and runs map callbacks that are due (never waits).
pub(crate) fn map_outputs(
    dnns: &mut DnnQuery,
    backend: &InferenceBackend,
    waiter: &ReadbackWaiter,
    outbox: &Outbox,
    clock: HeimdallClock,
) {
    let submitted_ms = clock.now_ms();
    for (main, mut d) in dnns.iter_mut() {
        let e = main.id();
        // What the readback thread needs to finish the inference: only for a readback to hand
        // over (it clones the name, shapes and decoder).
        let finish = d
            .run
            .job
            .as_ref()
            .is_some_and(|j| j.readback == ReadbackState::Encoded)
            .then(|| finish_of(e, d.setup, &d.model, &d.run, outbox, clock))
            .flatten()
            .map(|mut f| {
                f.stages.submitted_ms = Some(submitted_ms);
                f
            });
        let (Some(job), ModelState::Ready(c)) = (d.run.job.as_mut(), &d.model.state) else {
            continue;
        };
        let Some(gpu) = &c.gpu else { continue };
        if job.readback == ReadbackState::Encoded {
            match gpu.request_readback() {
                Ok(()) => {
                    job.readback = ReadbackState::Requested;
                    if let (Some(tx), Some(finish)) = (&waiter.tx, finish) {
                        let elements = finish
                            .shapes
                            .iter()
                            .map(|s| s.iter().product::<usize>())
                            .sum();
                        let pending = Pending {
                            gpu: gpu.clone(),
                            finish,
                            since: Instant::now(),
                            elements,
                        };
                        let queue = &outbox.faults().queues().readback;
                        match tx.try_send(pending) {
                            Ok(()) => queue.depth(tx.len()),
                            Err(TrySendError::Full(p) | TrySendError::Disconnected(p)) => {
                                // Given up: the DNN is idle again at the next collection.
                                queue.drop_one();
                                let _ = waiter.done.sender().send(ReadbackDone {
                                    dnn: p.finish.dnn,
                                    error: Some("the readback queue is full".into()),
                                    cache_hit: None,
                                    read_ms: None,
                                });
                            }
                        }
                    }
                }
                Err(e) => error!("heimdall: {}: readback: {e}", d.setup.name),
            }
        }
        if let Some((_, step, requested)) = job.cpu_step.as_mut()
            && !*requested
        {
            match gpu.cpu_steps().request_inputs(*step) {
                Ok(()) => *requested = true,
                Err(e) => error!("heimdall: {}: CPU step {step}: {e}", d.setup.name),
            }
        }
        if let Some(r) = job.resume.as_mut()
            && !r.requested
        {
            match r.download.request() {
                Ok(()) => r.requested = true,
                Err(e) => error!("heimdall: {}: resuming on the CPU: {e}", d.setup.name),
            }
        }
    }
    if let Some(ctx) = backend.gpu() {
        // Runs map callbacks that are due; never waits.
        let _ = ctx.device.poll(wgpu::PollType::Poll);
    }
}

/// DNNs asked to restart ([`crate::faults::RestartDnn`]) are dropped here, so that
/// `prepare_models` compiles them again as new ones (their coordinator models are retired).
pub(crate) fn restart_dnns(
    mut commands: Commands,
    restarts: Res<ExtractedRestarts>,
    dnns: Query<(Entity, &MainEntity, &RenderModel)>,
    mut book: ResMut<RenderDnns>,
) {
    for (r, main, model) in &dnns {
        if restarts.0.contains(&main.id()) {
            book.removed.extend(model.model_id);
            commands.entity(r).remove::<(RenderDnnBundle, GuardPhase)>();
        }
    }
}

/// Stops `dnn` for good (until it restarts): no job, no coordinator model, no compiled model.
fn stop(dnns: &mut DnnQuery, book: &mut RenderDnns, dnn: Entity) {
    if let Some(mut d) = dnn_mut(dnns, dnn) {
        d.run.job = None;
        d.run.pending = None;
        book.removed.extend(d.model.model_id.take());
        d.model.state = ModelState::Failed;
    }
}

/// Frees the DNNs whose results went out (GPU readbacks and finished CPU inferences), reports
/// CPU work to the coordinator and starts CPU steps whose inputs arrived; stops the DNNs that
/// failed on another thread (a panic).
#[allow(clippy::too_many_arguments)]
pub(crate) fn collect_outputs(
    settings: Res<HeimdallSettings>,
    mut dnns: DnnQuery,
    mut book: ResMut<RenderDnns>,
    mut sched: ResMut<Scheduler>,
    waiter: Res<ReadbackWaiter>,
    workers: Res<Workers>,
    clock: Res<HeimdallClock>,
    failed: Res<FailedDnns>,
    outbox: Res<Outbox>,
) {
    let _span = info_span!("heimdall::collect_outputs").entered();
    for done in waiter.done.drain() {
        if let Some(err) = &done.error {
            error!("heimdall: {}: readback: {err}", name_of(&dnns, done.dnn));
        }
        if let Some(mut d) = dnn_mut(&mut dnns, done.dnn) {
            d.run.job = None;
            // The recording's hit rate of this inference, before it completes there.
            if let (Some(hit), Some(id)) = (done.cache_hit, d.model.model_id) {
                sched.events.record(|| RunEvent::CacheHit(id, hit));
            }
            // Read outputs mean the GPU finished the whole inference: the coordinator frees the
            // model now, not when the frame's timestamps come back (after the scene), which
            // made a DNN asked every frame run every other frame.
            if let (true, Some(read), Some(id)) =
                (settings.free_at_readback, done.read_ms, d.model.model_id)
            {
                sched.gpu_outputs_read(id, read);
            }
            // Cached runs get cheaper: the coordinator's expected costs follow the hit rate.
            if let (Some(hit), Some(id)) = (done.cache_hit, d.model.model_id) {
                sched.coordinator.report_cache_hits(id, hit);
            }
        }
    }
    for report in workers.done.drain() {
        if let Some(times) = report.times {
            outbox.send(RenderMessage::CpuRun {
                dnn: report.entity,
                times,
            });
        }
        sched.cpu_done(
            report.work,
            report.worker,
            report.start_ms,
            report.end_ms.max(report.start_ms),
        );
        if let Some(err) = &report.error {
            // A CPU job that panicked fails its DNN.
            outbox.cpu_work_error(&name_of(&dnns, report.entity), report.entity, err);
        }
        if (report.error.is_some() || report.finished)
            && let Some(mut d) = dnn_mut(&mut dnns, report.entity)
        {
            d.run.job = None;
        }
    }
    for (dnn, _) in failed.0.try_iter() {
        stop(&mut dnns, &mut book, dnn);
    }
    run_ready_cpu_steps(&mut dnns, &workers, *clock);
}
