//! Heimdall's utility function (sec. 6.2).

use serde::{Deserialize, Serialize};

/// Per-model utility parameters of `U(t) = L0 - beta * (t - t_start)^gamma + alpha * C`.
///
/// Time in the latency term is in **seconds** (so `beta = 1, gamma = 2` costs one unit of utility
/// after one second of waiting).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UtilityParams {
    /// Initial utility `L0` (higher: more important).
    pub l0: f64,
    /// Decay weight `beta` (share of the GPU).
    pub beta: f64,
    /// Decay exponent `gamma` (higher: more urgent once started).
    pub gamma: f64,
}

impl Default for UtilityParams {
    fn default() -> Self {
        UtilityParams {
            l0: 1.0,
            beta: 1.0,
            gamma: 1.0,
        }
    }
}

impl UtilityParams {
    /// The latency utility `L0 - beta * age_s^gamma` for a request waiting `age_ms`.
    pub fn latency_utility(&self, age_ms: f64) -> f64 {
        let age_s = (age_ms.max(0.0)) / 1000.0;
        self.l0 - self.beta * age_s.powf(self.gamma)
    }

    /// How long after its start a request's utility reaches zero, ms: `((L0 + alpha * C) / beta)
    /// ^ (1 / gamma)` seconds; `Some(0)` if it starts at or below zero, `None` if it never decays
    /// to zero (`beta <= 0`, or `gamma <= 0` with a positive start).
    pub fn lifetime_ms(&self, alpha: f64, content_variation: f64) -> Option<f64> {
        let start = self.l0 + alpha * content_variation;
        if start.is_nan() {
            return None;
        }
        if start <= 0.0 {
            return Some(0.0);
        }
        if !(self.beta > 0.0 && self.gamma > 0.0) {
            return None;
        }
        let s = (start / self.beta).powf(1.0 / self.gamma) * 1000.0;
        s.is_finite().then_some(s)
    }

    /// The full utility `U = L0 - beta * age^gamma + alpha * C`.
    pub fn utility(&self, age_ms: f64, alpha: f64, content_variation: f64) -> f64 {
        self.latency_utility(age_ms) + alpha * content_variation
    }
}

#[cfg(test)]
mod tests {
    use super::UtilityParams;

    #[test]
    fn lifetime_is_where_the_utility_reaches_zero() {
        let u = |l0, beta, gamma| UtilityParams { l0, beta, gamma };
        // 1 - t = 0 at 1 s; 2 - 0.5 t^2 = 0 at 2 s; with alpha C = 1: 2 - t = 0 at 2 s.
        assert_eq!(u(1.0, 1.0, 1.0).lifetime_ms(0.0, 0.0), Some(1000.0));
        assert_eq!(u(2.0, 0.5, 2.0).lifetime_ms(0.0, 0.0), Some(2000.0));
        assert_eq!(u(1.0, 1.0, 1.0).lifetime_ms(0.5, 2.0), Some(2000.0));
        for (p, a, c) in [(u(2.0, 0.5, 2.0), 0.0, 0.0), (u(1.0, 1.0, 1.0), 0.5, 2.0)] {
            let life = p.lifetime_ms(a, c).unwrap();
            assert!(p.utility(life, a, c).abs() < 1e-12);
        }
        // Never decays, or starts exhausted.
        assert_eq!(u(1.0, 0.0, 1.0).lifetime_ms(0.0, 0.0), None);
        assert_eq!(u(1.0, 1.0, 0.0).lifetime_ms(0.0, 0.0), None);
        assert_eq!(u(0.0, 1.0, 1.0).lifetime_ms(0.0, 0.0), Some(0.0));
        assert_eq!(u(f64::NAN, 1.0, 1.0).lifetime_ms(0.0, 0.0), None);
    }
}
