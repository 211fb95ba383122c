//! Results coming back, never waiting on the GPU or a worker: after the frame's submission the
//! output copies and timestamps are mapped (`map_async`); at the next frame finished outputs and
//! finished CPU work are collected, and each finished inference is decoded on a worker and sent
//! to the main world.

use std::sync::Arc;

use bevy::prelude::*;

use super::backend::InferenceBackend;
use super::cpu::run_ready_cpu_steps;
use super::models::{ModelState, ReadbackState, RenderDnns};
use super::schedule::Scheduler;
use crate::clock::HeimdallClock;
use crate::decoder::DecodeInput;
use crate::dnn::Backend;
use crate::results::{FinishedInference, Outbox, RenderMessage};
use crate::workers::Workers;

/// After the frame's submission: maps the output copies, the CPU steps' inputs and the
/// timestamps encoded this frame, and runs the map callbacks that are due.
pub(crate) fn map_after_submit(
    mut dnns: ResMut<RenderDnns>,
    mut backend: ResMut<InferenceBackend>,
) {
    if let Some(t) = backend.timer.as_mut() {
        t.after_submit();
    }
    for d in dnns.map.values_mut() {
        let (Some(job), ModelState::Ready(c)) = (d.job.as_mut(), &d.state) else {
            continue;
        };
        let Some(gpu) = &c.gpu else { continue };
        if job.readback == ReadbackState::Encoded {
            match gpu.request_readback() {
                Ok(()) => job.readback = ReadbackState::Requested,
                Err(e) => error!("heimdall: {}: readback: {e}", d.name),
            }
        }
        if let Some((_, step, requested)) = job.cpu_step.as_mut()
            && !*requested
        {
            match gpu.request_cpu_step_inputs(*step) {
                Ok(()) => *requested = true,
                Err(e) => error!("heimdall: {}: CPU step {step}: {e}", d.name),
            }
        }
    }
    if let Some(ctx) = backend.gpu() {
        // Runs map callbacks that are due; never waits.
        let _ = ctx.device.poll(wgpu::PollType::Poll);
    }
}

/// Collects finished readbacks and CPU work; finished inferences go to a worker for decoding.
pub(crate) fn collect_outputs(
    mut dnns: ResMut<RenderDnns>,
    mut sched: ResMut<Scheduler>,
    workers: Res<Workers>,
    clock: Res<HeimdallClock>,
    outbox: Res<Outbox>,
) {
    let dnns = &mut *dnns;
    let mut done = Vec::new();
    for (e, d) in &mut dnns.map {
        let (Some(job), ModelState::Ready(c)) = (d.job.as_ref(), &d.state) else {
            continue;
        };
        let Some(gpu) = &c.gpu else { continue };
        if job.readback != ReadbackState::Requested || !gpu.readback_ready() {
            continue;
        }
        match gpu.take_outputs() {
            Ok(Some(outputs)) => done.push((*e, outputs, Backend::Gpu)),
            Ok(None) => {}
            Err(err) => {
                error!("heimdall: {}: readback: {err}", d.name);
                d.job = None;
            }
        }
    }
    for report in workers.done.drain() {
        sched.coordinator.cpu_done(
            report.work,
            report.worker,
            report.start_ms,
            report.end_ms.max(report.start_ms),
        );
        if let Some(err) = report.error {
            error!("heimdall: {}: CPU work: {err}", dnns.name_of(report.entity));
            if let Some(d) = dnns.map.get_mut(&report.entity) {
                d.job = None;
            }
            continue;
        }
        if let Some(outputs) = report.outputs {
            done.push((report.entity, outputs, Backend::Cpu));
        }
    }
    for (e, outputs, backend) in done {
        finish(dnns, e, outputs, backend, &workers, &outbox);
    }
    run_ready_cpu_steps(dnns, &workers, *clock);
}

/// Sends a finished inference to a worker for decoding; the DNN becomes idle.
fn finish(
    dnns: &mut RenderDnns,
    e: Entity,
    outputs: Vec<Vec<f32>>,
    backend: Backend,
    workers: &Workers,
    outbox: &Outbox,
) {
    let Some(d) = dnns.map.get_mut(&e) else {
        return;
    };
    let Some(job) = d.job.take() else { return };
    let shapes = d
        .compiled()
        .map(|c| c.output_shapes.clone())
        .unwrap_or_default();
    let decoder = d.decoder.clone();
    let name = d.name.clone();
    let outbox = outbox.clone();
    workers.pool.spawn(move || {
        let decoded = decoder.and_then(|decoder| {
            let input = DecodeInput {
                outputs: &outputs,
                shapes: &shapes,
                crop: &job.crop,
                frame_size: job.frame_size,
                frame_index: job.frame_index,
                capture_time: std::time::Duration::from_secs_f64(job.capture_ms.max(0.0) / 1e3),
            };
            match decoder.decode(&input) {
                Ok(v) => Some((decoder, v)),
                Err(err) => {
                    warn!("heimdall: {name}: decoding: {err}");
                    None
                }
            }
        });
        outbox.send(RenderMessage::Result(Box::new(FinishedInference {
            dnn: e,
            frame_index: job.frame_index,
            capture_ms: job.capture_ms,
            tensors: Arc::new(outputs),
            backend,
            crop: job.crop,
            decoded,
        })));
    });
}
