//! The scheduler's run as one stream of events (render world and the CPU lane's workers), and
//! the system that hands them to their observer.
//!
//! The frame path says what happened (a model registered, a request, an admission, the work a
//! frame planned, work done with its measured times, a completion, the GPU's scene time, when a
//! frame was submitted and shown) and nothing else: it does not know who listens. The observer,
//! [`RunLog`] (`log.rs`), turns the stream into the simulator's recording and into the
//! scheduler's latencies and readbacks for `stats.json`; [`observe_run`] drains the stream once a
//! frame, after the frame's decision, and sends the main world what it measured.
//!
//! Nothing records until the app asks for a recording ([`crate::results::HeimdallRecording`]):
//! until then the path sends only what the statistics read in every run (completions) and the
//! models as they register (a handful a run); every other event is not even built
//! ([`RunEvents::record`]). The recording so starts with the work handed out after it started.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bevy::prelude::*;
use bevy::render::sync_world::MainEntity;
use crossbeam_channel::{Receiver, Sender};
use heimdall_coordinator::{
    CacheSpec, Completion, CoordinatorConfig, CpuWork, GpuWork, ModelId, StepCost, UtilityParams,
    WorkId,
};

use super::log::RunLog;
use crate::bridge::channel::{Outbox, RenderMessage};
use crate::render::extract::ExtractedRecording;
use crate::render::state::RenderModel;
use crate::results::RecordedRun;

/// A model the coordinator registered: what the recording's scenario says of it.
#[derive(Clone, Debug)]
pub(crate) struct RegisteredModel {
    /// The coordinator's id.
    pub id: ModelId,
    /// The DNN's name.
    pub name: String,
    /// Its steps' costs.
    pub costs: Vec<StepCost>,
    /// Its deadline, ms.
    pub deadline_ms: Option<f64>,
    /// Its utility.
    pub utility: UtilityParams,
    /// Its CPU model's threads and their measured speedup.
    pub cpu_threads: usize,
    /// See `cpu_threads`.
    pub cpu_speedup: f64,
    /// Whether the app asks for it on demand.
    pub on_demand: bool,
    /// The steps an offloaded inference can go on from (GPU models).
    pub resumable_steps: Option<Vec<usize>>,
    /// Its convolution cache, when it caches any op.
    pub conv_cache: Option<CacheSpec>,
}

/// One thing the scheduler did or measured.
#[derive(Clone, Debug)]
pub(crate) enum RunEvent {
    /// The app asked for a recording: what was recorded so far is forgotten. The coordinator's
    /// configuration now and the plugin's frame order (`dnn_work_first`, `free_at_readback`).
    Start(CoordinatorConfig, bool, bool),
    /// How the plugin hands out CPU work this frame (`cpu_on_completion`).
    CpuOnCompletion(bool),
    /// A model was registered.
    Registered(Box<RegisteredModel>),
    /// A guarded model replaced this one.
    Retired(ModelId),
    /// The app asked the model for an inference on a frame captured at (ms, content variation).
    Request(ModelId, f64, f64),
    /// The coordinator admitted the model's next inference.
    Admitted(ModelId),
    /// A frame's decision: its number, its start (ms) and the work it hands out.
    Planned(u64, f64, Vec<GpuWork>, Vec<CpuWork>),
    /// CPU work handed out between frames, counted in this frame.
    HandedOut(u64, Vec<CpuWork>),
    /// Work ran from start to end, ms (a zero span: it did not run).
    WorkDone(WorkId, f64, f64),
    /// The coordinator completed an inference.
    Completed(Completion),
    /// The cached share of an inference's convolutions.
    CacheHit(ModelId, f64),
    /// A frame's scene took this long on the GPU, ms.
    Scene(u64, f64),
    /// A frame's DNN work and scene were submitted this long after its start, ms.
    Submits(u64, f64, f64),
    /// A frame reached the screen at this time, ms.
    Shown(u64, f64),
    /// The CPU lane held the coordinator this long, ms.
    LentFor(f64),
}

/// Where the frame path sends its [`RunEvent`]s (cloned into the scheduler and the CPU lane).
#[derive(Resource, Clone)]
pub(crate) struct RunEvents(Arc<Stream>);

struct Stream {
    tx: Sender<RunEvent>,
    rx: Receiver<RunEvent>,
    /// Whether the app asked for a recording (from the first `Start` on).
    recording: AtomicBool,
}

impl Default for RunEvents {
    fn default() -> Self {
        let (tx, rx) = crossbeam_channel::unbounded();
        RunEvents(Arc::new(Stream {
            tx,
            rx,
            recording: AtomicBool::new(false),
        }))
    }
}

impl RunEvents {
    /// Whether the run is being recorded.
    pub fn recording(&self) -> bool {
        self.0.recording.load(Ordering::Relaxed)
    }

    /// Sends `event`, whoever listens.
    pub fn send(&self, event: RunEvent) {
        // The receiver lives as long as the sender (both in `self`): this cannot fail.
        let _ = self.0.tx.send(event);
    }

    /// Sends the event `make` builds, only while the run is recorded (nothing is built
    /// otherwise).
    pub fn record(&self, make: impl FnOnce() -> RunEvent) {
        if self.recording() {
            self.send(make());
        }
    }

    /// Starts (or restarts) the recording; the events the path sends from now on are recorded.
    pub fn start(&self, cfg: CoordinatorConfig, dnn_work_first: bool, free_at_readback: bool) {
        self.send(RunEvent::Start(cfg, dnn_work_first, free_at_readback));
        self.0.recording.store(true, Ordering::Relaxed);
    }

    /// Sends a completion, if there is one (the statistics read every one).
    pub fn completed(&self, c: Option<Completion>) {
        if let Some(c) = c {
            self.send(RunEvent::Completed(c));
        }
    }

    /// Work `id` ran from `start_ms` to `end_ms` and the coordinator answered `c` (recorded,
    /// then the completion).
    pub fn work_done(&self, id: WorkId, start_ms: f64, end_ms: f64, c: Option<Completion>) {
        self.record(|| RunEvent::WorkDone(id, start_ms, end_ms));
        self.completed(c);
    }

    /// The events sent since the last call, in order.
    pub fn drain(&self) -> impl Iterator<Item = RunEvent> + '_ {
        self.0.rx.try_iter()
    }
}

impl RunLog {
    /// Takes in one event of the run.
    pub fn observe(&mut self, event: RunEvent) {
        match event {
            RunEvent::Start(cfg, work_first, free_at_readback) => {
                self.start(&cfg, work_first, free_at_readback)
            }
            RunEvent::CpuOnCompletion(on) => self.set_cpu_on_completion(on),
            RunEvent::Registered(m) => self.register(&m),
            RunEvent::Retired(id) => self.recorder.remove_model(id),
            RunEvent::Request(id, capture_ms, variation) => self.request(id, capture_ms, variation),
            RunEvent::Admitted(id) => self.admitted(id),
            RunEvent::Planned(frame, start_ms, gpu, cpu) => {
                self.planned(frame, start_ms, &gpu, &cpu)
            }
            RunEvent::HandedOut(frame, cpu) => self.handed_out(frame, &[], &cpu),
            RunEvent::WorkDone(id, start_ms, end_ms) => self.work_done(id, start_ms, end_ms),
            RunEvent::Completed(c) => self.completed(Some(c)),
            RunEvent::CacheHit(id, hit) => self.recorder.cache_hit(id, hit),
            RunEvent::Scene(frame, ms) => self.scene(frame, ms),
            RunEvent::Submits(frame, dnn_ms, scene_ms) => self.submits(frame, dnn_ms, scene_ms),
            RunEvent::Shown(frame, ms) => self.shown(frame, ms),
            RunEvent::LentFor(ms) => self.lent_for(ms),
        }
    }

    /// The recorder learns a registered model.
    fn register(&mut self, m: &RegisteredModel) {
        let r = &mut self.recorder;
        r.add_model(m.id, &m.name, &m.costs, m.deadline_ms, m.utility);
        r.set_cpu_parallelism(m.id, m.cpu_threads, m.cpu_speedup);
        r.set_on_demand(m.id, m.on_demand);
        if let Some(steps) = &m.resumable_steps {
            r.set_resumable_steps(m.id, Some(steps));
        }
        if let Some(spec) = &m.conv_cache {
            r.set_conv_cache(m.id, Some(spec));
        }
    }
}

/// Hands the run's events to the [`RunLog`] (after the frame's decision), sends the main world
/// the scheduler latencies and readbacks it measured, and the recording when the app asks.
pub(crate) fn observe_run(
    events: Res<RunEvents>,
    mut log: ResMut<RunLog>,
    recording: Res<ExtractedRecording>,
    dnns: Query<(&MainEntity, &RenderModel)>,
    outbox: Res<Outbox>,
) {
    for event in events.drain() {
        log.observe(event);
    }
    for (model, latency_ms) in log.latencies.drain(..) {
        if let Some(dnn) = entity_of(&dnns, model) {
            outbox.send(RenderMessage::Scheduled { dnn, latency_ms });
        }
    }
    for (model, ms) in log.measured_readbacks.drain(..) {
        if let Some(dnn) = entity_of(&dnns, model) {
            outbox.send(RenderMessage::Readback { dnn, ms });
        }
    }
    if recording.export
        && let Some((scenario, replay)) = log.export()
    {
        outbox.send(RenderMessage::Recording(Box::new(RecordedRun {
            scenario_json: scenario,
            replay_json: replay,
        })));
    }
}

/// The main-world entity of the DNN the coordinator knows as `model`.
fn entity_of(dnns: &Query<(&MainEntity, &RenderModel)>, model: ModelId) -> Option<Entity> {
    dnns.iter()
        .find(|(_, m)| m.model_id == Some(model))
        .map(|(e, _)| e.id())
}

#[cfg(test)]
mod tests {
    use heimdall_coordinator::{FrameBudget, Request};

    use super::super::log::tests::gpu;
    use super::*;

    fn cfg() -> CoordinatorConfig {
        CoordinatorConfig::new(FrameBudget::new(60.0, 2.0, 1.0, 0.5))
    }

    fn done(model: ModelId, finished_ms: f64) -> Completion {
        Completion {
            model,
            request: Request {
                capture_ms: 0.0,
                content_variation: 0.0,
            },
            admitted_ms: 0.0,
            finished_ms,
            deadline_met: None,
            offloaded: false,
        }
    }

    fn model(id: ModelId) -> RegisteredModel {
        RegisteredModel {
            id,
            name: "m".into(),
            costs: vec![StepCost::gpu_and_cpu(1.0, 4.0); 2],
            deadline_ms: Some(50.0),
            utility: UtilityParams::default(),
            cpu_threads: 2,
            cpu_speedup: 1.5,
            on_demand: false,
            resumable_steps: Some(vec![1]),
            conv_cache: None,
        }
    }

    /// Until the app asks for a recording, the path sends the completions (the statistics
    /// read them) and the registrations, and builds no other event; from the start on, every
    /// event goes out, in order, the `Start` first.
    #[test]
    fn nothing_but_completions_and_models_goes_out_until_recording() {
        let events = RunEvents::default();
        let m = ModelId(3);
        events.send(RunEvent::Registered(Box::new(model(m))));
        events.record(|| panic!("built while nothing records"));
        events.work_done(WorkId(1), 1.0, 2.0, Some(done(m, 2.0)));
        events.work_done(WorkId(2), 2.0, 3.0, None);
        let before: Vec<RunEvent> = events.drain().collect();
        assert_eq!(before.len(), 2, "{before:?}");
        assert!(matches!(before[0], RunEvent::Registered(_)));
        assert!(matches!(before[1], RunEvent::Completed(c) if c.model == m));

        events.start(cfg(), true, true);
        assert!(events.recording());
        events.record(|| RunEvent::Admitted(m));
        events.work_done(WorkId(3), 4.0, 5.0, Some(done(m, 5.0)));
        let after: Vec<RunEvent> = events.drain().collect();
        let kinds: Vec<&str> = after
            .iter()
            .map(|e| match e {
                RunEvent::Start(..) => "start",
                RunEvent::Admitted(_) => "admitted",
                RunEvent::WorkDone(..) => "work",
                RunEvent::Completed(_) => "completed",
                _ => "other",
            })
            .collect();
        assert_eq!(kinds, ["start", "admitted", "work", "completed"]);
        assert_eq!(events.drain().count(), 0, "drained");
    }

    /// The run's log fed through the events, some of them from another thread (the CPU
    /// lane's workers), exports what the same calls made on it directly export, and keeps the
    /// same scheduler latencies for the main world.
    #[test]
    fn the_log_observing_the_events_records_what_direct_calls_record() {
        let m = ModelId(0);
        let registered = model(m);
        // Directly, as the scheduler did before it sent events.
        let mut direct = RunLog::new(&cfg());
        direct.recorder.add_model(
            m,
            &registered.name,
            &registered.costs,
            registered.deadline_ms,
            registered.utility,
        );
        direct.recorder.set_cpu_parallelism(m, 2, 1.5);
        direct.recorder.set_on_demand(m, false);
        direct.recorder.set_resumable_steps(m, Some(&[1]));
        direct.start(&cfg(), true, true);
        direct.set_cpu_on_completion(true);
        // Through the stream.
        let events = RunEvents::default();
        events.send(RunEvent::Registered(Box::new(registered)));
        events.start(cfg(), true, true);
        events.record(|| RunEvent::CpuOnCompletion(true));
        for frame in 0..3u64 {
            let start = frame as f64 * 16.0;
            let work = gpu(frame + 1, m, 0..2);
            direct.request(m, start, 0.1);
            direct.admitted(m);
            direct.planned(frame, start, std::slice::from_ref(&work), &[]);
            direct.submits(frame, 1.0, 3.0);
            direct.work_done(work.id, start + 3.0, start + 4.5);
            direct.completed(Some(done(m, start + 5.0)));
            direct.scene(frame, 2.0);
            direct.lent_for(4.0);
            events.record(|| RunEvent::Request(m, start, 0.1));
            events.record(|| RunEvent::Admitted(m));
            events.record(|| RunEvent::Planned(frame, start, vec![work.clone()], Vec::new()));
            events.record(|| RunEvent::Submits(frame, 1.0, 3.0));
            let lane = events.clone();
            std::thread::spawn(move || {
                lane.work_done(
                    work.id,
                    start + 3.0,
                    start + 4.5,
                    Some(done(m, start + 5.0)),
                );
            })
            .join()
            .expect("the lane's thread");
            events.record(|| RunEvent::Scene(frame, 2.0));
            events.record(|| RunEvent::LentFor(4.0));
        }
        let mut observed = RunLog::new(&cfg());
        for e in events.drain() {
            observed.observe(e);
        }
        assert_eq!(observed.latencies, direct.latencies);
        assert_eq!(observed.latencies.len(), 3);
        let (a, b) = (observed.export().unwrap(), direct.export().unwrap());
        assert_eq!(a, b);
        assert!(a.1.contains("gpu_step_ms"), "{}", a.1);
    }
}
