//! The recorder's export helpers: names made unique, the median of measured times, and a
//! measured chunk's time split over its steps so that a replay charges it exactly.

use std::collections::HashSet;

/// `name` (or `model` when empty), suffixed `#2`, `#3`... until it is not in `used`; added to it.
pub(super) fn unique_name(name: &str, used: &mut HashSet<String>) -> String {
    let base = if name.is_empty() { "model" } else { name };
    let mut candidate = base.to_string();
    let mut k = 2;
    while used.contains(&candidate) {
        candidate = format!("{base}#{k}");
        k += 1;
    }
    used.insert(candidate.clone());
    candidate
}

/// The median (mean of the two middle values for an even count), `None` when empty.
pub(super) fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let h = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[h]
    } else {
        0.5 * (v[h - 1] + v[h])
    })
}

/// Splits `target - overhead` (at least 0) over steps of the given `weights` in proportion (equal
/// shares when the weights do not sum to a positive number), then nudges the last share so that
/// the shares summed in order plus `overhead` give `target` exactly, as far as floating point
/// allows: a replay then charges the chunk exactly its measured time.
pub(super) fn split(target: f64, overhead: f64, weights: &[f64]) -> Vec<f64> {
    let n = weights.len();
    if n == 0 {
        return Vec::new();
    }
    let total = (target - overhead).max(0.0);
    let w: Vec<f64> = weights
        .iter()
        .map(|&x| if x.is_finite() && x > 0.0 { x } else { 0.0 })
        .collect();
    let sum: f64 = w.iter().copied().sum();
    let mut shares: Vec<f64> = if sum > 0.0 && sum.is_finite() {
        w.iter().map(|x| total * (x / sum)).collect()
    } else {
        vec![total / n as f64; n]
    };
    let head: f64 = shares[..n - 1].iter().copied().sum();
    shares[n - 1] = (total - head).max(0.0);
    for _ in 0..64 {
        let got = shares.iter().copied().sum::<f64>() + overhead;
        let last = shares[n - 1];
        let next = if got < target {
            last.next_up()
        } else if got > target && last > 0.0 {
            last.next_down().max(0.0)
        } else {
            break;
        };
        shares[n - 1] = next;
    }
    shares
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shares follow the weights, sum back exactly (in order, plus the overhead), and are equal
    /// when the weights are all 0.
    #[test]
    fn split_is_proportional_and_exact() {
        let s = split(3.0, 0.0, &[1.0, 2.0]);
        assert!(
            (s[0] - 1.0).abs() < 1e-12 && (s[1] - 2.0).abs() < 1e-12,
            "{s:?}"
        );
        assert_eq!(split(1.0, 0.0, &[0.0, 0.0]), vec![0.5, 0.5]);
        for (t, o, w) in [
            (0.7, 0.05, vec![0.1, 0.2, 0.3]),
            (12.345_678_9, 0.05, vec![1.3, 0.0, 7.7, 2.9]),
            (1e-3, 0.0, vec![3.0, 1.0, 1.0]),
        ] {
            let s = split(t, o, &w);
            assert_eq!(s.iter().copied().sum::<f64>() + o, t, "{t} {o} {w:?}");
            assert!(s.iter().all(|x| *x >= 0.0));
        }
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
    }

    #[test]
    fn names_are_made_unique() {
        let mut used = HashSet::new();
        let names: Vec<String> = ["a", "a", "a#2", "", "a"]
            .iter()
            .map(|n| unique_name(n, &mut used))
            .collect();
        assert_eq!(names, ["a", "a#2", "a#2#2", "model", "a#3"]);
    }
}
