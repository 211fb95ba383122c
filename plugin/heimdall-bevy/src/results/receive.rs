//! The main world's end of the channel (`bridge/channel.rs`): once per update [`receive`]
//! drains it, keeps each DNN's typed [`DnnStatus`] up to date, delivers decoded results to their
//! entities (the decoder's components, then [`DnnOutput`]) and triggers [`DnnResult`] (or
//! [`DnnFailed`]) on the DNN's entity. What was measured on the way goes on as [`Measured`]
//! messages, which the statistics read (`stats/feed.rs`).

use std::time::Duration;

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

use super::{HeimdallBackend, HeimdallRecording, HeimdallTrace};
use crate::bridge::channel::{FinishedInference, Inbox, Outbox, RenderMessage};
use crate::camera::CameraFrame;
use crate::clock::HeimdallClock;
use crate::decoder::{Decoded, DecoderHandle};
use crate::dnn::{Dnn, DnnFailed, DnnOutput, DnnPlacement, DnnResult, DnnStatus};
use crate::guard::GuardStatus;
use crate::stats::{Measured, ResultMeasured};

/// What the main world updates from the render world's messages: the DNNs' components, the
/// camera frames' pins and the plugin's resources; and the stream of measurements.
#[derive(SystemParam)]
pub(crate) struct Receivers<'w, 's> {
    commands: Commands<'w, 's>,
    clock: Res<'w, HeimdallClock>,
    measured: MessageWriter<'w, Measured>,
    trace: ResMut<'w, HeimdallTrace>,
    recording: ResMut<'w, HeimdallRecording>,
    backend: ResMut<'w, HeimdallBackend>,
    statuses: Query<'w, 's, &'static mut DnnStatus>,
    guards: Query<'w, 's, &'static mut GuardStatus>,
    placements: Query<'w, 's, &'static mut DnnPlacement>,
    dnns: Query<'w, 's, &'static Dnn>,
    frames: Query<'w, 's, &'static CameraFrame>,
}

/// Drains the channel: statuses, results, GPU frame records, traces.
pub(crate) fn receive(inbox: Res<Inbox>, mut to: Receivers) {
    to.trace.requested = false;
    to.recording.start_requested = false;
    to.recording.export_requested = false;
    for m in inbox.0.try_iter() {
        to.take(m);
    }
}

impl Receivers<'_, '_> {
    /// Applies one message from the render world or a worker.
    fn take(&mut self, m: RenderMessage) {
        let measured = match m {
            RenderMessage::Status(e, status) => {
                set_status(&mut self.commands, &mut self.statuses, e, status);
                return;
            }
            RenderMessage::Placement(dnn, placement) => {
                if let Ok(mut current) = self.placements.get_mut(dnn) {
                    current.set_if_neq(placement.clone());
                }
                Measured::Placement(dnn, placement)
            }
            RenderMessage::Trace(t) => {
                self.trace.latest = Some(t);
                return;
            }
            RenderMessage::Recording(r) => {
                self.recording.latest = Some(*r);
                return;
            }
            RenderMessage::Backend(b) => {
                *self.backend = b;
                return;
            }
            RenderMessage::CpuFallback(dnn, why) => {
                if let Ok(mut e) = self.commands.get_entity(dnn) {
                    e.insert(crate::dnn::CpuFallback(why.clone()));
                }
                Measured::CpuFallback(dnn, why)
            }
            RenderMessage::Guard(dnn, status) => {
                if let Ok(mut current) = self.guards.get_mut(dnn)
                    && *current != status
                {
                    *current = status.clone();
                }
                Measured::Guard(dnn, status)
            }
            RenderMessage::Result(r) => Measured::Result(Box::new(self.deliver(*r))),
            RenderMessage::Frame(r) => Measured::GpuFrame(r),
            RenderMessage::Presented(t, phases) => Measured::Presented(t, phases),
            RenderMessage::Scheduled { dnn, latency_ms } => Measured::Scheduled { dnn, latency_ms },
            RenderMessage::Readback { dnn, ms } => Measured::Readback { dnn, ms },
            RenderMessage::CpuRun { dnn, times } => Measured::CpuRun { dnn, times },
            RenderMessage::Instance(index, name) => Measured::Instance(index, name),
            RenderMessage::ConvCacheDecision {
                dnn,
                decision,
                cached_ops,
            } => Measured::ConvCacheDecision {
                dnn,
                decision,
                cached_ops,
            },
        };
        self.measured.write(measured);
    }

    /// A finished inference: its frame pinned as the DNN's latest result, its delivery to the
    /// DNN's entity (queued: [`deliver_to_entity`]), and what it tells the statistics.
    fn deliver(&mut self, r: FinishedInference) -> ResultMeasured {
        let now = self.clock.now_ms();
        let capture_time = Duration::from_secs_f64(r.capture_ms.max(0.0) / 1e3);
        let latency = Duration::from_secs_f64((now - r.capture_ms).max(0.0) / 1e3);
        if let Some(f) = self
            .dnns
            .get(r.dnn)
            .ok()
            .and_then(|d| self.frames.get(d.source).ok())
        {
            f.pin_result(r.dnn, r.frame_index);
        }
        let measured = ResultMeasured {
            dnn: r.dnn,
            frame_index: r.frame_index,
            capture_ms: r.capture_ms,
            latency,
            delivered_ms: now,
            backend: r.backend,
            resumed: r.resumed_from_step.is_some(),
            stages: r.stages,
            cache: r.cache,
        };
        let output = DnnOutput {
            frame_index: r.frame_index,
            capture_time,
            latency,
            tensors: r.tensors,
            backend: r.backend,
            crop: r.crop,
            resumed_from_step: r.resumed_from_step,
        };
        let (dnn, decoded) = (r.dnn, r.decoded);
        self.commands
            .queue(move |world: &mut World| deliver_to_entity(world, dnn, decoded, output));
        measured
    }
}

/// Delivers a finished inference to DNN `dnn`'s entity: the decoder's components, then
/// [`DnnOutput`], then a [`DnnResult`] event. A decoder that panics delivering fails its DNN,
/// not the app.
fn deliver_to_entity(
    world: &mut World,
    dnn: Entity,
    decoded: Option<(DecoderHandle, Decoded)>,
    output: DnnOutput,
) {
    let Ok(mut entity) = world.get_entity_mut(dnn) else {
        return; // despawned while the inference ran
    };
    if let Some((decoder, value)) = decoded {
        // An app's decoder that panics delivering fails its DNN, not the app.
        if let Err(message) = crate::faults::catch(|| decoder.deliver(value, &mut entity)) {
            let error = crate::faults::panicked("the decoder's delivery", &message);
            if let Some(outbox) = world.get_resource::<Outbox>() {
                outbox.fail(dnn, error);
            }
            return;
        }
    }
    entity.insert(output.clone());
    world.trigger(DnnResult {
        entity: dnn,
        output,
    });
}

fn set_status(
    commands: &mut Commands,
    statuses: &mut Query<&mut DnnStatus>,
    e: Entity,
    status: DnnStatus,
) {
    let Ok(mut current) = statuses.get_mut(e) else {
        return;
    };
    if *current == status {
        return;
    }
    if let DnnStatus::Failed(error) = &status {
        commands.trigger(DnnFailed {
            entity: e,
            error: error.clone(),
        });
    }
    *current = status;
}
