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

    /// The full utility `U = L0 - beta * age^gamma + alpha * C`.
    pub fn utility(&self, age_ms: f64, alpha: f64, content_variation: f64) -> f64 {
        self.latency_utility(age_ms) + alpha * content_variation
    }
}
