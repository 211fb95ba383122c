//! The frame's DNN work recorded into the frame's own command encoder on Bevy's queue, after the
//! scene passes (`camera_driver`): the preprocessing of the inferences started this frame, the
//! chunks of the [`FramePlan`], the downloads of CPU steps' inputs and the output copies, with
//! GPU timestamps after the scene and after each chunk.

use bevy::prelude::*;
use bevy::render::renderer::RenderContext;

use super::backend::InferenceBackend;
use super::cpu::dispatch_cpu;
use super::models::{ModelState, ReadbackState, RenderDnns};
use super::schedule::{FramePlan, Scheduler};
use super::timer::Mark;
use crate::clock::HeimdallClock;
use crate::results::{Outbox, RenderMessage};
use crate::stats::FrameRecord;
use crate::workers::Workers;

/// Starts the frame's timestamps (before the scene passes).
pub(crate) fn begin_frame_timer(
    mut ctx: RenderContext,
    mut backend: ResMut<InferenceBackend>,
    sched: Res<Scheduler>,
) {
    if let Some(t) = backend.timer.as_mut() {
        t.begin(ctx.command_encoder(), sched.frame);
    }
}

/// Records this frame's DNN work after the scene.
#[allow(clippy::too_many_arguments)]
pub(crate) fn encode_dnn_work(
    mut ctx: RenderContext,
    mut backend: ResMut<InferenceBackend>,
    mut dnns: ResMut<RenderDnns>,
    mut sched: ResMut<Scheduler>,
    mut plan: ResMut<FramePlan>,
    workers: Res<Workers>,
    clock: Res<HeimdallClock>,
    outbox: Res<Outbox>,
) {
    let (dnns, sched) = (&mut *dnns, &mut *sched);
    let encoder = ctx.command_encoder();
    let timer = &mut backend.timer;
    if let Some(t) = timer.as_mut() {
        t.mark(encoder, Mark::SceneEnd);
    }
    let now = plan.now_ms;

    // 1. Preprocessing of the inferences started this frame (before their first chunk).
    let mut preprocessed = false;
    for d in dnns.map.values_mut() {
        let (Some(job), ModelState::Ready(c)) = (d.job.as_mut(), &d.state) else {
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
    if preprocessed && let Some(t) = timer.as_mut() {
        t.mark(encoder, Mark::Preprocess);
    }

    // 2. The chunks.
    let timed = timer.as_ref().is_some_and(|t| t.active());
    let mut works = Vec::new();
    for g in std::mem::take(&mut plan.gpu) {
        let Some(e) = dnns.entity_of(g.model) else {
            sched.coordinator.gpu_done(g.id, now, now);
            continue;
        };
        let d = dnns.map.get_mut(&e).expect("entity_of found it");
        let encoded = match (d.job.as_mut(), &d.state) {
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
        };
        match encoded {
            Ok(()) if timed => {
                if let Some(t) = timer.as_mut() {
                    t.mark(
                        encoder,
                        Mark::Chunk {
                            work: g.id.0,
                            instance: d.index,
                        },
                    );
                }
                works.push((g.id, g.est_ms));
            }
            Ok(()) => sched.untimed.push((g.id, now, now + g.est_ms)),
            Err(err) => {
                error!("heimdall: encoding {} ops {:?}: {err}", d.name, g.ops);
                d.job = None;
                sched.coordinator.gpu_done(g.id, now, now);
            }
        }
    }
    if timed {
        sched.timed.insert(sched.frame, (now, works));
    }

    // 3. CPU work (fallback steps download their inputs here, after the chunks).
    for c in std::mem::take(&mut plan.cpu) {
        dispatch_cpu(c, now, encoder, dnns, sched, &workers, *clock, &outbox);
    }

    // 4. Output copies of the inferences whose last step was encoded (or ran on the CPU).
    for d in dnns.map.values_mut() {
        let (Some(job), ModelState::Ready(c)) = (d.job.as_mut(), &d.state) else {
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
            }
            Err(err) => error!("heimdall: {}: readback: {err}", d.name),
        }
    }
    if let Some(t) = timer.as_mut() {
        t.finish(encoder);
    }
    if !timed {
        outbox.send(RenderMessage::Frame(FrameRecord::untimed(sched.frame)));
    }
    sched.frame += 1;
}
