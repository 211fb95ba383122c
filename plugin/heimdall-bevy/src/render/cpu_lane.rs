//! CPU work handed out the moment a worker finishes, while the render world does not need its
//! coordinator.
//!
//! The render world decides once per frame; a CPU slot freed mid-frame would idle until the next
//! decision, so a slot would run at most one piece of work a frame (on a phone's four cores, one
//! slot: 60 pieces a second at 60 Hz, fewer than hands, mask and detector ask for together). So,
//! from the end of the frame's DNN encoding (`HeimdallSettings::cpu_lend_after_encode`; else from
//! the end of the render frame, `RenderSystems::Cleanup`) to the start of the next frame's
//! preparation, the render world lends its coordinator to the [`CpuLane`]: a worker that
//! finishes a piece of CPU work then reports it itself and asks the coordinator for more
//! (`Coordinator::schedule_cpu_only`), which it starts at once on the CPU models. Work that needs
//! the GPU (a fallback step's inputs, the GPU's activations to resume from) is held for the next
//! frame's encoder. The render world takes the coordinator back before it prepares the next frame
//! and learns which inferences ended and how far the others got.
//!
//! Nothing in the render world waits for a worker: the lane's lock is held for a decision (a few
//! microseconds), never while a model runs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use bevy::prelude::*;
use crossbeam_channel::Sender;
use heimdall_coordinator::{Coordinator, CpuWork, ModelId, Resume};
use heimdall_gpu::{GpuModel, Placement};
use heimdall_vision::image::{Crop, Normalization};

use super::cpu_run::{CpuInput, CpuListener, CpuSink, SharedCpuModel, start_cpu_piece};
use super::finish::Finish;
use super::models::{DnnQuery, RenderDnnReadOnlyItem};
use super::recording::{RunEvent, RunEvents};
use super::state::{dnn_mut, finish_of, name_of};
use crate::bridge::channel::{Outbox, RenderMessage};
use crate::clock::HeimdallClock;
use crate::workers::{CpuDone, WorkerPool, Workers};

/// The render world's coordinator, lent to the workers for most of each frame (see the module).
#[derive(Clone)]
pub(crate) struct CpuLane(Arc<Mutex<LaneState>>);

/// A DNN's compiled model, as the lane needs it.
struct LaneModel {
    entity: Entity,
    cpu: SharedCpuModel,
    steps: usize,
    input: [usize; 3],
    norm: Normalization,
    gpu: Option<Arc<GpuModel>>,
    /// The steps the GPU model cannot run (its CPU fallback steps).
    fallback: Vec<bool>,
}

/// The inference a DNN has in flight, as the lane needs it.
struct LaneJob {
    /// Which inference (with `started_ms`).
    frame_index: u64,
    started_ms: f64,
    pixels: Arc<Vec<u8>>,
    size: UVec2,
    crop: Crop,
    finish: Option<Finish>,
    /// It ran on the CPU model already.
    on_cpu: bool,
}

struct LaneState {
    /// The render world's coordinator is here (between its frames).
    lent: bool,
    /// The coordinator while lent; a spare while not (swapped, never rebuilt).
    coordinator: Coordinator,
    /// Where the run's events go (the render world's stream).
    events: RunEvents,
    /// The frame the work handed out now counts in (the render world's next).
    frame: u64,
    models: HashMap<ModelId, LaneModel>,
    jobs: HashMap<ModelId, LaneJob>,
    /// Work handed out that needs the GPU: the next frame's encoder dispatches it.
    held: Vec<CpuWork>,
    /// Pieces reported while lent, for the render world.
    reported: Vec<CpuDone>,
    pool: Weak<WorkerPool>,
    /// The workers' mailbox (set when lent).
    done: Option<Sender<CpuDone>>,
    /// Where a DNN whose CPU work panicked is failed (set when lent).
    outbox: Option<Outbox>,
    clock: HeimdallClock,
    /// When it was lent, ms on `clock`.
    lent_at: f64,
}

impl CpuLane {
    /// A lane with a spare coordinator (the render world's is swapped in and out) that tells
    /// the run's `events`.
    pub fn new(spare: Coordinator, events: RunEvents, clock: HeimdallClock) -> Self {
        CpuLane(Arc::new(Mutex::new(LaneState {
            lent: false,
            coordinator: spare,
            events,
            frame: 0,
            models: HashMap::new(),
            jobs: HashMap::new(),
            held: Vec::new(),
            reported: Vec::new(),
            pool: Weak::new(),
            done: None,
            outbox: None,
            clock,
            lent_at: 0.0,
        })))
    }

    fn lock(&self) -> MutexGuard<'_, LaneState> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the coordinator in use: the lent one while the lane has it, else `own` (the
    /// render world's; for read-outs between frames).
    pub fn with_running<R>(&self, own: &Coordinator, f: impl FnOnce(&Coordinator) -> R) -> R {
        let st = self.lock();
        if st.lent {
            f(&st.coordinator)
        } else {
            drop(st);
            f(own)
        }
    }

    /// Where CPU work dispatched now reports: the lane, else the workers' mailbox.
    pub fn sink(&self, workers: &Workers) -> CpuSink {
        CpuSink::with_listener(Arc::new(self.clone()), workers.done.sender())
    }

    /// Lends the render world's `coordinator` to the workers (after the frame's DNN encoding or
    /// at the end of the render frame; `frame`: the frame the work handed out counts in; the
    /// lane's spare takes its place): CPU work reported since the last decision
    /// is taken in, and work for the free slots goes out. `dnns`: each DNN's main-world entity
    /// and render-world state.
    pub fn lend<'a>(
        &self,
        (coordinator, frame): (&mut Coordinator, u64),
        dnns: impl Iterator<Item = (Entity, RenderDnnReadOnlyItem<'a, 'a>)>,
        workers: &Workers,
        out: &Outbox,
    ) {
        let mut st = self.lock();
        if st.lent {
            return;
        }
        st.pool = Arc::downgrade(&workers.pool);
        st.done = Some(workers.done.sender());
        st.outbox = Some(out.clone());
        st.frame = frame;
        st.refresh(dnns, out);
        std::mem::swap(&mut st.coordinator, coordinator);
        st.lent = true;
        st.lent_at = st.clock.now_ms();
        for report in workers.done.drain() {
            st.report(report);
        }
        st.hand_out(self, 0);
    }

    /// Takes the coordinator back into `coordinator` (start of a render frame): the DNNs whose
    /// inference ended while lent are free again, the others keep how far the CPU got; returns
    /// the work that needs this frame's encoder.
    pub fn take_back(&self, coordinator: &mut Coordinator, dnns: &mut DnnQuery) -> Vec<CpuWork> {
        let mut st = self.lock();
        if !st.lent {
            return Vec::new();
        }
        std::mem::swap(&mut st.coordinator, coordinator);
        st.lent = false;
        // The recording's `cpu_lend_ms` (the simulator hands out CPU work at once only then).
        let lent_ms = st.clock.now_ms() - st.lent_at;
        st.events.record(|| RunEvent::LentFor(lent_ms));
        for (id, j) in &st.jobs {
            let Some(m) = st.models.get(id) else { continue };
            if let Some(mut d) = dnn_mut(dnns, m.entity)
                && let Some(job) = d.run.job.as_mut()
                && (job.frame_index, job.started_ms) == (j.frame_index, j.started_ms)
            {
                job.on_cpu |= j.on_cpu;
            }
        }
        for r in std::mem::take(&mut st.reported) {
            if let (Some(times), Some(outbox)) = (r.times, &st.outbox) {
                outbox.send(RenderMessage::CpuRun {
                    dnn: r.entity,
                    times,
                });
            }
            if let Some(err) = &r.error {
                // A job that panicked fails its DNN; other errors are logged.
                match &st.outbox {
                    Some(outbox) => outbox.cpu_work_error(&name_of(dnns, r.entity), r.entity, err),
                    None => error!("heimdall: {}: CPU work: {err}", name_of(dnns, r.entity)),
                }
            }
            if (r.error.is_some() || r.finished)
                && let Some(mut d) = dnn_mut(dnns, r.entity)
            {
                d.run.job = None;
            }
        }
        std::mem::take(&mut st.held)
    }
}

impl CpuListener for CpuLane {
    /// A worker finished `report`'s work (occupying `slots`): while lent, the coordinator
    /// learns it now and more work goes out; else it waits in the mailbox for the next frame.
    fn finished(&self, report: CpuDone, slots: usize) -> Option<CpuDone> {
        let mut st = self.lock();
        if !st.lent {
            return Some(report);
        }
        st.report(report);
        st.hand_out(self, slots);
        None
    }
}

impl LaneState {
    /// The DNNs' models and inferences in flight, as the render world has them now.
    fn refresh<'a>(
        &mut self,
        dnns: impl Iterator<Item = (Entity, RenderDnnReadOnlyItem<'a, 'a>)>,
        out: &Outbox,
    ) {
        let clock = self.clock;
        let mut live = Vec::with_capacity(dnns.size_hint().0);
        for (e, d) in dnns {
            let (Some(id), Some(c)) = (d.model.model_id, d.model.compiled()) else {
                continue;
            };
            live.push(id);
            self.models.entry(id).or_insert_with(|| LaneModel {
                entity: e,
                cpu: c.cpu.clone(),
                steps: c.steps,
                input: c.input,
                norm: d.setup.normalization,
                gpu: c.gpu.clone(),
                fallback: c.placement.iter().map(|p| *p == Placement::Cpu).collect(),
            });
            match &d.run.job {
                Some(j) => {
                    let same = self.jobs.get(&id).is_some_and(|l| {
                        (l.frame_index, l.started_ms) == (j.frame_index, j.started_ms)
                    });
                    if same {
                        if let Some(l) = self.jobs.get_mut(&id) {
                            l.on_cpu = j.on_cpu;
                        }
                    } else {
                        self.jobs.insert(
                            id,
                            LaneJob {
                                frame_index: j.frame_index,
                                started_ms: j.started_ms,
                                pixels: j.pixels.clone(),
                                size: j.frame_size,
                                crop: j.crop,
                                finish: finish_of(e, d.setup, d.model, d.run, out, clock),
                                on_cpu: j.on_cpu,
                            },
                        );
                    }
                }
                None => {
                    self.jobs.remove(&id);
                }
            }
        }
        self.models.retain(|id, _| live.contains(id));
        self.jobs.retain(|id, _| live.contains(id));
    }

    /// Tells the coordinator (and the run's events) that `report`'s work ended.
    fn report(&mut self, report: CpuDone) {
        let end = report.end_ms.max(report.start_ms);
        let c = self
            .coordinator
            .cpu_done(report.work, report.worker, report.start_ms, end);
        self.events.work_done(report.work, report.start_ms, end, c);
        self.reported.push(report);
    }

    /// Hands out CPU work for the free slots (`extra`: slots the caller frees when it returns).
    fn hand_out(&mut self, lane: &CpuLane, extra: usize) {
        let (Some(pool), Some(done)) = (self.pool.upgrade(), self.done.clone()) else {
            return;
        };
        let held: usize = self.held.iter().map(|w| w.threads.max(1)).sum();
        let idle = (pool.idle() + extra).saturating_sub(held);
        if idle == 0 {
            return;
        }
        let now = self.clock.now_ms();
        let works = self.coordinator.schedule_cpu_only(now, idle);
        if works.is_empty() {
            return;
        }
        let frame = self.frame;
        self.events
            .record(|| RunEvent::HandedOut(frame, works.clone()));
        for work in works {
            self.dispatch(work, &pool, lane, &done, now);
        }
    }

    /// Starts `work` on its DNN's CPU model, or holds it for the next frame if it needs the GPU.
    fn dispatch(
        &mut self,
        work: CpuWork,
        pool: &WorkerPool,
        lane: &CpuLane,
        done: &Sender<CpuDone>,
        now: f64,
    ) {
        let (Some(m), Some(job)) = (self.models.get(&work.model), self.jobs.get_mut(&work.model))
        else {
            // Removed or replaced since the render world lent the lane.
            let c = self.coordinator.cpu_done(work.id, 0, now, now);
            self.events.work_done(work.id, now, now, c);
            return;
        };
        let fallback_step =
            !work.offloaded && work.ops.len() == 1 && m.fallback.get(work.ops.start) == Some(&true);
        let from_gpu = work.offloaded && work.resume == Resume::FromGpu && work.ops.start > 0;
        if m.gpu.is_some() && !job.on_cpu && (fallback_step || from_gpu) {
            self.held.push(work);
            return;
        }
        if let Some(gpu) = &m.gpu {
            // As `dispatch_cpu`: the GPU's cached activations are no longer one frame's.
            gpu.invalidate_conv_cache();
        }
        let input = CpuInput {
            cpu: m.cpu.clone(),
            steps: m.steps,
            input: m.input,
            norm: m.norm,
            pixels: job.pixels.clone(),
            size: job.size,
            crop: job.crop,
        };
        let sink = CpuSink::with_listener(Arc::new(lane.clone()), done.clone());
        let finish = job.finish.clone();
        start_cpu_piece(
            &work,
            m.entity,
            input,
            &mut job.on_cpu,
            finish,
            pool,
            sink,
            self.clock,
        );
    }
}
