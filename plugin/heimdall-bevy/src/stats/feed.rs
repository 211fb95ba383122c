//! The statistics as a reader of one stream: [`receive`](crate::results::receive) turns what the
//! render world and the workers measured, and each delivered result, into [`Measured`] messages
//! and keeps to the ECS work (statuses, placements, results on their entities);
//! [`record_measurements`] folds the stream into [`HeimdallStats`], right after it, in the same
//! set. The frame's path (camera → result on the entity) does not pass through the statistics,
//! and the stream runs whoever reads it.

use std::time::{Duration, Instant};

use bevy::prelude::*;

use super::{FrameRecord, HeimdallStats};
use crate::asset::DnnModel;
use crate::bridge::channel::ConvCacheRun;
use crate::bridge::phases::FramePhases;
use crate::dnn::{Backend, Dnn, DnnPlacement};
use crate::guard::GuardStatus;
use crate::stats::stages::StageTimes;

/// One measurement, in the order the main world received it.
#[derive(Message, Clone, Debug)]
pub(crate) enum Measured {
    /// A frame left for the screen at this instant, with the render thread's phases since the
    /// previous one.
    Presented(Instant, Option<FramePhases>),
    /// What the GPU did in a frame (its timestamps).
    GpuFrame(FrameRecord),
    /// A DNN instance's index (as in [`FrameRecord::chunks`]) and model name.
    Instance(u32, String),
    /// The coordinator completed an inference of `dnn` `latency_ms` after admitting it.
    Scheduled { dnn: Entity, latency_ms: f64 },
    /// A GPU inference of `dnn` had its outputs read `ms` after its GPU work ended.
    Readback { dnn: Entity, ms: f64 },
    /// A CPU run of `dnn`'s model, as its worker measured it.
    CpuRun {
        dnn: Entity,
        times: super::CpuRunTimes,
    },
    /// Where the coordinator runs a DNN and at what rate.
    Placement(Entity, DnnPlacement),
    /// Why a DNN runs on the CPU backend although the app has a GPU.
    CpuFallback(Entity, String),
    /// What became of a DNN's convolution cache when its model compiled.
    ConvCacheDecision {
        dnn: Entity,
        decision: String,
        cached_ops: usize,
    },
    /// Where a DNN's accuracy guard stands.
    Guard(Entity, GuardStatus),
    /// A result delivered to its DNN.
    Result(Box<ResultMeasured>),
}

/// What a delivered result tells the statistics.
#[derive(Clone, Debug)]
pub(crate) struct ResultMeasured {
    pub dnn: Entity,
    pub frame_index: u64,
    /// Capture time of its frame, ms on the plugin's clock.
    pub capture_ms: f64,
    /// Capture → delivery.
    pub latency: Duration,
    /// Delivered at, ms on the plugin's clock.
    pub delivered_ms: f64,
    pub backend: Backend,
    /// The CPU finished it from the GPU's activations.
    pub resumed: bool,
    pub stages: StageTimes,
    pub cache: Option<ConvCacheRun>,
}

/// Folds this update's [`Measured`] messages into [`HeimdallStats`] (`PreUpdate`, after
/// `receive`).
pub(crate) fn record_measurements(
    mut measured: MessageReader<Measured>,
    mut stats: ResMut<HeimdallStats>,
    dnns: Query<&Dnn>,
    models: Res<Assets<DnnModel>>,
) {
    // The model name of a DNN for the statistics (the entity while its model is not loaded).
    let name = |dnn: Entity| {
        dnns.get(dnn)
            .ok()
            .and_then(|d| models.get(&d.model))
            .map_or_else(|| format!("{dnn}"), |m| m.name.clone())
    };
    for m in measured.read() {
        match m {
            Measured::Presented(at, phases) => stats.record_presented(*at, *phases),
            Measured::GpuFrame(r) => stats.record_gpu_frame(r.clone()),
            Measured::Instance(index, model) => {
                stats.instances.insert(*index, model.clone());
            }
            &Measured::Scheduled { dnn, latency_ms } => {
                stats.record_scheduled(&name(dnn), dnn, latency_ms);
            }
            &Measured::Readback { dnn, ms } => stats.record_readback(&name(dnn), dnn, ms),
            Measured::CpuRun { dnn, times } => stats.record_cpu_run(&name(*dnn), *dnn, times),
            Measured::Placement(dnn, p) => stats.record_placement(&name(*dnn), *dnn, p),
            Measured::CpuFallback(dnn, why) => stats.record_cpu_fallback(&name(*dnn), *dnn, why),
            Measured::ConvCacheDecision {
                dnn,
                decision,
                cached_ops,
            } => stats.record_conv_cache_decision(&name(*dnn), *dnn, decision.clone(), *cached_ops),
            Measured::Guard(dnn, status) => stats.record_guard(&name(*dnn), *dnn, status),
            Measured::Result(r) => {
                let deadline = dnns.get(r.dnn).ok().and_then(|d| d.deadline);
                record_result(&mut stats, &name(r.dnn), deadline, r);
            }
        }
    }
}

/// A delivered result: its latency against the DNN's deadline, how it ran, where its time went
/// and what the convolution cache did.
fn record_result(
    stats: &mut HeimdallStats,
    name: &str,
    deadline: Option<Duration>,
    r: &ResultMeasured,
) {
    let dnn = r.dnn;
    stats.record_result(name, dnn, r.latency, deadline, r.frame_index, r.backend);
    if r.resumed {
        stats.record_resumed(name, dnn);
    }
    stats.record_stages(name, dnn, r.capture_ms, &r.stages, r.delivered_ms);
    if let Some(c) = r.cache {
        stats.record_conv_cache(name, dnn, &c.counts, c.cached_ops, c.saved_ms);
    }
}

#[cfg(test)]
mod tests {
    use bevy::ecs::system::RunSystemOnce;

    use super::*;

    /// The stream as `receive` writes it: two results of a DNN with a 100 ms deadline (one late,
    /// one resumed on the CPU), its placement, and two presented frames 16 ms apart. The
    /// statistics find the DNN by its entity (its model is not loaded: named by the entity) and
    /// its deadline on its component.
    #[test]
    fn the_stream_of_measurements_fills_the_statistics() {
        let mut world = World::new();
        world.init_resource::<HeimdallStats>();
        world.init_resource::<Assets<DnnModel>>();
        world.init_resource::<Messages<Measured>>();
        let source = world.spawn_empty().id();
        let dnn = world
            .spawn(Dnn::new(Handle::default(), source).with_deadline(Duration::from_millis(100)))
            .id();
        let result = |latency_ms: u64, backend, resumed| {
            Measured::Result(Box::new(ResultMeasured {
                dnn,
                frame_index: latency_ms,
                capture_ms: 0.0,
                latency: Duration::from_millis(latency_ms),
                delivered_ms: latency_ms as f64,
                backend,
                resumed,
                stages: StageTimes::default(),
                cache: None,
            }))
        };
        let start = Instant::now();
        let mut messages = world.resource_mut::<Messages<Measured>>();
        messages.write(result(40, Backend::Gpu, false));
        messages.write(result(140, Backend::Cpu, true));
        messages.write(Measured::Presented(start, None));
        messages.write(Measured::Presented(start + Duration::from_millis(16), None));
        messages.write(Measured::Instance(0, "m".into()));
        world
            .run_system_once(record_measurements)
            .expect("the system runs");
        let stats = world.resource::<HeimdallStats>();
        let m = &stats.models[&format!("{dnn}")];
        assert_eq!((m.results, m.deadline_misses), (2, 1), "140 ms is late");
        assert_eq!((m.cpu_results, m.resumed_from_gpu), (1, 1));
        assert_eq!(m.deadline_ms, Some(100.0));
        assert_eq!(stats.frame_ms, vec![16.0]);
        assert_eq!(stats.instances.get(&0).map(String::as_str), Some("m"));
    }
}
