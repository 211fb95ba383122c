//! Where the time of a DNN's CPU runs goes: waiting for a worker, for the model, preparing the
//! input, and the ops, with how the run's threads got the CPU (its calling thread's time on a
//! core and waiting for one, the share of the split ops' parts the caller ran itself). Measured
//! on the worker around each run (`render/cpu_run.rs`), folded here into `stats.json`'s
//! `cpu_runs` of each model.
//!
//! A run slower in the app than alone (`heimdall bench`) is told apart here: a caller that waited
//! for a core (`caller_runnable_ms`) or ran most parts itself (`caller_parts_share` far above
//! `1 / threads`: the pool's threads were descheduled or parked) lost its cores; a caller on a
//! core all along with its share of the parts computed slower (caches, memory, a shared core).

use heimdall_cpu::PoolCounters;
use serde_json::{Value, json};

use crate::stats::history::{summary, trim_to};

/// Runs each history keeps (the latest).
pub const CPU_RUN_HISTORY: usize = 1024;

/// One CPU run of a DNN's model (an inference, its rest, or a piece), as measured on its worker.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuRunTimes {
    /// Handed to the worker pool → started on a worker, ms.
    pub queued_ms: f64,
    /// Waiting for the model (which the accuracy guard's compile may hold), ms.
    pub lock_ms: f64,
    /// The input set: the camera frame resampled, or the GPU's activations to resume from, ms.
    pub prepare_ms: f64,
    /// The model's ops, ms.
    pub run_ms: f64,
    /// How many ops ran.
    pub ops: usize,
    /// They were every op of the model (a whole inference in one run).
    pub whole: bool,
    /// The model's threads.
    pub threads: usize,
    /// The calling thread's time on a core during the ops, ms (`None` where the system does
    /// not say).
    pub caller_on_cpu_ms: Option<f64>,
    /// The calling thread's time runnable but waiting for a core during the ops, ms (Linux's
    /// scheduler statistics; `None` where the kernel keeps none).
    pub caller_runnable_ms: Option<f64>,
    /// How the model's thread pool ran the run's split ops.
    pub pool: PoolCounters,
}

/// The calling thread's time on a core (`CLOCK_THREAD_CPUTIME_ID`, exact to the call) and
/// waiting for one while runnable (Linux's `/proc/thread-self/schedstat`, brought up to date at
/// each switch), ms, since it started. `None` where the system does not say.
pub(crate) fn thread_sched_ms() -> Option<(f64, f64)> {
    let on_cpu = thread_cpu_ms()?;
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let waiting = s.split_whitespace().nth(1)?.parse::<f64>().ok()?;
    Some((on_cpu, waiting / 1e6))
}

/// The calling thread's CPU time, ms.
#[cfg(unix)]
fn thread_cpu_ms() -> Option<f64> {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to write.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    (r == 0).then(|| t.tv_sec as f64 * 1e3 + t.tv_nsec as f64 / 1e6)
}

/// The calling thread's CPU time: not read here.
#[cfg(not(unix))]
fn thread_cpu_ms() -> Option<f64> {
    None
}

/// A model's CPU runs (its latest [`CPU_RUN_HISTORY`], in room allocated up front), in
/// [`crate::stats::ModelStats::cpu_runs`].
#[derive(Clone, Debug)]
pub struct CpuRuns {
    /// Runs since the last reset.
    pub count: usize,
    /// The model's threads at the latest run.
    pub threads: usize,
    /// [`CpuRunTimes::queued_ms`] of the latest runs.
    pub queued_ms: Vec<f64>,
    /// [`CpuRunTimes::lock_ms`] of the latest runs.
    pub lock_ms: Vec<f64>,
    /// [`CpuRunTimes::prepare_ms`] of the latest runs.
    pub prepare_ms: Vec<f64>,
    /// [`CpuRunTimes::run_ms`] of the latest whole inferences (runs of every op).
    pub whole_run_ms: Vec<f64>,
    /// The caller's time on a core over the run's time, latest runs (1: never off a core).
    pub caller_on_cpu_share: Vec<f64>,
    /// [`CpuRunTimes::caller_runnable_ms`] of the latest runs.
    pub caller_runnable_ms: Vec<f64>,
    /// The share of the split ops' parts the caller ran itself, latest runs of a model on more
    /// than one thread (`1 / threads` when every thread took its share; 1 when none came).
    pub caller_parts_share: Vec<f64>,
    /// The pool's jobs over the runs since the last reset.
    pub pool: PoolCounters,
}

impl Default for CpuRuns {
    fn default() -> Self {
        let room = || Vec::with_capacity(CPU_RUN_HISTORY + CPU_RUN_HISTORY / 8);
        CpuRuns {
            count: 0,
            threads: 0,
            queued_ms: room(),
            lock_ms: room(),
            prepare_ms: room(),
            whole_run_ms: room(),
            caller_on_cpu_share: room(),
            caller_runnable_ms: room(),
            caller_parts_share: room(),
            pool: PoolCounters::default(),
        }
    }
}

impl CpuRuns {
    /// Adds one run.
    pub(crate) fn record(&mut self, t: &CpuRunTimes) {
        self.count += 1;
        self.threads = t.threads;
        push(&mut self.queued_ms, t.queued_ms);
        push(&mut self.lock_ms, t.lock_ms);
        push(&mut self.prepare_ms, t.prepare_ms);
        if t.whole {
            push(&mut self.whole_run_ms, t.run_ms);
        }
        if let (Some(on), true) = (t.caller_on_cpu_ms, t.run_ms > 0.0) {
            push(&mut self.caller_on_cpu_share, (on / t.run_ms).min(1.0));
        }
        if let Some(w) = t.caller_runnable_ms {
            push(&mut self.caller_runnable_ms, w);
        }
        if let Some(share) = t.pool.caller_share() {
            push(&mut self.caller_parts_share, share);
        }
        let p = &mut self.pool;
        p.jobs += t.pool.jobs;
        p.jobs_waking += t.pool.jobs_waking;
        p.parts += t.pool.parts;
        p.caller_parts += t.pool.caller_parts;
        p.inline_jobs += t.pool.inline_jobs;
    }

    /// `stats.json`'s `cpu_runs` of a model: `null` without a run.
    pub(crate) fn to_json(&self) -> Value {
        if self.count == 0 {
            return Value::Null;
        }
        let p = &self.pool;
        json!({
            "count": self.count,
            "threads": self.threads,
            "queued_ms": summary(&self.queued_ms),
            "lock_ms": summary(&self.lock_ms),
            "prepare_ms": summary(&self.prepare_ms),
            "whole_run_ms": summary(&self.whole_run_ms),
            "caller_on_cpu_share": summary(&self.caller_on_cpu_share),
            "caller_runnable_ms": summary(&self.caller_runnable_ms),
            "caller_parts_share": summary(&self.caller_parts_share),
            "pool_jobs": p.jobs,
            "pool_jobs_waking_share": p.jobs_waking as f64 / p.jobs.max(1) as f64,
            "pool_caller_parts_share": p.caller_share(),
            "pool_inline_jobs": p.inline_jobs,
        })
    }
}

/// Appends `v`, keeping the latest [`CPU_RUN_HISTORY`].
fn push(h: &mut Vec<f64>, v: f64) {
    h.push(v);
    trim_to(h, CPU_RUN_HISTORY);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each measure goes to its history; only runs of every op count as whole; the caller's
    /// share of the parts and the pool's totals add up; no run: `null`.
    #[test]
    fn runs_fold_into_their_histories() {
        let mut r = CpuRuns::default();
        assert_eq!(r.to_json(), Value::Null);
        let run = |ops: usize, run_ms: f64, caller_parts: u64| CpuRunTimes {
            whole: ops == 100,
            queued_ms: 0.5,
            lock_ms: 0.1,
            prepare_ms: 2.0,
            run_ms,
            ops,
            threads: 4,
            caller_on_cpu_ms: Some(run_ms / 2.0),
            caller_runnable_ms: Some(1.0),
            pool: PoolCounters {
                jobs: 10,
                jobs_waking: 5,
                parts: 40,
                caller_parts,
                inline_jobs: 1,
            },
        };
        r.record(&run(100, 40.0, 10));
        r.record(&run(30, 12.0, 40));
        let v = r.to_json();
        assert_eq!(v["count"], 2);
        assert_eq!(v["threads"], 4);
        assert_eq!(v["whole_run_ms"]["count"], 1);
        assert_eq!(v["whole_run_ms"]["p50"], 40.0);
        assert_eq!(v["prepare_ms"]["count"], 2);
        assert_eq!(v["caller_on_cpu_share"]["max"], 0.5);
        assert_eq!(r.caller_parts_share, [0.25, 1.0]);
        assert_eq!(v["pool_jobs"], 20);
        assert_eq!(v["pool_jobs_waking_share"], 0.5);
        assert_eq!(v["pool_caller_parts_share"], 50.0 / 80.0);
        assert_eq!(v["pool_inline_jobs"], 2);
    }

    /// On Linux the calling thread's scheduler times are read and grow while it computes.
    #[test]
    #[cfg(target_os = "linux")]
    fn the_threads_time_on_a_core_grows_while_it_computes() {
        let Some((on0, _)) = thread_sched_ms() else {
            // A kernel without scheduler statistics: nothing to read, and nothing is claimed.
            return;
        };
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed() < std::time::Duration::from_millis(30) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let (on1, _) = thread_sched_ms().expect("read once, read again");
        assert!(
            on1 - on0 > 5.0,
            "{on0} → {on1} ms on a core over a 30 ms busy loop"
        );
    }
}
