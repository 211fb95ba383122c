//! Latency samples the apps report themselves (an event's answer becoming visible, a stroke
//! point reaching the page), summarised as `stats.json` wants them: count, p50, p99, max.

use serde_json::{Value, json};

/// Latency samples in milliseconds.
#[derive(Clone, Debug, Default)]
pub struct LatencyLog {
    samples: Vec<f64>,
}

impl LatencyLog {
    /// Adds one sample (ms); non-finite ones are ignored.
    pub fn push(&mut self, ms: f64) {
        if ms.is_finite() {
            self.samples.push(ms);
        }
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// The `q`-quantile (nearest rank, `q` in `[0, 1]`), none without samples.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.samples.is_empty() {
            return None;
        }
        let mut s = self.samples.clone();
        s.sort_by(f64::total_cmp);
        let rank = ((q.clamp(0.0, 1.0) * s.len() as f64).ceil() as usize).clamp(1, s.len());
        Some(s[rank - 1])
    }

    /// `{"count", "p50", "p99", "max"}` (nulls without samples).
    pub fn summary(&self) -> Value {
        json!({
            "count": self.samples.len(),
            "p50": self.quantile(0.5),
            "p99": self.quantile(0.99),
            "max": self.quantile(1.0),
        })
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
    }
}
