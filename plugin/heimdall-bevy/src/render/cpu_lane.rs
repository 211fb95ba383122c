//! CPU work handed out the moment a worker finishes, between the render world's frames.
//!
//! The render world decides once per frame; a CPU slot freed mid-frame would idle until the next
//! decision, so a slot would run at most one piece of work a frame (on a phone's four cores, one
//! slot: 60 pieces a second at 60 Hz, fewer than hands, mask and detector ask for together). So,
//! from the end of one render frame (`RenderSystems::Cleanup`) to the start of the next one's
//! preparation, the render world lends its coordinator and run log to the [`CpuLane`]: a worker
//! that finishes a piece of CPU work then reports it itself and asks the coordinator for more
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

use super::cpu::{CpuInput, SharedCpuModel, start_cpu_piece};
use super::finish::Finish;
use super::models::RenderDnns;
use super::record::RunLog;
use super::schedule::Scheduler;
use crate::clock::HeimdallClock;
use crate::results::Outbox;
use crate::workers::{CpuDone, WorkerPool, Workers};

/// Where a finished piece of CPU work is reported: the lane (which hands out more work while it
/// holds the coordinator), else the workers' mailbox, read at the next frame.
#[derive(Clone)]
pub(crate) struct CpuSink {
    lane: Option<CpuLane>,
    done: Sender<CpuDone>,
}

impl CpuSink {
    /// Reports to the workers' mailbox only.
    pub fn plain(workers: &Workers) -> Self {
        CpuSink {
            lane: None,
            done: workers.done.sender(),
        }
    }

    /// Reports `report` of work that occupied `slots` slots (still held by the caller, who gives
    /// them back once this returns).
    pub fn finished(&self, report: CpuDone, slots: usize) {
        match &self.lane {
            Some(lane) => lane.finished(report, slots, &self.done),
            None => {
                let _ = self.done.send(report);
            }
        }
    }
}

/// The render world's coordinator, lent to the workers between frames (see the module).
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
    /// The render world's coordinator and log are here (between its frames).
    lent: bool,
    /// The coordinator while lent; a spare while not (swapped, never rebuilt).
    coordinator: Coordinator,
    /// The run log while lent; a spare while not.
    log: RunLog,
    /// The frame the work handed out now counts in (the render world's next).
    frame: u64,
    models: HashMap<ModelId, LaneModel>,
    jobs: HashMap<ModelId, LaneJob>,
    /// Work handed out that needs the GPU: the next frame's encoder dispatches it.
    held: Vec<CpuWork>,
    /// Pieces reported while lent, for the render world.
    reported: Vec<CpuDone>,
    pool: Weak<WorkerPool>,
    clock: HeimdallClock,
}

impl CpuLane {
    /// A lane with a spare coordinator and log (the render world's are swapped in and out).
    pub fn new(spare: Coordinator, log: RunLog, clock: HeimdallClock) -> Self {
        CpuLane(Arc::new(Mutex::new(LaneState {
            lent: false,
            coordinator: spare,
            log,
            frame: 0,
            models: HashMap::new(),
            jobs: HashMap::new(),
            held: Vec::new(),
            reported: Vec::new(),
            pool: Weak::new(),
            clock,
        })))
    }

    fn lock(&self) -> MutexGuard<'_, LaneState> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where CPU work dispatched now reports.
    pub fn sink(&self, workers: &Workers) -> CpuSink {
        CpuSink {
            lane: Some(self.clone()),
            done: workers.done.sender(),
        }
    }

    /// A worker finished `report`'s work (occupying `slots`): while lent, the coordinator
    /// learns it now and more work goes out; else it waits in the mailbox for the next frame.
    fn finished(&self, report: CpuDone, slots: usize, done: &Sender<CpuDone>) {
        let mut st = self.lock();
        if !st.lent {
            drop(st);
            let _ = done.send(report);
            return;
        }
        st.report(report);
        st.hand_out(self, slots, done);
    }

    /// Lends `sched`'s coordinator and log to the workers (end of a render frame): CPU work
    /// reported since the last decision is taken in, and work for the free slots goes out.
    pub fn lend(&self, sched: &mut Scheduler, dnns: &RenderDnns, workers: &Workers, out: &Outbox) {
        let mut st = self.lock();
        if st.lent {
            return;
        }
        st.pool = Arc::downgrade(&workers.pool);
        st.frame = sched.frame;
        st.refresh(dnns, out);
        std::mem::swap(&mut st.coordinator, &mut sched.coordinator);
        std::mem::swap(&mut st.log, &mut sched.log);
        st.lent = true;
        for report in workers.done.drain() {
            st.report(report);
        }
        st.hand_out(self, 0, &workers.done.sender());
    }

    /// Takes the coordinator and log back into `sched` (start of a render frame): the DNNs
    /// whose inference ended while lent are free again, the others keep how far the CPU got;
    /// returns the work that needs this frame's encoder.
    pub fn take_back(&self, sched: &mut Scheduler, dnns: &mut RenderDnns) -> Vec<CpuWork> {
        let mut st = self.lock();
        if !st.lent {
            return Vec::new();
        }
        std::mem::swap(&mut st.coordinator, &mut sched.coordinator);
        std::mem::swap(&mut st.log, &mut sched.log);
        st.lent = false;
        for (id, j) in &st.jobs {
            let Some(m) = st.models.get(id) else { continue };
            if let Some(job) = dnns.map.get_mut(&m.entity).and_then(|d| d.job.as_mut())
                && (job.frame_index, job.started_ms) == (j.frame_index, j.started_ms)
            {
                job.on_cpu |= j.on_cpu;
            }
        }
        for r in std::mem::take(&mut st.reported) {
            if let Some(err) = &r.error {
                error!("heimdall: {}: CPU work: {err}", dnns.name_of(r.entity));
            }
            if (r.error.is_some() || r.finished)
                && let Some(d) = dnns.map.get_mut(&r.entity)
            {
                d.job = None;
            }
        }
        std::mem::take(&mut st.held)
    }
}

impl LaneState {
    /// The DNNs' models and inferences in flight, as the render world has them now.
    fn refresh(&mut self, dnns: &RenderDnns, out: &Outbox) {
        let clock = self.clock;
        let mut live = Vec::with_capacity(dnns.map.len());
        for (&e, d) in &dnns.map {
            let (Some(id), Some(c)) = (d.model_id, d.compiled()) else {
                continue;
            };
            live.push(id);
            self.models.entry(id).or_insert_with(|| LaneModel {
                entity: e,
                cpu: c.cpu.clone(),
                steps: c.steps,
                input: c.input,
                norm: d.normalization,
                gpu: c.gpu.clone(),
                fallback: c.placement.iter().map(|p| *p == Placement::Cpu).collect(),
            });
            match &d.job {
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
                                finish: d.finish(e, out, clock),
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

    /// Tells the coordinator (and the run log) that `report`'s work ended.
    fn report(&mut self, report: CpuDone) {
        let end = report.end_ms.max(report.start_ms);
        let c = self
            .coordinator
            .cpu_done(report.work, report.worker, report.start_ms, end);
        self.log.work_done(report.work, report.start_ms, end);
        self.log.completed(c);
        self.reported.push(report);
    }

    /// Hands out CPU work for the free slots (`extra`: slots the caller frees when it returns).
    fn hand_out(&mut self, lane: &CpuLane, extra: usize, done: &Sender<CpuDone>) {
        let Some(pool) = self.pool.upgrade() else {
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
        self.log.handed_out(self.frame, &[], &works);
        for work in works {
            self.dispatch(work, &pool, lane, done, now);
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
            self.log.work_done(work.id, now, now);
            self.log.completed(c);
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
        let sink = CpuSink {
            lane: Some(lane.clone()),
            done: done.clone(),
        };
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

/// Lends the coordinator to the workers at the end of the render frame (`RenderSystems::Cleanup`),
/// unless [`crate::HeimdallSettings::cpu_on_completion`] is off (read every frame).
pub(crate) fn lend_cpu_lane(
    mut sched: ResMut<Scheduler>,
    dnns: Res<RenderDnns>,
    workers: Res<Workers>,
    outbox: Res<Outbox>,
    settings: Res<crate::HeimdallSettings>,
) {
    if !settings.cpu_on_completion {
        return;
    }
    let lane = sched.lane.clone();
    lane.lend(&mut sched, &dnns, &workers, &outbox);
}

/// Takes the coordinator back before the render world prepares the next frame.
pub(crate) fn take_back_cpu_lane(mut sched: ResMut<Scheduler>, mut dnns: ResMut<RenderDnns>) {
    let lane = sched.lane.clone();
    let held = lane.take_back(&mut sched, &mut dnns);
    sched.held_cpu.extend(held);
}
