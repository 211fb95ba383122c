//! One run of a DNN's CPU model on the worker pool (an inference, the rest of one, or a piece of
//! it), and where its end is reported: the workers' mailbox, read at the next render frame, or
//! first a listener that hands out more CPU work at once (the CPU lane, `render/cpu_lane.rs`).
//! Nothing here waits on a worker.

use std::sync::Arc;

use bevy::prelude::*;
use crossbeam_channel::Sender;
use heimdall_coordinator::CpuWork;
use heimdall_vision::image::{Crop, Normalization, resample_into};

use super::finish::Finish;
use crate::clock::HeimdallClock;
use crate::dnn::Backend;
use crate::stats::{CpuRunTimes, thread_sched_ms};
use crate::workers::{CpuDone, WorkerPool, Workers};

/// Hears of finished CPU work before the workers' mailbox does (the CPU lane, which hands out
/// more work while it holds the coordinator).
pub(crate) trait CpuListener: Send + Sync {
    /// `report`'s work ended, on `slots` slots the caller still holds (it gives them back once
    /// this returns). Returns the report when the listener does not take it: it then goes to
    /// the mailbox.
    fn finished(&self, report: CpuDone, slots: usize) -> Option<CpuDone>;
}

/// Where a finished piece of CPU work is reported: its listener, if any and it takes it, else
/// the workers' mailbox, read at the next frame.
#[derive(Clone)]
pub(crate) struct CpuSink {
    listener: Option<Arc<dyn CpuListener>>,
    done: Sender<CpuDone>,
}

impl CpuSink {
    /// Reports to the workers' mailbox only.
    pub fn plain(workers: &Workers) -> Self {
        CpuSink {
            listener: None,
            done: workers.done.sender(),
        }
    }

    /// Reports to `listener` first, else to `done`.
    pub fn with_listener(listener: Arc<dyn CpuListener>, done: Sender<CpuDone>) -> Self {
        CpuSink {
            listener: Some(listener),
            done,
        }
    }

    /// Reports `report` of work that occupied `slots` slots (still held by the caller, who gives
    /// them back once this returns).
    pub fn finished(&self, report: CpuDone, slots: usize) {
        let report = match &self.listener {
            Some(l) => l.finished(report, slots),
            None => Some(report),
        };
        if let Some(report) = report {
            let _ = self.done.send(report);
        }
    }
}

/// What a piece of an inference on its DNN's CPU model needs: the model and the inference's
/// camera frame.
pub(crate) struct CpuInput {
    pub cpu: SharedCpuModel,
    /// The model's steps.
    pub steps: usize,
    /// Its input `[H, W, C]`.
    pub input: [usize; 3],
    pub norm: Normalization,
    pub pixels: Arc<Vec<u8>>,
    pub size: UVec2,
    pub crop: Crop,
}

/// Starts `work` on the CPU model of DNN `e` (the rest of its inference or one piece, see `render/cpu.rs`); `on_cpu` says whether
/// this inference already ran on the CPU model (then `work` goes on from its state), and is set.
#[allow(clippy::too_many_arguments)]
pub(crate) fn start_cpu_piece(
    work: &CpuWork,
    e: Entity,
    input: CpuInput,
    on_cpu: &mut bool,
    finish: Option<Finish>,
    pool: &WorkerPool,
    sink: CpuSink,
    clock: HeimdallClock,
) {
    let start_op = if *on_cpu { work.ops.start } else { 0 };
    *on_cpu = true;
    let CpuInput {
        cpu,
        steps,
        input: [h, w, ch],
        norm,
        pixels,
        size,
        crop,
    } = input;
    let run = CpuRun {
        cpu,
        slots: work_slots(work),
        entity: e,
        work: work.id,
        ops: start_op..work.ops.end,
        last: work.ops.end == steps,
        finish,
        clock,
    };
    spawn_cpu_run(pool, sink, run, move |m| {
        if start_op == 0 {
            // The camera frame resampled straight into the model's input, its rows over the
            // model's threads.
            let failed = std::sync::Mutex::new(None);
            let frame = (size.x as usize, size.y as usize);
            m.fill_input(0, w * ch, |rows, values| {
                if let Err(e) =
                    resample_into(&pixels, frame, &crop, &norm, [h, w, ch], rows, values)
                {
                    *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                }
            })
            .map_err(|e| e.to_string())?;
            if let Some(e) = failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
                return Err(e.to_string());
            }
        }
        Ok(())
    });
}

/// The CPU slots `work` occupies while it runs: its model's threads.
pub(crate) fn work_slots(work: &CpuWork) -> usize {
    work.threads.max(1)
}

/// The CPU model of a DNN, shared with the workers.
pub(crate) type SharedCpuModel = std::sync::Arc<std::sync::Mutex<heimdall_cpu::CpuModel>>;

/// One run of a CPU model's ops on the worker pool.
pub(crate) struct CpuRun {
    /// The DNN's CPU model.
    pub cpu: SharedCpuModel,
    /// The slots it occupies (its model's threads).
    pub slots: usize,
    pub entity: Entity,
    pub work: heimdall_coordinator::WorkId,
    pub ops: std::ops::Range<usize>,
    /// The ops end the inference: its outputs go on.
    pub last: bool,
    pub finish: Option<Finish>,
    pub clock: HeimdallClock,
}

/// Runs `run.ops` of the CPU model on a worker (occupying `run.slots` slots) after `prepare`
/// (its input, or the GPU's state), sends the outputs on when they end the inference, and
/// reports the work's times to `sink` (which may hand out more CPU work at once).
pub(crate) fn spawn_cpu_run(
    pool: &WorkerPool,
    sink: CpuSink,
    run: CpuRun,
    prepare: impl FnOnce(&mut heimdall_cpu::CpuModel) -> Result<(), String> + Send + 'static,
) {
    let worker = pool.size() - pool.idle();
    let CpuRun {
        cpu,
        slots,
        entity,
        work,
        ops,
        last,
        finish,
        clock,
    } = run;
    let spawned_ms = clock.now_ms();
    pool.spawn_with_slots(slots, move || {
        let start_ms = clock.now_ms();
        let mut times = CpuRunTimes {
            queued_ms: (start_ms - spawned_ms).max(0.0),
            ops: ops.len(),
            whole: ops.start == 0 && last,
            threads: slots,
            ..CpuRunTimes::default()
        };
        let t = &mut times;
        let run = || -> Result<Option<Vec<Vec<f32>>>, String> {
            let mut m = cpu.lock().map_err(|_| "CPU model poisoned".to_string())?;
            let locked_ms = clock.now_ms();
            t.lock_ms = locked_ms - start_ms;
            prepare(&mut m)?;
            let ops_ms = clock.now_ms();
            t.prepare_ms = ops_ms - locked_ms;
            let (sched, pool) = (thread_sched_ms(), m.pool_counters());
            m.run_range(ops).map_err(|e| e.to_string())?;
            t.run_ms = clock.now_ms() - ops_ms;
            t.pool = m.pool_counters().since(&pool);
            if let (Some((on0, wait0)), Some((on1, wait1))) = (sched, thread_sched_ms()) {
                (t.caller_on_cpu_ms, t.caller_runnable_ms) = (Some(on1 - on0), Some(wait1 - wait0));
            }
            if !last {
                return Ok(None);
            }
            let n = m.output_shapes().len();
            (0..n)
                .map(|i| m.output(i).map(<[f32]>::to_vec).map_err(|e| e.to_string()))
                .collect::<Result<Vec<_>, _>>()
                .map(Some)
        };
        // A panic (a CPU kernel, a decoder on this worker) is an error that says so: the DNN
        // fails with `DnnError::Panicked`, the worker goes on.
        let (finished, error) = match crate::faults::catch_work(run) {
            Ok(Some(outputs)) => {
                if let Some(finish) = finish {
                    finish.send(outputs, Backend::Cpu, None);
                }
                (true, None)
            }
            Ok(None) => (false, None),
            Err(e) => (false, Some(e)),
        };
        let report = CpuDone {
            entity,
            work,
            worker,
            start_ms,
            end_ms: clock.now_ms(),
            finished,
            error,
            times: Some(times),
        };
        sink.finished(report, slots);
    });
}
