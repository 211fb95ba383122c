//! Summaries of measured times.

use std::time::Duration;

/// Median, 90th percentile and maximum of a set of durations, in ms.
pub fn summary(mut v: Vec<Duration>) -> (f64, f64, f64) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    if v.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    let pick = |q: f64| ms(v[((v.len() - 1) as f64 * q).round() as usize]);
    (pick(0.5), pick(0.9), ms(*v.last().expect("not empty")))
}

/// A deterministic input of `n` values in [-1, 1] (what `bench` and `partition` run on when no
/// input is given).
pub fn pattern_input(n: usize) -> Vec<f32> {
    (0..n)
        .map(|k| ((k * 7919 % 2000) as f32 / 1000.0) - 1.0)
        .collect()
}
