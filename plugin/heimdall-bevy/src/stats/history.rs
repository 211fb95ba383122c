//! Bounded histories for the run's statistics: room allocated once, the oldest entries dropped
//! in batches, and their summaries (count, mean, p50, p99, max).

use serde_json::{Value, json};

/// Frames (and results per model) kept: ten minutes at 60 fps; older ones are dropped so that
/// an app running for hours does not grow without bound.
pub const MAX_HISTORY: usize = 36_000;

/// Room every history has: `MAX_HISTORY` and a batch of `MAX_HISTORY / 8` dropped at once.
pub(crate) const HISTORY_CAPACITY: usize = MAX_HISTORY + MAX_HISTORY / 8;

/// Drops the oldest entries down to `MAX_HISTORY` once a history is full (in batches, so the
/// cost is amortised): a history never outgrows the room [`history`] gave it.
pub(crate) fn trim<T>(v: &mut Vec<T>) {
    trim_to(v, MAX_HISTORY);
}

/// An empty history with room for `HISTORY_CAPACITY` entries, written once with `fill` (not
/// zero, so that the pages are resident from the start): the process's memory does not creep
/// up for the minutes a history takes to fill, which a soak test would read as a leak.
pub(crate) fn history<T: Clone>(fill: T) -> Vec<T> {
    let mut v = vec![fill; HISTORY_CAPACITY];
    v.clear();
    v
}

/// Keeps the latest `keep` entries of a history once it holds `keep + keep / 8` (in batches,
/// as [`trim`]); for histories shorter than [`MAX_HISTORY`], made with
/// `Vec::with_capacity(keep + keep / 8)`.
pub(crate) fn trim_to<T>(v: &mut Vec<T>, keep: usize) {
    if v.len() >= keep + keep / 8 {
        v.drain(..v.len() - keep);
    }
}

/// The `p` quantile of `sorted` (nearest rank; 0 when empty).
pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// [`summary`] with the 10th percentile (`p10`: a floor of a delay that only load adds to).
pub(crate) fn low_summary(v: &[f64]) -> Value {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let mut out = summary(&s);
    out["p10"] = json!(percentile(&s, 0.1));
    out
}

/// `{count, mean, p50, p99, max}` of `v`.
pub(crate) fn summary(v: &[f64]) -> Value {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let mean = if s.is_empty() {
        0.0
    } else {
        s.iter().sum::<f64>() / s.len() as f64
    };
    json!({
        "count": s.len(),
        "mean": mean,
        "p50": percentile(&s, 0.5),
        "p99": percentile(&s, 0.99),
        "max": s.last().copied().unwrap_or(0.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_hand() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert_eq!(percentile(&v, 0.5), 51.0);
    }

    #[test]
    fn history_is_bounded() {
        let mut v: Vec<usize> = history(usize::MAX);
        let room = v.capacity();
        assert!(v.is_empty() && room >= HISTORY_CAPACITY);
        for i in 0..3 * MAX_HISTORY {
            v.push(i);
            trim(&mut v);
            assert!(v.len() < HISTORY_CAPACITY);
        }
        assert_eq!(v.capacity(), room, "never reallocated");
        assert!(v.len() >= MAX_HISTORY);
        assert_eq!(
            v[v.len() - 1],
            3 * MAX_HISTORY - 1,
            "the newest entries stay"
        );
        assert_eq!(v[0], 3 * MAX_HISTORY - v.len(), "the oldest entries go");
    }
}
