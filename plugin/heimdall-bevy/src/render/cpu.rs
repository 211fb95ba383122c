//! CPU work of the coordinator on the worker pool: a step the GPU backend cannot run (its
//! inputs downloaded after this frame's chunks), or (the rest of) an inference on the CPU model
//! (offloaded by the coordinator, or the CPU-only mode). Nothing here waits on a worker.

use bevy::prelude::*;
use heimdall_coordinator::{CpuWork, Resume};
use heimdall_gpu::Placement;

use super::cpu_run::{
    CpuInput, CpuRun, CpuSink, SharedCpuModel, spawn_cpu_run, start_cpu_piece, work_slots,
};
use super::models::{DnnQuery, DnnSetup, Inference, ModelState, RenderModel};
use super::schedule::Scheduler;
use super::state::ResumeJob;
use super::state::{dnn_of_model, finish_of};
use crate::bridge::channel::Outbox;
use crate::clock::HeimdallClock;
use crate::workers::{CpuDone, WorkerPool, Workers};

/// Hands `work` to a worker. A fallback step's inputs are downloaded in `encoder` after this
/// frame's chunks; it runs once they arrive ([`run_ready_cpu_steps`]). An inference that ends on
/// the worker is decoded and sent to the main world from there.
#[allow(clippy::too_many_arguments)]
pub(crate) fn dispatch_cpu(
    work: CpuWork,
    now: f64,
    encoder: &mut wgpu::CommandEncoder,
    dnns: &mut DnnQuery,
    sched: &mut Scheduler,
    workers: &Workers,
    clock: HeimdallClock,
    outbox: &Outbox,
) {
    let _span = info_span!("heimdall::cpu_dispatch", model = work.model.0).entered();
    let Some((e, mut d)) = dnn_of_model(dnns, work.model) else {
        sched.cpu_done(work.id, 0, now, now);
        return;
    };
    let worker = workers.pool.size() - workers.pool.idle();
    let finish = finish_of(e, d.setup, &d.model, &d.run, outbox, clock);
    let (Some(job), ModelState::Ready(c)) = (d.run.job.as_mut(), &d.model.state) else {
        sched.cpu_done(work.id, worker, now, now);
        return;
    };
    let fallback_step = c.gpu.is_some()
        && !job.on_cpu
        && !work.offloaded
        && work.ops.len() == 1
        && c.placement.get(work.ops.start) == Some(&Placement::Cpu);
    if fallback_step
        && let Some(gpu) = &c.gpu
        && gpu
            .cpu_steps()
            .encode_inputs(work.ops.start, encoder)
            .is_ok()
    {
        job.cpu_step = Some((work.id, work.ops.start, false));
        return;
    }
    if let Some(gpu) = &c.gpu {
        // The GPU may have run the first cached ops on this frame and not the rest: its
        // convolution cache no longer holds one frame's activations.
        gpu.invalidate_conv_cache();
    }
    // An offloaded inference the GPU ran to a resumable boundary continues from the GPU's
    // activations there: downloaded after this frame's chunks, run once they arrive
    // ([`run_ready_cpu_steps`]).
    if let Some(gpu) = &c.gpu
        && work.offloaded
        && work.resume == Resume::FromGpu
        && !job.on_cpu
        && work.ops.start > 0
    {
        match gpu.resume().encode_download(work.ops.start, encoder) {
            Ok(download) => {
                debug!(
                    "heimdall: {}: the CPU goes on from the GPU's step {}",
                    d.setup.name, work.ops.start
                );
                job.on_cpu = true;
                job.resume = Some(ResumeJob {
                    work: work.id,
                    ops: work.ops.clone(),
                    download,
                    requested: false,
                    finish,
                    slots: work_slots(&work),
                });
                return;
            }
            Err(e) => warn!(
                "heimdall: {}: resuming at step {} on the CPU: {e}; starting again from the input",
                d.setup.name, work.ops.start
            ),
        }
    }
    let sink = sched.lane.sink(workers);
    let parts = (d.setup, &*d.model, &mut *d.run);
    run_on_cpu_model(&work, e, parts, &workers.pool, sink, clock, outbox);
}

/// Runs `work` on DNN `e`'s CPU model, on `work.threads` slots: the rest of its inference, or
/// one piece of it. The first CPU piece of an inference starts from its input (op 0: also
/// when the coordinator restarts an offloaded inference at a boundary that is not resumable, or
/// asks to continue from a state this DNN's CPU model does not hold); a later piece
/// ([`Resume::FromCpu`]) continues from the CPU model's state where the piece before it
/// stopped. The piece that ends the inference sends its outputs on.
fn run_on_cpu_model(
    work: &CpuWork,
    e: Entity,
    (setup, model, run): (&DnnSetup, &RenderModel, &mut Inference),
    pool: &WorkerPool,
    sink: CpuSink,
    clock: HeimdallClock,
    outbox: &Outbox,
) {
    let finish = finish_of(e, setup, model, run, outbox, clock);
    let norm = setup.normalization;
    let (Some(job), ModelState::Ready(c)) = (run.job.as_mut(), &model.state) else {
        return;
    };
    let input = CpuInput {
        cpu: c.cpu.clone(),
        steps: c.steps,
        input: c.input,
        norm,
        pixels: job.pixels.clone(),
        size: job.frame_size,
        crop: job.crop,
    };
    start_cpu_piece(work, e, input, &mut job.on_cpu, finish, pool, sink, clock);
}

/// CPU fallback steps whose inputs arrived, and offloaded inferences whose GPU state arrived:
/// run them on a worker.
pub(crate) fn run_ready_cpu_steps(dnns: &mut DnnQuery, workers: &Workers, clock: HeimdallClock) {
    for (main, mut d) in dnns.iter_mut() {
        let e = main.id();
        let (Some(job), ModelState::Ready(c)) = (d.run.job.as_mut(), &d.model.state) else {
            continue;
        };
        if job
            .resume
            .as_ref()
            .is_some_and(|r| r.requested && r.download.is_ready())
            && let Some(r) = job.resume.take()
        {
            resume_on_worker(e, r, c.cpu.clone(), c.steps, workers, clock);
            continue;
        }
        let Some((id, step, true)) = job.cpu_step else {
            continue;
        };
        let Some(gpu) = c.gpu.clone() else { continue };
        if !gpu.cpu_steps().is_ready(step) {
            continue;
        }
        job.cpu_step = None;
        if step + 1 == c.steps {
            job.need_readback = true;
        }
        let tx = workers.done.sender();
        let worker = workers.pool.size() - workers.pool.idle();
        workers.pool.spawn(move || {
            let start_ms = clock.now_ms();
            let run = || gpu.cpu_steps().run(step).map_err(|e| e.to_string());
            let error = match crate::faults::catch_work(run) {
                Ok(true) => None,
                Ok(false) => Some("inputs not ready".to_string()),
                Err(err) => Some(err),
            };
            tx.send(CpuDone {
                entity: e,
                work: id,
                worker,
                start_ms,
                end_ms: clock.now_ms(),
                finished: false,
                error,
                times: None,
            })
            .ok();
        });
    }
}

/// Runs an offloaded inference's ops on a worker from the GPU's state at their start (taken from
/// its download, set into the CPU model), and sends the outputs on when it ends the inference.
fn resume_on_worker(
    e: Entity,
    r: ResumeJob,
    cpu: SharedCpuModel,
    steps: usize,
    w: &Workers,
    clock: HeimdallClock,
) {
    let last = r.ops.end == steps;
    let finish = r.finish.map(|mut f| {
        f.resumed_from_step = Some(r.ops.start);
        f
    });
    let download = r.download;
    let run = CpuRun {
        cpu,
        slots: r.slots,
        entity: e,
        work: r.work,
        ops: r.ops,
        last,
        finish,
        clock,
    };
    spawn_cpu_run(&w.pool, CpuSink::plain(w), run, move |m| {
        let state =
            (download.take().map_err(|e| e.to_string())?).ok_or("the GPU state was not ready")?;
        heimdall_gpu::restore_cpu(m, &state).map_err(|e| e.to_string())
    });
}

#[cfg(test)]
mod tests;
