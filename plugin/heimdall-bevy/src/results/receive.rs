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
use crate::systems::HeimdallSystems;

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

/// Drains the channel (`PreUpdate`): statuses, results, GPU frame records, traces; the
/// requests of the previous update (a trace, a recording) are cleared first.
pub(crate) fn receive(inbox: Res<Inbox>, mut to: Receivers) {
    to.trace.requested = false;
    to.recording.start_requested = false;
    to.recording.export_requested = false;
    for m in inbox.0.try_iter() {
        to.take(m);
    }
}

/// Drains the channel again at the start of `PostUpdate` (`HeimdallSettings::late_delivery`):
/// what finished while the update ran reaches the world before this frame is extracted, so the
/// frame rendered next shows it. The app's requests of this update are left as they are.
pub(crate) fn receive_late(inbox: Res<Inbox>, mut to: Receivers) {
    for m in inbox.0.try_iter() {
        to.take(m);
    }
}

/// Whether results are delivered a second time in the update ([`receive_late`]).
fn late_delivery_on(settings: Option<Res<crate::HeimdallSettings>>) -> bool {
    settings.is_none_or(|s| s.late_delivery)
}

/// Schedules [`receive_late`] at the start of `PostUpdate`, in [`HeimdallSystems::Results`]
/// ahead of [`HeimdallSystems::Requests`] (a result's observer may ask for the next inference
/// in the same update). Its measurements are read by the statistics in the next `PreUpdate`:
/// one reader, or every message would count twice.
pub(crate) fn add_late_delivery(app: &mut App) {
    app.configure_sets(
        PostUpdate,
        (HeimdallSystems::Results, HeimdallSystems::Requests).chain(),
    )
    .add_systems(
        PostUpdate,
        receive_late
            .run_if(late_delivery_on)
            .in_set(HeimdallSystems::Results),
    );
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

#[cfg(test)]
mod tests {
    use crossbeam_channel::Sender;

    use super::*;
    use crate::HeimdallSettings;
    use crate::dnn::Backend;

    /// The main world's end of the channel as the plugin schedules it, and a DNN entity.
    fn app(late: bool) -> (App, Sender<RenderMessage>, Entity) {
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut app = App::new();
        app.insert_resource(Inbox(rx))
            .insert_resource(HeimdallSettings {
                late_delivery: late,
                ..default()
            })
            .init_resource::<HeimdallClock>()
            .init_resource::<HeimdallTrace>()
            .init_resource::<HeimdallRecording>()
            .init_resource::<HeimdallBackend>()
            .add_message::<Measured>()
            .add_systems(PreUpdate, receive.in_set(HeimdallSystems::Results));
        add_late_delivery(&mut app);
        let dnn = app.world_mut().spawn(DnnStatus::Loading).id();
        (app, tx, dnn)
    }

    /// The status as an app's `Last` system sees it after an update during whose `Update` a
    /// worker sends `Ready` (the render world and the workers send while the update runs).
    fn status_at_the_end_of_the_update(late: bool) -> (DnnStatus, DnnStatus) {
        let (mut app, tx, dnn) = app(late);
        app.add_systems(Update, move || {
            let _ = tx.send(RenderMessage::Status(dnn, DnnStatus::Ready(Backend::Cpu)));
        });
        #[derive(Resource, Default)]
        struct Seen(Vec<DnnStatus>);
        app.init_resource::<Seen>().add_systems(
            Last,
            move |s: Query<&DnnStatus>, mut seen: ResMut<Seen>| {
                seen.0.push(s.get(dnn).cloned().unwrap_or_default());
            },
        );
        app.update();
        app.update();
        let seen = &app.world().resource::<Seen>().0;
        (seen[0].clone(), seen[1].clone())
    }

    #[test]
    fn what_arrives_during_the_update_is_delivered_before_it_ends() {
        let ready = DnnStatus::Ready(Backend::Cpu);
        assert_eq!(
            status_at_the_end_of_the_update(true),
            (ready.clone(), ready.clone()),
            "late delivery: the first update's end sees what arrived during it"
        );
        assert_eq!(
            status_at_the_end_of_the_update(false),
            (DnnStatus::Loading, ready),
            "without it, the next update's PreUpdate delivers it"
        );
    }

    #[test]
    fn the_late_delivery_keeps_the_apps_requests_of_the_update() {
        let (mut app, _tx, _dnn) = app(true);
        app.add_systems(Update, |mut t: ResMut<HeimdallTrace>| t.requested = true);
        app.add_systems(Last, |t: Res<HeimdallTrace>| assert!(t.requested));
        app.update();
    }
}
