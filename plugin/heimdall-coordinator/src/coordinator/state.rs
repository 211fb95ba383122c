//! What the coordinator keeps per model, per inference job and per piece of work in flight.

use std::ops::Range;

use super::mode_log::ModeLog;
use super::types::Request;
use crate::analyzer::Analysis;
use crate::model::ModelId;
use crate::processor::Processor;
use crate::utility::UtilityParams;

/// One admitted inference.
#[derive(Clone, Debug)]
pub(super) struct Job {
    pub seq: u64,
    pub request: Request,
    pub t_start: f64,
    /// Next op not yet dispatched.
    pub planned: usize,
    /// Where this job's next work goes (a job the GPU started may finish there after its model
    /// was offloaded, if that is sooner).
    pub processor: Processor,
    /// Where the job's last dispatched piece ran (`None` before the first).
    pub last_on: Option<Processor>,
    pub gpu_inflight: u32,
    pub cpu_inflight: bool,
    /// Expected end of this job's queued GPU work.
    pub gpu_planned_end: f64,
    /// Expected end of this job's running CPU work.
    pub cpu_planned_end: f64,
    /// Whether any of it ran with the model offloaded.
    pub offloaded: bool,
}

impl Job {
    pub fn new(seq: u64, request: Request, now: f64, processor: Processor) -> Self {
        Job {
            seq,
            request,
            t_start: now,
            planned: 0,
            processor,
            last_on: None,
            gpu_inflight: 0,
            cpu_inflight: false,
            gpu_planned_end: now,
            cpu_planned_end: 0.0,
            offloaded: false,
        }
    }
}

/// A registered model.
pub(super) struct ModelState {
    pub name: String,
    pub utility: UtilityParams,
    pub deadline_ms: Option<f64>,
    pub analysis: Analysis,
    /// Where new inferences run.
    pub mode: Processor,
    pub job: Option<Job>,
    pub pending: Option<Request>,
    pub last_gpu_latency: Option<f64>,
    /// The longest GPU latency completed since the last offload evaluation.
    pub worst_recent_gpu_latency: Option<f64>,
    /// When the model was last requested, and the mean interval between its requests (EMA).
    pub last_request_ms: Option<f64>,
    pub request_interval_ms: Option<f64>,
    pub cpu_latency_ema: Option<f64>,
    /// GPU time dispatched since the last offload evaluation, ms.
    pub gpu_recent_ms: f64,
    pub modes: ModeLog,
    pub overrides: u64,
    pub resumed_from_gpu: u64,
    pub finished_on_gpu_after_offload: u64,
    /// On-demand inferences admitted on the GPU that moved to the CPU because it would finish
    /// them sooner (`Coordinator::reconsider_on_demand_jobs`).
    pub jobs_moved_to_cpu: u64,
    /// The boundaries at which the caller can continue an inference on the CPU from the GPU's
    /// activations (`resumable[k]`: after ops `0..k`); `None`: as
    /// `CoordinatorConfig::offload_resumes_from_gpu` says for every boundary.
    pub resumable: Option<Vec<bool>>,
    /// Replaced or removed by the caller ([`super::Coordinator::retire`]): it takes no requests
    /// and counts in no load or offload decision.
    pub retired: bool,
    /// Threads of its CPU backend (slots a piece of its CPU work occupies), at least 1.
    pub cpu_threads: usize,
    /// How much faster its CPU backend is at `cpu_threads` than its one-thread profile.
    pub cpu_speedup: f64,
    /// Requested on demand (events).
    pub on_demand: bool,
    /// The caller reports every request with `Coordinator::requested` (it holds them until the
    /// model is idle): `submit` then does not feed the request interval.
    pub requests_reported: bool,
    /// The least interval between two admissions: the inverse of the granted rate while the
    /// plan degrades the model for capacity, ms.
    pub min_interval_ms: Option<f64>,
    /// When its latest inference was admitted, ms.
    pub last_admit_ms: Option<f64>,
    /// What the last plan was made with: the request interval and the GPU and CPU totals.
    pub planned: (Option<f64>, f64, f64),
}

impl ModelState {
    /// CPU time of `ops` at the model's threads, ms (the profile holds one-thread times).
    pub fn cpu_ms(&self, ops: Range<usize>) -> f64 {
        self.analysis.costs.range_ms(ops, Processor::Cpu) / self.cpu_speedup
    }
}

/// Whether an inference the GPU ran to boundary `k` can continue on the CPU from there, by a
/// model's `resumable` table (`by_default` without one).
pub(super) fn resumes_at(resumable: &Option<Vec<bool>>, k: usize, by_default: bool) -> bool {
    match resumable {
        Some(r) => r.get(k).copied().unwrap_or(false),
        None => by_default,
    }
}

impl ModelState {
    pub fn new(
        name: String,
        utility: UtilityParams,
        deadline_ms: Option<f64>,
        a: Analysis,
    ) -> Self {
        ModelState {
            name,
            utility,
            deadline_ms,
            analysis: a,
            mode: Processor::Gpu,
            job: None,
            pending: None,
            last_gpu_latency: None,
            worst_recent_gpu_latency: None,
            last_request_ms: None,
            request_interval_ms: None,
            cpu_latency_ema: None,
            gpu_recent_ms: 0.0,
            modes: ModeLog::new(),
            overrides: 0,
            resumed_from_gpu: 0,
            finished_on_gpu_after_offload: 0,
            jobs_moved_to_cpu: 0,
            resumable: None,
            retired: false,
            cpu_threads: 1,
            cpu_speedup: 1.0,
            on_demand: false,
            requests_reported: false,
            min_interval_ms: None,
            last_admit_ms: None,
            planned: (None, 0.0, 0.0),
        }
    }
}

/// A dispatched piece of work not yet reported done.
#[derive(Clone, Debug)]
pub(super) struct Inflight {
    pub model: ModelId,
    pub ops: Range<usize>,
    pub processor: Processor,
    pub planned_end: f64,
    /// CPU slots it occupies (0 on the GPU).
    pub threads: usize,
}

/// Where a job stands at one decision.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Rank {
    /// It misses its deadline if it waits one more interval, or its utility (without a
    /// deadline) is exhausted: the deadline override runs it.
    pub critical: bool,
    /// Absolute deadline, ms: its own, or where its utility reaches zero (infinite if never).
    pub deadline: f64,
    /// Time it can still wait and finish by its deadline (with the guard), ms.
    pub slack: f64,
    /// Expected remaining time where it runs, ms.
    pub remaining: f64,
    /// The policy's score.
    pub score: f64,
    /// The job's submission order (older jobs have smaller numbers): between equal keys the
    /// older job goes first, or two equal DNNs (two hands' landmark models) could take turns
    /// so that one of them always wins the tie and the other never runs.
    pub seq: u64,
}

impl Rank {
    /// The total order used where one order is needed (CPU workers, the GPU horizon): critical
    /// jobs first, earliest deadline first, then the policy's score.
    pub fn key(&self) -> (bool, f64) {
        if self.critical {
            (true, -self.deadline)
        } else {
            (false, self.score)
        }
    }
}

/// Orders ranks by their keys (deadline-critical first, then the score), the older job first
/// between equal keys (greater is first).
pub(super) fn cmp_rank(a: &Rank, b: &Rank) -> std::cmp::Ordering {
    let (ka, kb) = (a.key(), b.key());
    ka.0.cmp(&kb.0)
        .then(ka.1.total_cmp(&kb.1))
        .then(b.seq.cmp(&a.seq))
}

/// Orders ranks by the policy's score alone, the older job first between equal scores.
fn cmp_score(a: &Rank, b: &Rank) -> std::cmp::Ordering {
    a.score.total_cmp(&b.score).then(b.seq.cmp(&a.seq))
}

/// The job to run next on the GPU among `cands`, `elapsed` ms after the decision's time, and
/// whether the deadline override chose it.
///
/// Slack stealing: the policy's favourite goes first unless a deadline-critical job cannot
/// afford to wait for the favourite's remaining work (its slack is shorter); those go earliest
/// deadline first. So an event DNN the policy ranks first pre-empts continuous DNNs at chunk
/// granularity, even critical ones, as long as they still finish in time. When the deadlines
/// conflict (waiting for the earliest deadline would make a job the policy values more miss its
/// own), the more valuable one goes first: the overload is shed by the least valuable job. A job
/// already past its deadline loses nothing more by waiting, so it never sheds another: among jobs
/// that are all late, the earliest deadline goes first. Shedding by value there starved the
/// oldest job for good (its decaying utility made it the least valuable, frame after frame): on
/// a device far behind the frame rate a face detector's job waited minutes while two fresher
/// DNNs took every step.
pub(super) fn choose(cands: &[(usize, Rank)], elapsed: f64) -> Option<(usize, bool)> {
    let &(best, b) = cands.iter().max_by(|x, y| cmp_score(&x.1, &y.1))?;
    // Jobs that cannot wait for the favourite (no allocation: this runs for every pair the
    // packing loop compares).
    let must = || {
        cands
            .iter()
            .filter(move |(j, r)| r.critical && (*j == best || r.slack - elapsed < b.remaining))
    };
    let Some(&(e, er)) = must().min_by(|x, y| x.1.deadline.total_cmp(&y.1.deadline)) else {
        return Some((best, false));
    };
    let conflict = must().any(|(j, r)| {
        let left = r.slack - elapsed;
        *j != e && r.score > er.score && (0.0..er.remaining).contains(&left)
    });
    if conflict {
        let &(v, _) = must()
            .max_by(|x, y| cmp_score(&x.1, &y.1))
            .expect("must is not empty");
        Some((v, true))
    } else {
        Some((e, true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank(critical: bool, deadline: f64, slack: f64, remaining: f64, score: f64) -> Rank {
        Rank {
            critical,
            deadline,
            slack,
            remaining,
            score,
            seq: 0,
        }
    }

    /// An event job (score 2.0, 16 ms left) and a continuous job the override calls critical
    /// (score 0.05): with 20 ms of slack the continuous job can wait for the event's 16 ms, so
    /// the event runs; with 10 ms it cannot, so the critical job runs (the override). Planned
    /// 3 ms later, 17 ms of slack still cover the 16 ms; 4.1 ms later, 15.9 ms do not.
    #[test]
    fn the_policy_favourite_steals_a_critical_jobs_slack_only_when_it_fits() {
        let event = rank(false, 1100.0, 60.0, 16.0, 2.0);
        assert_eq!(
            choose(
                &[(0, rank(true, 1000.0, 20.0, 200.0, 0.05)), (1, event)],
                0.0
            ),
            Some((1, false))
        );
        assert_eq!(
            choose(
                &[(0, rank(true, 1000.0, 10.0, 200.0, 0.05)), (1, event)],
                0.0
            ),
            Some((0, true))
        );
        assert_eq!(
            choose(
                &[(0, rank(true, 1000.0, 20.0, 200.0, 0.05)), (1, event)],
                3.0
            ),
            Some((1, false)),
        );
        assert_eq!(
            choose(
                &[(0, rank(true, 1000.0, 20.0, 200.0, 0.05)), (1, event)],
                4.1
            ),
            Some((0, true))
        );
    }

    /// Two jobs that must run now: earliest deadline first while that lets the other finish;
    /// when waiting for the earlier deadline would make the more valuable job miss its own, the
    /// more valuable one goes first (the overload is shed by the least valuable job).
    #[test]
    fn critical_jobs_go_earliest_deadline_first_unless_that_sheds_the_more_valuable() {
        // a: deadline 1000, 75 ms left, score 0.02; b: deadline 1010, score 0.6.
        let a = rank(true, 1000.0, 5.0, 75.0, 0.02);
        // b can wait 80 ms > a's 75: EDF, a first.
        let b_loose = rank(true, 1010.0, 80.0, 60.0, 0.6);
        assert_eq!(choose(&[(0, a), (1, b_loose)], 0.0), Some((0, true)));
        // b can wait only 17 ms < 75: waiting for a would make b miss; b is worth more.
        let b_tight = rank(true, 1010.0, 17.0, 60.0, 0.6);
        assert_eq!(choose(&[(0, a), (1, b_tight)], 0.0), Some((1, true)));
        // If a were the more valuable one, EDF stands.
        let a_valuable = Rank { score: 0.9, ..a };
        assert_eq!(
            choose(&[(0, a_valuable), (1, b_tight)], 0.0),
            Some((0, true))
        );
        // No critical job: the policy's favourite.
        let c = rank(false, f64::INFINITY, f64::INFINITY, 10.0, 0.3);
        let d = rank(false, 2000.0, 500.0, 10.0, 0.4);
        assert_eq!(choose(&[(0, c), (1, d)], 0.0), Some((1, false)));
        assert_eq!(choose(&[], 0.0), None);
    }

    /// Every job already late (a device far behind the frame rate): nothing is saved by
    /// shedding, so the earliest deadline goes first whatever the scores, and the oldest job
    /// cannot starve behind fresher, more valuable ones.
    #[test]
    fn late_jobs_go_earliest_deadline_first_whatever_their_value() {
        let oldest = rank(true, 2_000.0, -1.5e6, 1.1e6, -1.4e-7);
        let fresh = rank(true, 138_000.0, -1.5e5, 1.2e5, -1.6e-9);
        let fresher = rank(true, 139_000.0, -7.0e4, 5.0e4, -2.8e-9);
        let all = [(0, fresher), (1, fresh), (2, oldest)];
        assert_eq!(choose(&all, 0.0), Some((2, true)));
        // One job that can still make its deadline by going first is still shed for.
        let savable = rank(true, 140_000.0, 10.0, 5.0, 0.5);
        assert_eq!(choose(&[(0, oldest), (1, savable)], 0.0), Some((1, true)));
    }

    #[test]
    fn between_equal_scores_the_older_job_goes_first_wherever_it_is_listed() {
        let old = Rank {
            seq: 3,
            ..rank(false, f64::INFINITY, f64::INFINITY, 5.0, 0.0)
        };
        let new = Rank { seq: 7, ..old };
        assert_eq!(choose(&[(0, old), (1, new)], 0.0), Some((0, false)));
        assert_eq!(choose(&[(0, new), (1, old)], 0.0), Some((1, false)));
        assert!(cmp_rank(&old, &new).is_gt());
        // The score still comes first.
        let better = Rank { score: 0.1, ..new };
        assert_eq!(choose(&[(0, old), (1, better)], 0.0), Some((1, false)));
        assert!(cmp_rank(&better, &old).is_gt());
    }
}
