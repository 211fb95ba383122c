//! Latency samples the apps report themselves (an event's answer becoming visible, a stroke
//! point reaching the page, the pacer's update times), summarised as `stats.json` wants them:
//! count, p50, p99, max. Bounded: the quantiles come from the latest [`LatencyLog::CAPACITY`]
//! samples (a ring), the count and the maximum from all, so a run of hours keeps at most that
//! many samples in memory.

use std::collections::VecDeque;

use serde_json::{Value, json};

/// Latency samples in milliseconds: the latest [`LatencyLog::CAPACITY`] kept, the count and
/// maximum over all.
#[derive(Clone, Debug, Default)]
pub struct LatencyLog {
    samples: VecDeque<f64>,
    count: usize,
    max: Option<f64>,
    sum: f64,
}

impl LatencyLog {
    /// Samples kept for the quantiles: ten minutes of one sample a frame at 60 fps.
    pub const CAPACITY: usize = 36_000;

    /// An empty log with room for [`LatencyLog::CAPACITY`] samples, its memory written once
    /// (resident from the start): for a log that fills over a long run (one sample a frame), so
    /// that the process's memory does not creep up while it fills.
    pub fn preallocated() -> Self {
        let mut samples = VecDeque::with_capacity(Self::CAPACITY);
        samples.resize(Self::CAPACITY, -1.0);
        samples.clear();
        LatencyLog {
            samples,
            ..Default::default()
        }
    }

    /// Adds one sample (ms); non-finite ones are ignored. The oldest kept one goes once
    /// [`LatencyLog::CAPACITY`] are kept.
    pub fn push(&mut self, ms: f64) {
        if !ms.is_finite() {
            return;
        }
        if self.samples.len() == Self::CAPACITY {
            self.samples.pop_front();
        }
        self.samples.push_back(ms);
        self.count += 1;
        self.sum += ms;
        self.max = Some(self.max.map_or(ms, |m| m.max(ms)));
    }

    /// Number of samples pushed (all, not only the kept ones).
    pub fn len(&self) -> usize {
        self.count
    }

    /// Number of samples kept for the quantiles (at most [`LatencyLog::CAPACITY`]).
    pub fn kept(&self) -> usize {
        self.samples.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Mean of all samples, none without samples.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }

    /// The `q`-quantile of the kept samples (nearest rank, `q` in `[0, 1]`; `q = 1` is the
    /// maximum over all samples), none without samples.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.samples.is_empty() {
            return None;
        }
        if q >= 1.0 {
            return self.max;
        }
        let mut s: Vec<f64> = self.samples.iter().copied().collect();
        s.sort_by(f64::total_cmp);
        let rank = ((q.clamp(0.0, 1.0) * s.len() as f64).ceil() as usize).clamp(1, s.len());
        Some(s[rank - 1])
    }

    /// `{"count", "p50", "p99", "max"}` (nulls without samples); `kept` when the quantiles come
    /// from fewer samples than `count`.
    pub fn summary(&self) -> Value {
        let mut v = json!({
            "count": self.count,
            "p50": self.quantile(0.5),
            "p99": self.quantile(0.99),
            "max": self.max,
        });
        if self.samples.len() < self.count {
            v["kept"] = json!(self.samples.len());
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles() {
        let mut l = LatencyLog::default();
        assert_eq!(l.summary()["p50"], Value::Null);
        for ms in [40.0, 10.0, 30.0, 20.0, f64::NAN] {
            l.push(ms);
        }
        assert_eq!(l.len(), 4);
        assert_eq!(l.quantile(0.5), Some(20.0));
        assert_eq!(l.quantile(0.99), Some(40.0));
        assert_eq!(l.summary()["max"], 40.0);
        assert_eq!(l.quantile(0.0), Some(10.0));
        assert_eq!(l.mean(), Some(25.0));
        assert!(l.summary().get("kept").is_none(), "all kept");
    }

    #[test]
    fn memory_is_bounded_count_and_max_are_not() {
        let mut l = LatencyLog::preallocated();
        let room = l.samples.capacity();
        assert!(l.is_empty() && room >= LatencyLog::CAPACITY);
        l.push(1e6);
        for i in 0..2 * LatencyLog::CAPACITY + 7 {
            l.push((i % 100) as f64);
        }
        assert_eq!(l.kept(), LatencyLog::CAPACITY);
        assert_eq!(l.samples.capacity(), room, "never reallocated");
        assert_eq!(l.len(), 2 * LatencyLog::CAPACITY + 8);
        assert_eq!(l.quantile(1.0), Some(1e6), "the maximum over all samples");
        assert_eq!(l.summary()["kept"], LatencyLog::CAPACITY);
        assert!(
            l.quantile(0.99).unwrap() < 100.0,
            "quantiles of the kept ones"
        );
    }
}
