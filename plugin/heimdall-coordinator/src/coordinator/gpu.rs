//! GPU dispatch: frame-budget chunks packed into the slack between renders (Heimdall), whole
//! runs (the uncoordinated baseline, or coordinated without chunking for ablations), or `K` ops
//! per frame (Unity Sentis' baseline).

use std::ops::Range;

use super::Coordinator;
use super::state::{Rank, choose, cmp_rank};
use super::types::{Decision, GpuWindow, GpuWork};
use crate::model::ModelId;
use crate::policy::PolicyContext;
use crate::processor::Processor;
use crate::timeline::Lane;

/// Consecutive frames without room after which the device counts as behind the frame rate.
const BEHIND_FRAMES: u32 = 3;

/// Where the frame's GPU window stands for one pick ([`Coordinator::schedule_gpu_budget`]).
#[derive(Clone, Copy)]
struct Room {
    /// The window's start (not before now).
    frame_start: f64,
    /// The window's end less the margin.
    hard_end: f64,
    /// The window holds the whole budget (nothing of this frame ran yet).
    fresh_frame: bool,
    /// Where the next chunk would start.
    cursor: f64,
    /// The end of the room this job may take (earlier where a job coming back from the CPU
    /// would be chosen first).
    horizon: f64,
    /// No room left in this frame.
    closed: bool,
}

impl Coordinator {
    /// Whether model `i`'s job can take GPU work now (`queue_behind_own`: even while its previous
    /// chunk is still queued).
    fn gpu_eligible(&self, i: usize, queue_behind_own: bool) -> bool {
        let m = &self.models[i];
        let Some(job) = &m.job else { return false };
        job.processor == Processor::Gpu
            && !job.cpu_inflight
            && job.planned < m.analysis.len()
            && (queue_behind_own || job.gpu_inflight == 0)
            && m.analysis.gpu_can_run(job.planned)
    }

    /// GPU candidates with their priority keys.
    fn gpu_candidates(&self, ctx: &PolicyContext, queue_behind_own: bool) -> Vec<(usize, Rank)> {
        (0..self.models.len())
            .filter(|&i| self.gpu_eligible(i, queue_behind_own))
            .filter_map(|i| self.key_of(ctx, i).map(|k| (i, k)))
            .collect()
    }

    /// When model `i`'s job will need the GPU again after CPU work, if it is waiting on one.
    fn return_time(&self, i: usize) -> Option<f64> {
        let m = &self.models[i];
        let job = m.job.as_ref()?;
        if job.processor != Processor::Gpu || job.planned >= m.analysis.len() {
            return None;
        }
        let a = &m.analysis;
        if job.cpu_inflight {
            Some(job.cpu_planned_end)
        } else if job.gpu_inflight > 0 && !a.gpu_can_run(job.planned) {
            let end = a.partition.chunk_containing(job.planned).ops.end;
            Some(job.gpu_planned_end + a.costs.range_ms(job.planned..end, Processor::Cpu))
        } else {
            None
        }
    }

    fn dispatch_gpu(
        &mut self,
        i: usize,
        ops: Range<usize>,
        (est, start): (f64, f64),
        (oversized, overridden): (bool, bool),
        out: &mut Decision,
    ) {
        let m = &mut self.models[i];
        let job = m.job.as_mut().expect("candidate has a job");
        job.planned = ops.end;
        job.gpu_inflight += 1;
        job.gpu_planned_end = start + est;
        job.last_on = Some(Processor::Gpu);
        m.gpu_recent_ms += est;
        if overridden {
            m.overrides += 1;
        }
        let m = &self.models[i];
        let job = m.job.as_ref().expect("candidate has a job");
        let v = self.view(m, i, job, start);
        self.policy.on_dispatch(&v);
        if self.timeline.is_enabled() {
            let name = self.models[i].name.clone();
            let mut args = vec![("ops", format!("{}..{}", ops.start, ops.end))];
            if overridden {
                args.push(("deadline_override", "true".into()));
            }
            if oversized {
                args.push(("oversized", "true".into()));
            }
            self.timeline
                .instant(Lane::Coordinator, "decision", name, start, args);
        }
        let id = self.new_work(ModelId(i), ops.clone(), (Processor::Gpu, 0), start + est);
        out.gpu.push(GpuWork {
            id,
            model: ModelId(i),
            ops,
            est_ms: est,
            planned_start_ms: start,
            oversized,
            deadline_override: overridden,
        });
    }

    /// Heimdall: chunks of the current partition, highest priority first, packed into the window
    /// up to the next render (plus the relaxation for a chunk's tail); a job coming back from its
    /// CPU step with a higher priority keeps the GPU free for itself.
    pub(super) fn schedule_gpu_budget(
        &mut self,
        ctx: &PolicyContext,
        window: GpuWindow,
        out: &mut Decision,
    ) {
        let b = self.cfg.budget;
        let oh = b.chunk_overhead_ms;
        let frame_start = window.start_ms.max(ctx.now_ms);
        let hard_end = window.end_ms - b.margin_ms;
        let fresh_frame = hard_end - frame_start >= b.budget_ms() - 1e-9;
        let mut cursor = frame_start;
        // A device behind the frame rate (its queued work runs past the next render, frame
        // after frame) never has room for a chunk: there, a job past its deadline gets one step
        // as the frame's only work, or GPU jobs would never progress. One closed frame (after
        // an oversized step) is not enough: that frame must stay on time.
        let behind = self.note_window(window, hard_end - frame_start <= oh);
        let mut excluded: Vec<usize> = Vec::new();
        // Keys are computed once per decision; only a job that got work is re-scored.
        let mut keys: Vec<Option<Rank>> = (0..self.models.len())
            .map(|i| self.key_of(ctx, i))
            .collect();
        let mut cands: Vec<(usize, Rank)> = Vec::with_capacity(self.models.len());
        loop {
            // No room left in this frame (see `behind` for the one exception).
            let closed = hard_end - cursor <= oh;
            if closed && (cursor > frame_start || !behind) {
                break;
            }
            cands.clear();
            cands.extend(
                (0..self.models.len())
                    .filter(|i| !excluded.contains(i) && self.gpu_eligible(*i, true))
                    .filter_map(|i| keys[i].map(|k| (i, k))),
            );
            let elapsed = cursor - ctx.now_ms;
            let Some((i, overridden)) = choose(&cands, elapsed) else {
                break;
            };
            if closed && !overridden {
                break;
            }
            let ki = keys[i].expect("a candidate has a rank");
            // Leave the GPU free for a job coming back from its CPU ops that would be chosen
            // before this one (checked after every dispatch: a job just queued may now wait on a
            // CPU op).
            let horizon = (0..self.models.len())
                .filter(|&j| j != i)
                .filter_map(|j| Some((j, keys[j]?, self.return_time(j)?)))
                .filter(|&(j, kj, _)| {
                    choose(&[(i, ki), (j, kj)], elapsed).is_some_and(|c| c.0 == j)
                })
                .map(|(_, _, t)| t)
                .fold(hard_end, f64::min);
            let room = Room {
                frame_start,
                hard_end,
                fresh_frame,
                cursor,
                horizon,
                closed,
            };
            let (p, pick) = self.pick_gpu_ops(i, room);
            match pick {
                Some((end, est, oversized)) => {
                    self.dispatch_gpu(i, p..end, (est, cursor), (oversized, overridden), out);
                    cursor += est;
                    keys[i] = self.key_of(ctx, i);
                }
                None => excluded.push(i),
            }
        }
    }

    /// Counts the frames whose window had no room from the start (`closed`); whether the
    /// device is behind the frame rate ([`BEHIND_FRAMES`] of them in a row).
    fn note_window(&mut self, window: GpuWindow, closed: bool) -> bool {
        if window.end_ms != self.closed_streak.1 {
            let streak = if closed { self.closed_streak.0 + 1 } else { 0 };
            self.closed_streak = (streak, window.end_ms);
        }
        self.closed_streak.0 >= BEHIND_FRAMES
    }

    /// What job `i` gets of the GPU in `room`: its next op `p`, and the end of the ops it runs,
    /// their estimate and whether the one step is oversized (`None`: nothing fits). A closed
    /// window gives one step; else the rest of the chunk if it ends by the horizon (relaxed at
    /// the frame's end), else its longest prefix that does, else an oversized first step alone
    /// in a fresh frame.
    fn pick_gpu_ops(&self, i: usize, room: Room) -> (usize, Option<(usize, f64, bool)>) {
        let b = self.cfg.budget;
        let oh = b.chunk_overhead_ms;
        let Room {
            frame_start,
            hard_end,
            fresh_frame,
            cursor,
            horizon,
            closed,
        } = room;
        let relaxed = if horizon >= hard_end {
            hard_end + b.relaxation_ms
        } else {
            horizon
        };
        let m = &self.models[i];
        let a = &m.analysis;
        let p = m.job.as_ref().expect("candidate has a job").planned;
        let chunk_end = a.partition.chunk_containing(p).ops.end;
        let full = a.costs.range_ms(p..chunk_end, Processor::Gpu) + oh;
        let step = a.step(p).gpu_ms + oh;
        let pick = if closed {
            Some((p + 1, step, step > b.budget_ms()))
        } else if cursor + full <= relaxed {
            Some((chunk_end, full, false))
        } else {
            // Longest prefix of the chunk that ends by the horizon.
            let room = horizon - cursor - oh;
            let base = a.costs.prefix_gpu[p];
            let pre = &a.costs.prefix_gpu[p + 1..=chunk_end];
            let k = pre.partition_point(|x| x - base <= room);
            if k > 0 {
                let end = p + k;
                Some((end, a.costs.range_ms(p..end, Processor::Gpu) + oh, false))
            } else if fresh_frame
                && cursor == frame_start
                && horizon >= hard_end
                && a.step(p).gpu_ms + oh > b.budget_ms()
            {
                Some((p + 1, a.step(p).gpu_ms + oh, true))
            } else {
                None
            }
        };
        (p, pick)
    }

    /// The whole run of GPU steps (the rest of the unit) from job `i`'s next op.
    fn whole_run(&self, i: usize) -> (Range<usize>, f64) {
        let a = &self.models[i].analysis;
        let p = self.models[i].job.as_ref().expect("job").planned;
        let end = a.costs.unit_containing(p).expect("op in a unit").ops.end;
        let est = a.costs.range_ms(p..end, Processor::Gpu) + self.cfg.budget.chunk_overhead_ms;
        (p..end, est)
    }

    /// The uncoordinated baseline: every ready job enqueues its whole GPU run at once.
    pub(super) fn schedule_gpu_whole(
        &mut self,
        ctx: &PolicyContext,
        window: GpuWindow,
        out: &mut Decision,
    ) {
        let mut cursor = window.start_ms.max(ctx.now_ms);
        loop {
            let cands = self.gpu_candidates(ctx, false);
            let Some(&(i, key)) = cands.iter().max_by(|a, b| cmp_rank(&a.1, &b.1)) else {
                break;
            };
            let (ops, est) = self.whole_run(i);
            self.dispatch_gpu(i, ops, (est, cursor), (false, key.critical), out);
            cursor += est;
        }
    }

    /// A coordinated policy without chunking (ablation): whole runs, highest priority first,
    /// started while the window before the next render is open (a run may overrun it: that is
    /// what chunking prevents).
    pub(super) fn schedule_gpu_whole_ranked(
        &mut self,
        ctx: &PolicyContext,
        window: GpuWindow,
        out: &mut Decision,
    ) {
        let mut cursor = window.start_ms.max(ctx.now_ms);
        let hard_end = window.end_ms - self.cfg.budget.margin_ms;
        while cursor < hard_end {
            let cands = self.gpu_candidates(ctx, false);
            let Some((i, overridden)) = choose(&cands, cursor - ctx.now_ms) else {
                break;
            };
            let (ops, est) = self.whole_run(i);
            self.dispatch_gpu(i, ops, (est, cursor), (false, overridden), out);
            cursor += est;
        }
    }

    /// `K` ops of one model per rendered frame, models in turn (Unity Sentis).
    pub(super) fn schedule_gpu_ops(
        &mut self,
        ctx: &PolicyContext,
        window: GpuWindow,
        k: usize,
        out: &mut Decision,
    ) {
        let cands = self.gpu_candidates(ctx, false);
        let Some(&(i, key)) = cands.iter().max_by(|a, b| cmp_rank(&a.1, &b.1)) else {
            return;
        };
        let (run, _) = self.whole_run(i);
        let end = (run.start + k).min(run.end);
        let a = &self.models[i].analysis;
        let est =
            a.costs.range_ms(run.start..end, Processor::Gpu) + self.cfg.budget.chunk_overhead_ms;
        let start = window.start_ms.max(ctx.now_ms);
        self.dispatch_gpu(i, run.start..end, (est, start), (false, key.critical), out);
    }
}
