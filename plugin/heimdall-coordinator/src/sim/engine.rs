//! The discrete-event simulation loop.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::time::Instant;

use super::noise::{Noise, NoiseSource, name_key};
use super::record::RunRecorder;
use super::replay::{Replay, ReplayError};
use super::report::{DnnStats, FrameStats, LatencyStats, Report, SchedulerStats};
use super::scenario::{Decisions, Scenario};
use crate::analyzer::StepCost;
use crate::coordinator::{
    Completion, Coordinator, CoordinatorConfig, CpuWork, Decision, Event, GpuWindow, Request,
    WorkId,
};
use crate::model::ModelId;
use crate::policy::{Policy, UnknownPolicy, policy_by_name};
use crate::timeline::{Lane, Timeline};

mod completion;
mod finish;
mod per_frame;

/// Events this close (ms) are one instant: a recorded run's times read back from JSON may differ
/// from the ones the run computed by an ulp (serde_json's default float parsing), which must not
/// split what happened at one instant over two decisions.
const SAME_INSTANT_MS: f64 = 1e-9;

/// How a simulation departs from the scenario's exact times.
#[derive(Clone, Debug, PartialEq)]
pub struct SimOptions {
    /// Log-normal noise on every step and render time (`sigma` 0: none).
    pub noise: Noise,
    /// The profile the coordinator starts from is the scenario's step times times this factor
    /// (1: exact; 2: it thinks every step takes twice as long). Measurements then correct it.
    pub misprofile: f64,
    /// Measured times replayed in place of the scenario's (noise still multiplies them).
    pub replay: Option<Replay>,
    /// Keep the timeline for a trace.
    pub record_timeline: bool,
    /// Feed a [`RunRecorder`] as the simulation runs (every vsync with the render time used,
    /// requests, chunks with the times charged, inference ends) and return its export in
    /// [`SimOutput::recorded`]: the run as a per-frame scenario and a replay. Simulating those
    /// (same policy and configuration tweak, no noise) reproduces a per-frame run bit for bit
    /// (through JSON text within 1e-9 ms: serde_json's default float parsing may round a
    /// value's last bit). The recorder has room for the whole run.
    pub record_run: bool,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            noise: Noise::NONE,
            misprofile: 1.0,
            replay: None,
            record_timeline: false,
            record_run: false,
        }
    }
}

/// Errors starting a simulation.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The policy name is not known.
    #[error(transparent)]
    Policy(#[from] UnknownPolicy),
    /// The replay does not fit the scenario.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// `misprofile` is not a finite factor > 0, or `sigma` not finite and >= 0.
    #[error("bad simulation option: {0}")]
    Option(String),
}

/// The result of a simulation.
#[derive(Clone, Debug)]
pub struct SimOutput {
    /// Frame, DNN and scheduler statistics.
    pub report: Report,
    /// Everything decided and executed (empty unless recording was asked for).
    pub timeline: Timeline,
    /// Every finished inference, in completion order.
    pub completions: Vec<Completion>,
    /// The run as a scenario and a replay ([`RunRecorder::export`]), with
    /// [`SimOptions::record_run`].
    pub recorded: Option<(Scenario, Replay)>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    GpuDone(GpuItem),
    /// Per frame: the submission holding the last chunk of `model`'s inference (`id`, which
    /// ran `start..end`) completed, so its outputs are mapped and read now.
    OutputsRead {
        id: WorkId,
        model: ModelId,
        start: f64,
        end: f64,
    },
    CpuDone {
        worker: usize,
        id: WorkId,
    },
    Vsync(usize),
    /// Per frame with the scenario's `cpu_lend_ms`: the plugin lends its coordinator to the CPU
    /// workers before frame `k`'s decision, and the free slots get work.
    Lend(usize),
    Request {
        dnn: usize,
        index: usize,
    },
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum GpuItem {
    Render {
        frame: usize,
        start: f64,
    },
    Chunk {
        id: WorkId,
        model: ModelId,
        start: f64,
        /// It ends its inference on the GPU (its ops reach the model's last step).
        last: bool,
    },
}

impl Kind {
    fn rank(&self) -> u8 {
        match self {
            Kind::GpuDone(_) | Kind::OutputsRead { .. } => 0,
            Kind::CpuDone { .. } => 1,
            Kind::Lend(_) => 2,
            Kind::Vsync(_) => 3,
            Kind::Request { .. } => 4,
        }
    }
}

struct Ev {
    t: f64,
    seq: u64,
    kind: Kind,
}

impl PartialEq for Ev {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Ev {}
impl PartialOrd for Ev {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Ev {
    /// Reversed: the heap pops the earliest event first.
    fn cmp(&self, o: &Self) -> Ordering {
        o.t.total_cmp(&self.t)
            .then(o.kind.rank().cmp(&self.kind.rank()))
            .then(o.seq.cmp(&self.seq))
    }
}

struct Sim<'a> {
    sc: &'a Scenario,
    opts: &'a SimOptions,
    coord: Coordinator,
    /// Noise key of each DNN (its name's hash: a DNN alone sees the same noise).
    keys: Vec<u64>,
    /// Inferences finished so far per DNN (the index of the one running).
    finished: Vec<usize>,
    presented: Vec<u64>,
    heap: BinaryHeap<Ev>,
    seq: u64,
    period: f64,
    end_ms: f64,
    gpu_end: f64,
    next_vsync: usize,
    last_render_end: f64,
    workers: Vec<bool>,
    frames_on_time: usize,
    render_ends: Vec<f64>,
    completions: Vec<Completion>,
    gpu_busy: Vec<f64>,
    cpu_busy: Vec<f64>,
    decision_us: Vec<f64>,
    cpu_started: HashMap<WorkId, f64>,
    cpu_model: HashMap<WorkId, usize>,
    /// The slots each piece of CPU work occupies.
    cpu_slots: HashMap<WorkId, Vec<usize>>,
    record: bool,
    /// Decisions once per frame ([`Decisions::PerFrame`]).
    per_frame: bool,
    /// Per frame: the requests waiting for the next frame start at which their DNN is idle.
    held: Vec<Option<Request>>,
    /// Per frame: a rendered frame started at this instant, so a decision is due.
    frame_due: bool,
    /// Per frame with `cpu_lend_ms`: the plugin lent its coordinator to the CPU workers at this
    /// instant, so CPU work goes out.
    lend_due: bool,
    /// Per frame with `cpu_lend_ms`: the frame before whose decision a lend is queued.
    lend_queued: Option<usize>,
    /// Per frame with `dnn_work_first`: the vsync's render (frame, render time), queued after
    /// the frame's chunks.
    render_due: Option<(usize, f64)>,
    /// GPU work issued in each frame's period (its render and the chunks decided then), ms.
    work_ms: Vec<f64>,
    /// The frame whose vsync came last.
    frame_now: usize,
    /// Per frame with `results_at_frame_start`: finished GPU chunks not yet told to the
    /// coordinator (id, model, start, end, last), in the order they ended.
    unreported: Vec<(WorkId, ModelId, f64, f64, bool)>,
    recorder: Option<RunRecorder>,
}

/// The scheduling event of two at one instant: a finished render (a new frame) first, then
/// finished GPU work, finished CPU work, a request.
fn merge(a: Option<Event>, b: Option<Event>) -> Option<Event> {
    let rank = |e: &Option<Event>| match e {
        Some(Event::FrameRendered) => 5,
        Some(Event::GpuWorkDone) => 4,
        Some(Event::CpuWorkDone) => 3,
        Some(Event::Request) => 2,
        Some(Event::Tick) => 1,
        None => 0,
    };
    if rank(&b) > rank(&a) { b } else { a }
}

/// Runs `scenario` under the policy called `policy`; `record_timeline` keeps the timeline for a
/// trace.
pub fn simulate(
    scenario: &Scenario,
    policy: &str,
    record_timeline: bool,
) -> Result<SimOutput, SimError> {
    simulate_with(scenario, policy, record_timeline, |_| {})
}

/// [`simulate`] with the coordinator's configuration adjusted by `tweak` (e.g. to switch the
/// deadline override or the offload off).
pub fn simulate_with(
    scenario: &Scenario,
    policy: &str,
    record_timeline: bool,
    tweak: impl FnOnce(&mut CoordinatorConfig),
) -> Result<SimOutput, SimError> {
    let opts = SimOptions {
        record_timeline,
        ..SimOptions::default()
    };
    simulate_opts(scenario, policy_by_name(policy)?, &opts, tweak)
}

/// The general form: any [`Policy`] (an app's own too), noise, a wrong profile or a replayed
/// trace, and the coordinator's configuration adjusted by `tweak`.
pub fn simulate_opts(
    scenario: &Scenario,
    policy: Box<dyn Policy>,
    opts: &SimOptions,
    tweak: impl FnOnce(&mut CoordinatorConfig),
) -> Result<SimOutput, SimError> {
    check_options(scenario, opts)?;
    let record_timeline = opts.record_timeline;
    let cfg = coordinator_config(scenario, record_timeline, tweak);
    let n = scenario.dnns.len();
    let period = 1000.0 / scenario.frame_rate;
    let end_ms = match &opts.replay {
        Some(r) if scenario.decisions == Decisions::PerFrame => {
            r.window_end_ms(scenario.duration_s * 1000.0, 1000.0 / scenario.frame_rate)
        }
        _ => scenario.duration_s * 1000.0,
    };
    let mut recorder = opts
        .record_run
        .then(|| run_recorder(scenario, &cfg, end_ms));
    let mut coord = Coordinator::new(cfg, policy);
    register_dnns(scenario, opts, &mut coord, recorder.as_mut());
    let mut sim = Sim {
        sc: scenario,
        opts,
        coord,
        keys: scenario.dnns.iter().map(|d| name_key(&d.name)).collect(),
        finished: vec![0; n],
        presented: Vec::new(),
        heap: BinaryHeap::new(),
        seq: 0,
        period,
        end_ms,
        gpu_end: 0.0,
        next_vsync: 0,
        last_render_end: 0.0,
        workers: vec![false; scenario.cpu_workers],
        frames_on_time: 0,
        render_ends: Vec::new(),
        completions: Vec::new(),
        gpu_busy: vec![0.0; n],
        cpu_busy: vec![0.0; n],
        decision_us: Vec::new(),
        cpu_started: HashMap::new(),
        cpu_model: HashMap::new(),
        cpu_slots: HashMap::new(),
        record: record_timeline,
        per_frame: scenario.decisions == Decisions::PerFrame,
        held: vec![None; n],
        frame_due: false,
        lend_due: false,
        lend_queued: None,
        render_due: None,
        work_ms: Vec::new(),
        frame_now: 0,
        unreported: Vec::new(),
        recorder,
    };
    sim.run();
    Ok(sim.finish())
}

/// The options' factors must be in range; a replayed trace must fit the scenario.
fn check_options(scenario: &Scenario, opts: &SimOptions) -> Result<(), SimError> {
    if !(opts.misprofile.is_finite() && opts.misprofile > 0.0) {
        return Err(SimError::Option(format!(
            "misprofile must be a finite factor > 0, got {}",
            opts.misprofile
        )));
    }
    if !(opts.noise.sigma.is_finite() && opts.noise.sigma >= 0.0) {
        return Err(SimError::Option(format!(
            "jitter sigma must be finite and >= 0, got {}",
            opts.noise.sigma
        )));
    }
    if let Some(r) = &opts.replay {
        r.check(scenario)?;
    }
    Ok(())
}

/// The coordinator's configuration for `scenario`, adjusted by `tweak`.
fn coordinator_config(
    scenario: &Scenario,
    record_timeline: bool,
    tweak: impl FnOnce(&mut CoordinatorConfig),
) -> CoordinatorConfig {
    let mut cfg = CoordinatorConfig::new(scenario.budget());
    cfg.alpha = scenario.alpha;
    cfg.cpu_workers = scenario.cpu_workers;
    cfg.record_timeline = record_timeline;
    if let Some(e) = scenario.render_estimate_ms {
        cfg.budget.render_ms = e;
    }
    if let Some(c) = scenario.cpu_chunk_ms {
        cfg.placement.cpu_chunk_ms = c;
    }
    tweak(&mut cfg);
    cfg
}

/// A run recorder with room for the whole run (`end_ms`): every vsync, and every request (at
/// most one inference each).
fn run_recorder(scenario: &Scenario, cfg: &CoordinatorConfig, end_ms: f64) -> RunRecorder {
    let frames = ((end_ms * scenario.frame_rate / 1000.0).round() as usize)
        .max((scenario.duration_s * scenario.frame_rate).round() as usize);
    let requests: usize = scenario
        .dnns
        .iter()
        .map(|d| d.request.times(end_ms).len())
        .sum();
    let mut r = RunRecorder::with_capacity(cfg, frames.max(requests));
    r.set_frame_rate(scenario.frame_rate);
    r.set_frame_order(scenario.dnn_work_first, scenario.results_at_frame_start);
    r.set_cpu_dispatch_on_completion(scenario.cpu_dispatch_on_completion);
    r.set_cpu_lend_ms(scenario.cpu_lend_ms);
    r
}

/// Registers the scenario's DNNs with `coord` (their profiles scaled by the misprofile factor)
/// and with the recorder, in order: a DNN's index is its model id.
fn register_dnns(
    scenario: &Scenario,
    opts: &SimOptions,
    coord: &mut Coordinator,
    mut recorder: Option<&mut RunRecorder>,
) {
    for (i, d) in scenario.dnns.iter().enumerate() {
        let mut spec = d.spec();
        for s in &mut spec.steps {
            *s = StepCost {
                gpu_ms: s.gpu_ms * opts.misprofile,
                cpu_ms: s.cpu_ms * opts.misprofile,
                processors: s.processors,
            };
        }
        if let Some(r) = recorder.as_deref_mut() {
            r.add_model(
                ModelId(i),
                &spec.name,
                &spec.steps,
                spec.deadline_ms,
                spec.utility,
            );
            if d.resumable_steps.is_some() {
                r.set_resumable_steps(ModelId(i), d.resumable_steps.as_deref());
            }
        }
        let id = coord.register(spec);
        debug_assert_eq!(id, ModelId(i), "the simulator's DNN index is its model id");
        coord.set_cpu_parallelism(id, d.cpu_threads, d.cpu_speedup);
        coord.set_on_demand(id, d.is_on_demand());
        if let Some(r) = recorder.as_deref_mut() {
            r.set_cpu_parallelism(id, d.cpu_threads, d.cpu_speedup);
            r.set_on_demand(id, d.is_on_demand());
        }
        if d.resumable_steps.is_some() {
            coord.set_resumable_steps(id, d.resumable_steps.as_deref());
        }
        if let Some(cache) = &d.conv_cache {
            let spec = cache.spec();
            coord
                .set_conv_cache(id, Some(spec.clone()))
                .expect("the scenario's cache spec was validated");
            if let Some(r) = recorder.as_deref_mut() {
                r.set_conv_cache(id, Some(&spec));
            }
        }
    }
}

impl Sim<'_> {
    fn push(&mut self, t: f64, kind: Kind) {
        self.seq += 1;
        self.heap.push(Ev {
            t,
            seq: self.seq,
            kind,
        });
    }

    fn run(&mut self) {
        for k in 0..self.frames() {
            self.push(self.vsync_at(k), Kind::Vsync(k));
        }
        for (i, d) in self.sc.dnns.iter().enumerate() {
            for (index, t) in d.request.times(self.end_ms).into_iter().enumerate() {
                self.push(t, Kind::Request { dnn: i, index });
            }
        }
        while let Some(ev) = self.heap.pop() {
            if ev.t > self.end_ms {
                break;
            }
            let now = ev.t;
            let mut event = self.handle(ev);
            // What happens at one instant is seen by one decision, as a render loop collects a
            // frame's requests and completions before it decides.
            // Within SAME_INSTANT_MS: times read back from a file may be an ulp apart.
            while self
                .heap
                .peek()
                .is_some_and(|n| n.t <= now + SAME_INSTANT_MS)
            {
                let next = self.heap.pop().expect("peeked");
                event = merge(event, self.handle(next));
            }
            if self.per_frame {
                let lend = std::mem::take(&mut self.lend_due);
                if std::mem::take(&mut self.frame_due) {
                    self.decide_frame(now);
                } else if lend
                    || (event == Some(Event::CpuWorkDone)
                        && self.sc.cpu_dispatch_on_completion
                        && self.lent(now))
                {
                    self.dispatch_cpu_only(now);
                }
            } else if let Some(e) = event {
                self.decide(now, e);
            }
        }
    }

    /// Applies one event to the simulated GPU, workers and coordinator; returns the scheduling
    /// event it makes (`None` for a vsync: its render is queued, the decision follows it; per
    /// frame, a rendered vsync sets `frame_due` instead and requests are held).
    fn handle(&mut self, ev: Ev) -> Option<Event> {
        let now = ev.t;
        Some(match ev.kind {
            Kind::Vsync(k) => {
                self.on_vsync(k, now);
                return None;
            }
            Kind::Lend(_) => {
                self.lend_due = true;
                return None;
            }
            Kind::GpuDone(GpuItem::Render { frame, start }) => {
                self.on_render_done(frame, start, now);
                Event::FrameRendered
            }
            Kind::GpuDone(GpuItem::Chunk {
                id,
                model,
                start,
                last,
            }) => {
                self.gpu_busy[model.0] += now - start;
                if self.per_frame && self.sc.results_at_frame_start {
                    self.unreported.push((id, model, start, now, last));
                } else if let Some(c) = self.coord.gpu_done(id, start, now) {
                    self.completed(c);
                }
                Event::GpuWorkDone
            }
            Kind::OutputsRead {
                id,
                model,
                start,
                end,
            } => {
                self.gpu_busy[model.0] += end - start;
                if let Some(c) = self.coord.gpu_outputs_read(model, now) {
                    self.completed(c);
                }
                // The chunk's measured times refine the profile (the frame's timestamps).
                if let Some(c) = self.coord.gpu_done(id, start, end) {
                    self.completed(c);
                }
                Event::GpuWorkDone
            }
            Kind::CpuDone { worker, id } => {
                self.on_cpu_done(worker, id, now);
                Event::CpuWorkDone
            }
            Kind::Request { dnn, index } => {
                self.on_request(dnn, index, now);
                Event::Request
            }
        })
    }

    /// Vsync `k` at `now`: its frame dropped (a late GPU, not per frame) or its render queued
    /// (per frame with the DNN work first: held until the frame's decision).
    fn on_vsync(&mut self, k: usize, now: f64) {
        self.next_vsync = k + 1;
        self.frame_now = k;
        // Per frame, as in the plugin, no frame is skipped: a late GPU queues it.
        if !self.per_frame && self.last_render_end > now {
            if let Some(r) = self.recorder.as_mut() {
                r.frame(now, None);
            }
            if self.record {
                self.coord.timeline_mut().instant(
                    Lane::Render,
                    "render",
                    format!("dropped frame {k}"),
                    now,
                    Vec::new(),
                );
            }
        } else {
            let render = self.render_ms(k);
            let (dnn, scene) = self.submit_delays(k);
            if let Some(r) = self.recorder.as_mut() {
                r.frame_submitted(now, Some(render), Some(dnn), Some(scene));
            }
            self.frame_due = true;
            if self.per_frame && self.sc.dnn_work_first {
                // Queued after the chunks of this frame's decision.
                self.render_due = Some((k, render));
                self.last_render_end = f64::INFINITY;
            } else {
                self.queue_render(now, k, render);
            }
        }
    }

    /// Frame `frame`'s render, started at `start`, ended at `now`.
    fn on_render_done(&mut self, frame: usize, start: f64, now: f64) {
        let vsync = self.vsync_at(frame);
        let on_time = now <= vsync + self.period + 1e-9;
        self.frames_on_time += usize::from(on_time);
        self.render_ends.push(now);
        let blank = self.display_blank(frame, now);
        self.presented.push(blank);
        self.coord.observe_render(now - start);
        if self.record {
            let args = vec![("on_time", on_time.to_string())];
            self.coord.timeline_mut().span(
                Lane::Render,
                "render",
                format!("frame {frame}"),
                start,
                now,
                args,
            );
        }
    }

    /// CPU work `id` ended at `now` on `worker` (and the slots it held).
    fn on_cpu_done(&mut self, worker: usize, id: WorkId, now: f64) {
        for k in self.cpu_slots.remove(&id).unwrap_or_else(|| vec![worker]) {
            self.workers[k] = false;
        }
        let start = self.cpu_started.remove(&id).unwrap_or(now);
        let model = self.coord_model_of_cpu(id);
        if let Some(m) = model {
            self.cpu_busy[m] += now - start;
        }
        if let Some(c) = self.coord.cpu_done(id, worker, start, now) {
            self.completed(c);
        }
    }

    /// Request `index` of DNN `dnn` at `now`: held for the frame's decision (per frame) or
    /// submitted.
    fn on_request(&mut self, dnn: usize, index: usize, now: f64) {
        let req = Request {
            capture_ms: now,
            content_variation: self.sc.dnns[dnn].content_variation_of(index),
        };
        if let Some(r) = self.recorder.as_mut() {
            r.request(ModelId(dnn), now, req.content_variation);
        }
        if self.per_frame {
            // The plugin keeps one pending request per DNN: the newer one wins, and the
            // coordinator hears of every one (the requested rate is the app's).
            self.held[dnn] = Some(req);
            self.coord.requested(ModelId(dnn), now);
        } else {
            self.coord.submit(ModelId(dnn), req, now);
        }
    }

    /// Render time of frame `f`: the scenario's (or the replayed) times the noise.
    fn render_ms(&self, f: usize) -> f64 {
        let base = self
            .opts
            .replay
            .as_ref()
            .and_then(|r| r.render(f))
            .unwrap_or(self.sc.render_ms);
        base * self.opts.noise.factor(NoiseSource::Render, f as u64, 0, 0)
    }

    /// Time of `ops` of DNN `m`'s running inference on the GPU (`gpu`) or the CPU (on one
    /// thread: the caller divides by the DNN's `cpu_speedup`).
    fn steps_ms(&self, m: usize, ops: std::ops::Range<usize>, gpu: bool) -> f64 {
        let d = &self.sc.dnns[m];
        let k = self.finished[m];
        let table = if gpu { &d.gpu_op_ms } else { &d.cpu_op_ms };
        let source = if gpu {
            NoiseSource::GpuStep
        } else {
            NoiseSource::CpuStep
        };
        ops.map(|i| {
            let base = self
                .opts
                .replay
                .as_ref()
                .and_then(|r| r.step(&d.name, gpu, k, i))
                .unwrap_or(table[i]);
            base * self
                .opts
                .noise
                .factor(source, self.keys[m], k as u64, i as u64)
        })
        .sum()
    }

    fn coord_model_of_cpu(&mut self, id: WorkId) -> Option<usize> {
        self.cpu_model.remove(&id)
    }

    fn decide(&mut self, now: f64, event: Event) {
        let window = GpuWindow {
            start_ms: now.max(self.gpu_end),
            end_ms: self.next_vsync as f64 * self.period,
        };
        self.dispatch(now, event, window);
    }

    /// Asks the coordinator for a decision and puts its GPU chunks on the queue (in order, after
    /// what is queued) and its CPU work on idle workers.
    fn dispatch(&mut self, now: f64, event: Event, window: GpuWindow) {
        let idle = self.workers.iter().filter(|b| !**b).count();
        let t0 = Instant::now();
        let d: Decision = self.coord.schedule(now, event, window, idle);
        self.decision_us.push(t0.elapsed().as_secs_f64() * 1e6);
        let frame = if self.per_frame {
            self.frame_now
        } else {
            (now / self.period + 1e-9).floor() as usize
        };
        let submitted = now + self.submit_delays(frame).0;
        // Per frame (the plugin), a DNN's outputs are read when the frame's submission holding
        // its last chunk has completed (wgpu maps a buffer once the submission that last used it
        // is done), not when that chunk ends.
        let read_with_submission = self.per_frame && !self.sc.results_at_frame_start;
        let mut read_at_end = Vec::new();
        for g in d.gpu {
            let cost = self.steps_ms(g.model.0, g.ops.clone(), true) + self.sc.chunk_overhead_ms;
            if let Some(r) = self.recorder.as_mut() {
                r.gpu_chunk(g.model, g.ops.clone(), cost);
            }
            self.add_work(frame, cost);
            let start = now.max(self.gpu_end).max(submitted);
            self.gpu_end = start + cost;
            let last = g.ops.end >= self.sc.dnns[g.model.0].gpu_op_ms.len();
            if read_with_submission && last {
                read_at_end.push((g.id, g.model, start, self.gpu_end));
                continue;
            }
            self.push(
                self.gpu_end,
                Kind::GpuDone(GpuItem::Chunk {
                    id: g.id,
                    model: g.model,
                    start,
                    last,
                }),
            );
        }
        for (id, model, start, end) in read_at_end {
            let readback = self.readback(frame, model);
            let kind = Kind::OutputsRead {
                id,
                model,
                start,
                end,
            };
            self.push(self.gpu_end + readback, kind);
        }
        self.start_cpu(now, d.cpu);
    }
    /// Per frame with `cpu_dispatch_on_completion`: a worker finished mid-frame and takes its
    /// next CPU work at once.
    fn dispatch_cpu_only(&mut self, now: f64) {
        let idle = self.workers.iter().filter(|b| !**b).count();
        let t0 = Instant::now();
        let cpu = self.coord.schedule_cpu_only(now, idle);
        self.decision_us.push(t0.elapsed().as_secs_f64() * 1e6);
        self.start_cpu(now, cpu);
    }

    /// Puts CPU work on idle slots (each piece on its `threads` of them).
    fn start_cpu(&mut self, now: f64, work: Vec<CpuWork>) {
        for c in work {
            let slots: Vec<usize> = (0..self.workers.len())
                .filter(|&k| !self.workers[k])
                .take(c.threads.max(1))
                .collect();
            assert_eq!(
                slots.len(),
                c.threads.max(1),
                "the coordinator got the idle slots"
            );
            for &k in &slots {
                self.workers[k] = true;
            }
            let worker = slots[0];
            self.cpu_slots.insert(c.id, slots);
            let speedup = self.sc.dnns[c.model.0].cpu_speedup;
            let cost = self.steps_ms(c.model.0, c.ops.clone(), false) / speedup;
            if let Some(r) = self.recorder.as_mut() {
                r.cpu_chunk(c.model, c.ops.clone(), cost);
            }
            self.cpu_started.insert(c.id, now);
            self.cpu_model.insert(c.id, c.model.0);
            self.push(now + cost, Kind::CpuDone { worker, id: c.id });
        }
    }
}
