//! The main world's end of the channel (`bridge/channel.rs`): once per update [`receive`]
//! drains it, keeps each DNN's typed [`DnnStatus`] up to date, delivers decoded results to their
//! entities (the decoder's components, then [`DnnOutput`]) and triggers [`DnnResult`] (or
//! [`DnnFailed`]) on the DNN's entity.

use std::time::Duration;

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

use super::{HeimdallBackend, HeimdallRecording, HeimdallTrace};
use crate::asset::DnnModel;
use crate::bridge::channel::{FinishedInference, Inbox, Outbox, RenderMessage};
use crate::camera::CameraFrame;
use crate::clock::HeimdallClock;
use crate::decoder::{Decoded, DecoderHandle};
use crate::dnn::{Dnn, DnnFailed, DnnOutput, DnnPlacement, DnnResult, DnnStatus};
use crate::guard::GuardStatus;
use crate::stats::HeimdallStats;

/// What the main world updates from the render world's messages: the DNNs' components, the
/// camera frames' pins, the statistics and the plugin's resources.
#[derive(SystemParam)]
pub(crate) struct Receivers<'w, 's> {
    commands: Commands<'w, 's>,
    clock: Res<'w, HeimdallClock>,
    stats: ResMut<'w, HeimdallStats>,
    trace: ResMut<'w, HeimdallTrace>,
    recording: ResMut<'w, HeimdallRecording>,
    backend: ResMut<'w, HeimdallBackend>,
    statuses: Query<'w, 's, &'static mut DnnStatus>,
    guards: Query<'w, 's, &'static mut GuardStatus>,
    placements: Query<'w, 's, &'static mut DnnPlacement>,
    dnns: Query<'w, 's, &'static Dnn>,
    models: Res<'w, Assets<DnnModel>>,
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
        match m {
            RenderMessage::Status(e, status) => {
                set_status(&mut self.commands, &mut self.statuses, e, status);
            }
            RenderMessage::Placement(dnn, placement) => {
                let name = self.model_name(dnn);
                self.stats.record_placement(&name, dnn, &placement);
                if let Ok(mut current) = self.placements.get_mut(dnn) {
                    current.set_if_neq(placement);
                }
            }
            RenderMessage::Frame(r) => self.stats.record_gpu_frame(r),
            RenderMessage::Presented(t, phases) => self.stats.record_presented(t, phases),
            RenderMessage::Trace(t) => self.trace.latest = Some(t),
            RenderMessage::Recording(r) => self.recording.latest = Some(*r),
            RenderMessage::Scheduled { dnn, latency_ms } => {
                let name = self.model_name(dnn);
                self.stats.record_scheduled(&name, dnn, latency_ms);
            }
            RenderMessage::Readback { dnn, ms } => {
                let name = self.model_name(dnn);
                self.stats.record_readback(&name, dnn, ms);
            }
            RenderMessage::Backend(b) => *self.backend = b,
            RenderMessage::CpuFallback(dnn, why) => {
                let name = self.model_name(dnn);
                self.stats.record_cpu_fallback(&name, dnn, &why);
                if let Ok(mut e) = self.commands.get_entity(dnn) {
                    e.insert(crate::dnn::CpuFallback(why));
                }
            }
            RenderMessage::Instance(index, name) => {
                self.stats.instances.insert(index, name);
            }
            RenderMessage::ConvCacheDecision {
                dnn,
                decision,
                cached_ops,
            } => {
                let name = self.model_name(dnn);
                self.stats
                    .record_conv_cache_decision(&name, dnn, decision, cached_ops);
            }
            RenderMessage::Guard(dnn, status) => self.set_guard(dnn, status),
            RenderMessage::Result(r) => self.deliver(r),
        }
    }

    /// The model name of DNN `dnn` for the statistics (the entity while its model is not
    /// loaded).
    fn model_name(&self, dnn: Entity) -> String {
        model_name(&self.dnns, &self.models, dnn)
    }

    /// Where DNN `dnn`'s accuracy guard stands: to the statistics and its [`GuardStatus`].
    fn set_guard(&mut self, dnn: Entity, status: GuardStatus) {
        let name = self.model_name(dnn);
        self.stats.record_guard(&name, dnn, &status);
        if let Ok(mut current) = self.guards.get_mut(dnn)
            && *current != status
        {
            *current = status;
        }
    }

    /// A finished inference: its statistics, its frame pinned as the DNN's latest result, and
    /// its delivery to the DNN's entity (queued: [`deliver_to_entity`]).
    fn deliver(&mut self, r: Box<FinishedInference>) {
        let now = self.clock.now_ms();
        let capture_time = Duration::from_secs_f64(r.capture_ms.max(0.0) / 1e3);
        let latency = Duration::from_secs_f64((now - r.capture_ms).max(0.0) / 1e3);
        let dnn = self.dnns.get(r.dnn).ok();
        let name = dnn
            .and_then(|d| self.models.get(&d.model))
            .map_or_else(|| format!("{}", r.dnn), |m| m.name.clone());
        let deadline = dnn.and_then(|d| d.deadline);
        if let Some(f) = dnn.and_then(|d| self.frames.get(d.source).ok()) {
            f.pin_result(r.dnn, r.frame_index);
        }
        let stats = &mut self.stats;
        stats.record_result(&name, r.dnn, latency, deadline, r.frame_index, r.backend);
        if r.resumed_from_step.is_some() {
            stats.record_resumed(&name, r.dnn);
        }
        stats.record_stages(&name, r.dnn, r.capture_ms, &r.stages, self.clock.now_ms());
        if let Some(c) = r.cache {
            stats.record_conv_cache(&name, r.dnn, &c.counts, c.cached_ops, c.saved_ms);
        }
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

/// The model name of DNN `dnn` for the statistics (the entity while its model is not loaded).
fn model_name(dnns: &Query<&Dnn>, models: &Assets<DnnModel>, dnn: Entity) -> String {
    dnns.get(dnn)
        .ok()
        .and_then(|d| models.get(&d.model))
        .map_or_else(|| format!("{dnn}"), |m| m.name.clone())
}
