//! The frame's DNN work on Bevy's queue: the preprocessing of the inferences started this frame,
//! the chunks of the [`FramePlan`], the downloads of CPU steps' inputs and the output copies,
//! with GPU timestamps around them and around the scene passes.
//!
//! By default ([`HeimdallSettings::dnn_work_first`]) the work is recorded into an encoder of its
//! own and submitted at the end of our `Prepare` systems, ahead of the scene: the GPU runs it
//! first, and the outputs' copies complete (and are read back) as soon as the chunks are done,
//! not when the whole frame is. A submission's buffers map only when all of it has finished, so
//! work recorded after the scene in the frame's own submission came back a frame later whenever
//! the scene's GPU time and its recording outlasted what was left of the period. Otherwise the
//! work is recorded into the frame's own encoder after the scene passes (`camera_driver`).

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use bevy::render::renderer::{RenderContext, RenderDevice, RenderQueue};
use heimdall_coordinator::GpuWork;

use super::backend::InferenceBackend;
use super::cpu::dispatch_cpu;
use super::models::{DnnQuery, ModelState, ReadbackState, RenderDnnItem};
use super::readback::{ReadbackWaiter, map_outputs};
use super::schedule::{FramePlan, Scheduler};
use super::state::dnn_of_model;
use super::timer::{FrameTimer, Mark};
use crate::bridge::channel::{Outbox, RenderMessage};
use crate::clock::HeimdallClock;
use crate::settings::HeimdallSettings;
use crate::stats::FrameRecord;
use crate::workers::Workers;

/// Whether the frame's DNN work goes ahead of the scene (a run condition).
pub(crate) fn work_first(settings: Res<HeimdallSettings>) -> bool {
    settings.dnn_work_first
}

/// Whether the frame's DNN work goes after the scene (a run condition).
pub(crate) fn work_after_scene(settings: Res<HeimdallSettings>) -> bool {
    !settings.dnn_work_first
}

/// What recording the frame's DNN work reads and updates: the backend (and its frame timer),
/// the DNNs, the scheduler and its plan for the frame, the CPU workers, the clock, the channel
/// to the main world.
#[derive(SystemParam)]
pub(crate) struct DnnWork<'w, 's> {
    backend: ResMut<'w, InferenceBackend>,
    dnns: DnnQuery<'w, 's>,
    sched: ResMut<'w, Scheduler>,
    plan: ResMut<'w, FramePlan>,
    workers: Res<'w, Workers>,
    clock: Res<'w, HeimdallClock>,
    outbox: Res<'w, Outbox>,
}

/// Records and submits the frame's DNN work ahead of the scene (`Render`, after the schedule),
/// then maps the copies of the outputs and of CPU steps' inputs.
pub(crate) fn submit_dnn_work_first(
    device: Res<RenderDevice>,
    queue: Res<RenderQueue>,
    mut work: DnnWork,
    waiter: Res<ReadbackWaiter>,
) {
    let _span = info_span!("heimdall::encode_dnn_work").entered();
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("heimdall DNN work"),
    });
    if let Some(t) = work.backend.timer.as_mut() {
        t.begin(&mut encoder, work.sched.frame);
    }
    let recorded = record(&mut encoder, &mut work);
    let DnnWork {
        backend,
        dnns,
        clock,
        outbox,
        ..
    } = &mut work;
    if recorded || backend.timer.as_ref().is_some_and(|t| t.active()) {
        queue.submit([encoder.finish()]);
        map_outputs(dnns, backend, &waiter, outbox, **clock);
    }
}

/// Starts the frame's timestamps before the scene passes: the frame's first mark when the DNN
/// work goes after the scene, else the scene's own start.
pub(crate) fn begin_frame_timer(
    mut ctx: RenderContext,
    mut backend: ResMut<InferenceBackend>,
    sched: Res<Scheduler>,
    settings: Res<HeimdallSettings>,
) {
    if let Some(t) = backend.timer.as_mut() {
        if settings.dnn_work_first {
            t.mark(ctx.command_encoder(), Mark::SceneBegin);
        } else {
            t.begin(ctx.command_encoder(), sched.frame);
        }
    }
}

/// Ends the scene's timestamps after its passes and resolves the frame's marks (DNN work
/// first).
pub(crate) fn end_frame_timer(mut ctx: RenderContext, mut backend: ResMut<InferenceBackend>) {
    if let Some(t) = backend.timer.as_mut() {
        let encoder = ctx.command_encoder();
        t.mark(encoder, Mark::SceneEnd);
        t.finish(encoder);
    }
}

/// Records this frame's DNN work after the scene, into the frame's own encoder.
pub(crate) fn encode_dnn_work(mut ctx: RenderContext, mut work: DnnWork) {
    let _span = info_span!("heimdall::encode_dnn_work").entered();
    let encoder = ctx.command_encoder();
    if let Some(t) = work.backend.timer.as_mut() {
        t.mark(encoder, Mark::SceneEnd);
    }
    record(encoder, &mut work);
    if let Some(t) = work.backend.timer.as_mut() {
        t.finish(encoder);
    }
}

/// Records the frame's DNN work into `encoder` and ends the scheduler's frame; whether
/// anything was recorded.
fn record(encoder: &mut wgpu::CommandEncoder, work: &mut DnnWork) -> bool {
    let DnnWork {
        backend,
        dnns,
        sched,
        plan,
        workers,
        clock,
        outbox,
    } = work;
    let sched = &mut **sched;
    let timer = &mut backend.timer;
    let now = plan.now_ms;
    // 1. Preprocessing of the inferences started this frame (before their first chunk).
    let mut recorded = encode_preprocessing(encoder, dnns);
    if recorded && let Some(t) = timer.as_mut() {
        t.mark(encoder, Mark::Preprocess);
    }
    // 2. The chunks.
    let timed = timer.as_ref().is_some_and(|t| t.active());
    recorded |= encode_chunks(encoder, timer, timed, dnns, sched, &mut plan.gpu, now);
    // 3. CPU work (fallback steps download their inputs here, after the chunks).
    for c in std::mem::take(&mut plan.cpu) {
        dispatch_cpu(c, now, encoder, dnns, sched, workers, **clock, outbox);
        recorded = true;
    }
    // 4. Output copies of the inferences whose last step was encoded (or ran on the CPU).
    recorded |= encode_output_copies(encoder, dnns);
    if !timed {
        outbox.send(RenderMessage::Frame(FrameRecord::untimed(sched.frame)));
    }
    sched.frame += 1;
    recorded
}

/// Records the GPU preprocessing of the inferences started this frame; whether any was.
fn encode_preprocessing(encoder: &mut wgpu::CommandEncoder, dnns: &mut DnnQuery) -> bool {
    let mut preprocessed = false;
    for (_, mut d) in dnns.iter_mut() {
        let (Some(job), ModelState::Ready(c)) = (d.run.job.as_mut(), &d.model.state) else {
            continue;
        };
        let Some(texture) = job.preprocess.take() else {
            continue;
        };
        if let (Some(pre), Some(binding)) = (&c.pre, c.bindings.get(&texture)) {
            pre.encode(encoder, binding);
            preprocessed = true;
        }
    }
    preprocessed
}

/// Records the plan's GPU chunks (`gpu`, taken), each timed by a mark when the frame is `timed`
/// (else reported with its estimate next frame); a chunk that cannot be encoded drops its
/// inference and is reported done. Whether any chunk was recorded.
fn encode_chunks(
    encoder: &mut wgpu::CommandEncoder,
    timer: &mut Option<FrameTimer>,
    timed: bool,
    dnns: &mut DnnQuery,
    sched: &mut Scheduler,
    gpu: &mut Vec<GpuWork>,
    now: f64,
) -> bool {
    let mut recorded = false;
    let mut works = Vec::new();
    for g in std::mem::take(gpu) {
        let Some((_, mut d)) = dnn_of_model(dnns, g.model) else {
            sched.gpu_done(g.id, now, now);
            continue;
        };
        let encoded = encode_chunk(encoder, &mut d, &g);
        recorded |= encoded.is_ok();
        match encoded {
            Ok(()) if timed => {
                if let Some(t) = timer.as_mut() {
                    t.mark(
                        encoder,
                        Mark::Chunk {
                            work: g.id.0,
                            instance: d.setup.index,
                        },
                    );
                }
                works.push((g.id, g.est_ms));
            }
            Ok(()) => sched.untimed.push((g.id, now, now + g.est_ms)),
            Err(err) => {
                error!("heimdall: encoding {} ops {:?}: {err}", d.setup.name, g.ops);
                d.run.job = None;
                sched.gpu_done(g.id, now, now);
            }
        }
    }
    if timed {
        sched.timed.insert(sched.frame, (now, works));
    }
    recorded
}

/// Records chunk `g` of DNN `d`'s inference on the GPU; its last chunk asks for the outputs'
/// copy.
fn encode_chunk(
    encoder: &mut wgpu::CommandEncoder,
    d: &mut RenderDnnItem,
    g: &GpuWork,
) -> Result<(), String> {
    match (d.run.job.as_mut(), &d.model.state) {
        (Some(job), ModelState::Ready(c)) if !job.on_cpu => match &c.gpu {
            Some(gpu) => gpu
                .encode(encoder, g.ops.clone())
                .map(|()| {
                    if g.ops.end == c.steps {
                        job.need_readback = true;
                    }
                })
                .map_err(|e| e.to_string()),
            None => Err("no GPU model".to_string()),
        },
        (Some(_), ModelState::Ready(_)) => Err("the inference moved to the CPU".to_string()),
        _ => Err("no inference in flight".to_string()),
    }
}

/// Records the output copies of the inferences whose last step was encoded (or ran on the
/// CPU); whether any was.
fn encode_output_copies(encoder: &mut wgpu::CommandEncoder, dnns: &mut DnnQuery) -> bool {
    let mut recorded = false;
    for (_, mut d) in dnns.iter_mut() {
        let (Some(job), ModelState::Ready(c)) = (d.run.job.as_mut(), &d.model.state) else {
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
                recorded = true;
            }
            Err(err) => error!("heimdall: {}: readback: {err}", d.setup.name),
        }
    }
    recorded
}
