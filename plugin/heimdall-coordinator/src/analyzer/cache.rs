//! The convolution cache's effect on step costs (DeepMon, seed 004 §6.3).
//!
//! A model whose first layers run with the convolution cache recomputes only the tiles of those
//! layers whose input changed: a run costs less the more of the image stayed the same. The
//! coordinator keeps two things apart:
//!
//! - the model's *uncached* profile ([`super::ModelProfile`], what a run costs when every tile is
//!   recomputed: after a scene change, an invalidation, an expiry), refined online as before;
//! - the *expected hit rate* of the cache, an EMA of the hit rates the app reports after each
//!   run ([`CacheExpectation::observe_hit`]): it rises slowly (factor
//!   [`CacheSpec::rise_alpha`]) and drops at once, so a scene change that makes runs expensive
//!   again restores the full cost with its first report.
//!
//! The predicted GPU cost of a cached step is `uncached × (1 − expected_hit × saving)`
//! ([`CacheSpec::saving`]: the part of a cached step's cost that scales with its recomputed
//! tiles); every other step, and every step's CPU cost, is its profile. Chunks, range costs and
//! decisions use the predicted costs. A measured GPU time of a range holding cached steps waits
//! for its run's reported hit rate `h`; it is then split over the range's steps in proportion to
//! their costs at `h`, and a cached step's share is divided by `1 − h × saving`: cheap cached
//! runs never make the uncached profile cheap, and a full-cost run after a scene change does not
//! inflate it.
//!
//! The cache is the GPU backend's (the spec comes from its `CompileReport::cached_ops`): an
//! inference on the CPU recomputes every step and reports no hit rate, so its measured times
//! go into the profile at once and its predicted CPU cost is never scaled. (Scaling it made a
//! cached model look up to 5× cheaper on the CPU than it runs, and held its CPU measurements
//! until a report that never came.)

use serde::{Deserialize, Serialize};

use std::ops::Range;

use super::profile::{ModelProfile, StepCost};
use crate::processor::Processor;

/// Below this fraction of its uncached cost a measured range says too little about the uncached
/// cost (almost all of it was skipped): it is not folded into the profile.
const MIN_INFORMATIVE_FACTOR: f64 = 0.1;

/// Which steps of a model run with the convolution cache, and how much a hit saves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheSpec {
    /// Indices of the cached steps (the GPU backend's `CompileReport::cached_ops`).
    pub cached_steps: Vec<usize>,
    /// Fraction in `[0, 1]` of a cached step's uncached cost that a hit rate of 1 saves (the rest
    /// is what the step pays whatever the input: dispatch, the tiles' bookkeeping).
    #[serde(default = "CacheSpec::default_saving")]
    pub saving: f64,
    /// EMA factor in `(0, 1]` of a rising hit rate (a falling one is taken as reported).
    #[serde(default = "CacheSpec::default_rise_alpha")]
    pub rise_alpha: f64,
}

impl CacheSpec {
    /// Saving factor of [`CacheSpec::new`].
    pub const DEFAULT_SAVING: f64 = 0.9;
    /// Rise factor of [`CacheSpec::new`].
    pub const DEFAULT_RISE_ALPHA: f64 = 0.3;

    fn default_saving() -> f64 {
        Self::DEFAULT_SAVING
    }

    fn default_rise_alpha() -> f64 {
        Self::DEFAULT_RISE_ALPHA
    }

    /// The given cached steps with a saving factor of 0.9 and a rise factor of 0.3.
    pub fn new(cached_steps: impl IntoIterator<Item = usize>) -> Self {
        CacheSpec {
            cached_steps: cached_steps.into_iter().collect(),
            saving: Self::DEFAULT_SAVING,
            rise_alpha: Self::DEFAULT_RISE_ALPHA,
        }
    }

    /// Checks the values for a model of `steps` steps.
    pub fn validate(&self, steps: usize) -> Result<(), String> {
        if let Some(&s) = self.cached_steps.iter().find(|&&s| s >= steps) {
            return Err(format!(
                "cached step {s} does not exist (the model has {steps} steps)"
            ));
        }
        if !(0.0..=1.0).contains(&self.saving) {
            return Err(format!("saving must be in [0, 1], got {}", self.saving));
        }
        if !(self.rise_alpha > 0.0 && self.rise_alpha <= 1.0) {
            return Err(format!(
                "rise_alpha must be in (0, 1], got {}",
                self.rise_alpha
            ));
        }
        Ok(())
    }
}

/// The cache state of one model: its cached steps, the expected hit rate and the measured
/// shares of cached steps waiting for their run's hit rate.
#[derive(Clone, Debug, PartialEq)]
pub struct CacheExpectation {
    cached: Vec<bool>,
    saving: f64,
    rise_alpha: f64,
    expected_hit: Option<f64>,
    /// Measured GPU ranges holding cached steps since the last report.
    pending: Vec<(Range<usize>, f64)>,
}

impl CacheExpectation {
    /// The state of a model of `steps` steps with the cache `spec` (checked), no hit rate known
    /// yet (runs are predicted at their uncached cost until the first report).
    pub fn new(spec: &CacheSpec, steps: usize) -> Result<Self, String> {
        spec.validate(steps)?;
        let mut cached = vec![false; steps];
        for &s in &spec.cached_steps {
            cached[s] = true;
        }
        Ok(CacheExpectation {
            cached,
            saving: spec.saving,
            rise_alpha: spec.rise_alpha,
            expected_hit: None,
            pending: Vec::new(),
        })
    }

    /// Whether step `op` is cached.
    pub fn is_cached(&self, op: usize) -> bool {
        self.cached.get(op).copied().unwrap_or(false)
    }

    /// The expected hit rate (`None` before the first report).
    pub fn expected_hit(&self) -> Option<f64> {
        self.expected_hit
    }

    /// `1 − h × saving` for a hit rate `h`: a cached step's cost over its uncached cost.
    pub fn factor_at(&self, hit: f64) -> f64 {
        1.0 - hit.clamp(0.0, 1.0) * self.saving
    }

    /// The factor at the expected hit rate (1 before the first report).
    pub fn factor(&self) -> f64 {
        self.factor_at(self.expected_hit.unwrap_or(0.0))
    }

    /// The predicted cost of every step from the uncached ones: a cached step's GPU cost
    /// scaled by [`CacheExpectation::factor`], its CPU cost as it is (the CPU runs no cache).
    pub fn predict(&self, uncached: &[StepCost]) -> Vec<StepCost> {
        let f = self.factor();
        uncached
            .iter()
            .enumerate()
            .map(|(op, s)| {
                if self.is_cached(op) {
                    StepCost {
                        gpu_ms: s.gpu_ms * f,
                        ..*s
                    }
                } else {
                    *s
                }
            })
            .collect()
    }

    /// Whether a measured time of `ops` on `p` must wait for its run's hit rate: a GPU range
    /// holding cached steps.
    pub fn waits_for_hit(&self, ops: &Range<usize>, p: Processor) -> bool {
        p == Processor::Gpu && ops.clone().any(|op| self.is_cached(op))
    }

    /// Keeps the measured GPU time of a range holding cached steps until its run's hit rate is
    /// reported ([`CacheExpectation::fold_pending`]).
    pub fn hold(&mut self, ops: Range<usize>, measured_ms: f64) {
        self.pending.push((ops, measured_ms));
    }

    /// Whether more measurements wait than four runs would leave (the app does not report hit
    /// rates): the caller then folds them at the expected hit rate.
    pub fn overflowing(&self) -> bool {
        self.pending.len() > 4 * self.cached.len().max(1)
    }

    /// Folds the waiting GPU measurements into the uncached `profile`, for a run of hit rate `hit`:
    /// each range's time is split over its steps in proportion to their costs at that hit rate,
    /// and a cached step's share divided by its factor. A range that skipped almost everything
    /// says little about the uncached cost: it is dropped.
    pub fn fold_pending(&mut self, profile: &mut ModelProfile, hit: f64) {
        let f = self.factor_at(hit);
        let p = Processor::Gpu;
        for (ops, measured) in std::mem::take(&mut self.pending) {
            let (mut uncached, mut at_hit) = (0.0, 0.0);
            for op in ops.clone() {
                if let Some(t) = profile.steps[op].on(p) {
                    uncached += t;
                    at_hit += if self.is_cached(op) { t * f } else { t };
                }
            }
            if at_hit <= 0.0 || at_hit < MIN_INFORMATIVE_FACTOR * uncached {
                continue;
            }
            // Every step's share at this hit rate, over its factor: its uncached time.
            profile.observe_range(ops, p, measured * uncached / at_hit);
        }
    }

    /// Folds a reported hit rate into the expectation: the first report is taken as is, a lower
    /// one at once, a higher one with the rise factor. Values outside `[0, 1]` are clamped; NaN is
    /// ignored.
    pub fn observe_hit(&mut self, hit: f64) {
        if hit.is_nan() {
            return;
        }
        let h = hit.clamp(0.0, 1.0);
        self.expected_hit = Some(match self.expected_hit {
            Some(e) if h > e => e + self.rise_alpha * (h - e),
            _ => h,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_expectation_rises_slowly_and_drops_at_once() {
        let mut c = CacheExpectation::new(&CacheSpec::new([0, 2]), 4).unwrap();
        assert_eq!(c.expected_hit(), None);
        assert_eq!(c.factor(), 1.0);
        c.observe_hit(0.5);
        assert_eq!(c.expected_hit(), Some(0.5));
        c.observe_hit(1.0);
        assert!((c.expected_hit().unwrap() - 0.65).abs() < 1e-12);
        c.observe_hit(f64::NAN);
        assert!((c.expected_hit().unwrap() - 0.65).abs() < 1e-12);
        c.observe_hit(-3.0);
        assert_eq!(c.expected_hit(), Some(0.0));
        let steps = vec![StepCost::gpu_and_cpu(2.0, 4.0); 4];
        c.observe_hit(1.0);
        // 0.3 of the way to 1: factor 1 - 0.3 * 0.9.
        let p = c.predict(&steps);
        assert!((p[0].gpu_ms - 2.0 * 0.73).abs() < 1e-12);
        assert!((p[2].gpu_ms - 2.0 * 0.73).abs() < 1e-12);
        // The CPU runs no cache: its cost stays the profile's.
        assert_eq!(p[2].cpu_ms, 4.0);
        assert_eq!(p[1], steps[1]);
        assert_eq!(p[3], steps[3]);
    }

    #[test]
    fn measurements_are_folded_at_their_runs_hit_rate() {
        let steps = vec![StepCost::gpu_and_cpu(4.0, 12.0); 3];
        let mut profile = ModelProfile::new("m", steps);
        profile.ema_alpha = 1.0;
        let mut c = CacheExpectation::new(&CacheSpec::new([1]), 3).unwrap();
        // A run with hit rate 0.5: step 1 cost 4 * 0.55 = 2.2, steps 0 and 2 cost 4 each.
        c.hold(0..3, 10.2);
        c.fold_pending(&mut profile, 0.5);
        for s in &profile.steps {
            assert!((s.gpu_ms - 4.0).abs() < 1e-12, "{s:?}");
        }
        // Twice as slow: every uncached cost doubles.
        c.hold(1..3, 2.0 * 6.2);
        c.fold_pending(&mut profile, 0.5);
        assert!((profile.steps[1].gpu_ms - 8.0).abs() < 1e-12);
        assert!((profile.steps[2].gpu_ms - 8.0).abs() < 1e-12);
        assert_eq!(profile.steps[0].gpu_ms, 4.0);
        // A run that skipped everything says nothing about the uncached cost.
        let mut c = CacheExpectation::new(
            &CacheSpec {
                saving: 1.0,
                ..CacheSpec::new([1])
            },
            3,
        )
        .unwrap();
        c.hold(1..2, 0.01);
        c.fold_pending(&mut profile, 1.0);
        assert!((profile.steps[1].gpu_ms - 8.0).abs() < 1e-12);
    }

    #[test]
    fn bad_specs_are_refused() {
        assert!(CacheSpec::new([3]).validate(3).is_err());
        let s = CacheSpec {
            saving: 1.5,
            ..CacheSpec::new([0])
        };
        assert!(s.validate(3).is_err());
        let s = CacheSpec {
            rise_alpha: 0.0,
            ..CacheSpec::new([0])
        };
        assert!(s.validate(3).is_err());
        assert!(CacheSpec::new([0, 2]).validate(3).is_ok());
    }
}
