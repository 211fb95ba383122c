//! When the convolution cache pays: a small state machine fed with each cached run's hit rate.
//! A cached run costs about `1 + overhead − hit · (overhead + saving)` of a plain one (linear
//! between a full run, `hit = 0`, and a run that reuses everything, `hit = 1`; both measured by
//! [`crate::GpuModel::calibrate_conv_cache`]), so the cache pays above the break-even hit rate
//! `overhead / (overhead + saving)`. Below it the cache is switched off; every `probe_every`
//! runs it is switched on again for a probe (one full run, then one that measures the hit
//! rate), so a scene that comes to rest gets the cache back.

/// When to switch the cache off and on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AutoPolicy {
    /// Hit rate below which the cache costs more than it saves.
    pub break_even: f64,
    /// Runs with the cache off between two probes.
    pub probe_every: u32,
}

/// What a calibration measured ([`crate::GpuModel::calibrate_conv_cache`]): medians of runs
/// interleaved on the same input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CacheCalibration {
    /// GPU time of a plain run.
    pub plain_ms: f64,
    /// Of a cached run that recomputes everything (the cache's worst case).
    pub full_ms: f64,
    /// Of a cached run that reuses everything.
    pub hit_ms: f64,
}

impl CacheCalibration {
    /// What a full cached run costs over a plain one (0.05: 5 % slower).
    pub fn overhead(&self) -> f64 {
        self.full_ms / self.plain_ms - 1.0
    }

    /// What a run that reuses everything saves (0.35: 35 % faster).
    pub fn saving(&self) -> f64 {
        1.0 - self.hit_ms / self.plain_ms
    }

    /// The GPU time a run saves at hit rate `hit` (negative: the cache costs time), ms, by the
    /// linear model between a full run and one that reuses everything.
    pub fn saved_ms(&self, hit: f64) -> f64 {
        self.plain_ms - (self.full_ms - hit * (self.full_ms - self.hit_ms))
    }

    /// The policy: break-even at `overhead / (overhead + saving)` (0 when the cache costs
    /// nothing, never on when it saves nothing), a probe every `probe_every` runs.
    pub fn policy(&self, probe_every: u32) -> AutoPolicy {
        let (o, s) = (self.overhead().max(0.0), self.saving());
        let break_even = if s <= 0.0 { f64::INFINITY } else { o / (o + s) };
        AutoPolicy {
            break_even,
            probe_every: probe_every.max(2),
        }
    }
}

/// The switch's state.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct AutoSwitch {
    policy: AutoPolicy,
    ema: Option<f64>,
    off_runs: u32,
    probing: bool,
}

impl AutoSwitch {
    /// A switch with no history (the cache starts on).
    pub fn new(policy: AutoPolicy) -> AutoSwitch {
        AutoSwitch {
            policy,
            ema: None,
            off_runs: 0,
            probing: false,
        }
    }

    /// A run starts with the cache off: whether to switch it on for a probe.
    pub fn run_while_off(&mut self) -> bool {
        self.off_runs += 1;
        if self.off_runs >= self.policy.probe_every {
            self.off_runs = 0;
            self.probing = true;
            return true;
        }
        false
    }

    /// The hit rate of a cached run that was not a full one: whether the cache stays on. A
    /// probe's result replaces the history; otherwise it is averaged with it (weight ¼), so a
    /// scene that starts moving switches the cache off within a few runs, while one run whose
    /// blocks all expired together does not.
    pub fn observe(&mut self, hit: f64) -> bool {
        let e = match (self.ema, self.probing) {
            (Some(e), false) => 0.75 * e + 0.25 * hit,
            _ => hit,
        };
        self.ema = Some(e);
        self.probing = false;
        e >= self.policy.break_even
    }

    /// The averaged hit rate.
    pub fn expected_hit(&self) -> Option<f64> {
        self.ema
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_break_even_follows_the_measured_costs() {
        let c = CacheCalibration {
            plain_ms: 1.0,
            full_ms: 1.2,
            hit_ms: 0.7,
        };
        assert!((c.overhead() - 0.2).abs() < 1e-12);
        assert!((c.saving() - 0.3).abs() < 1e-12);
        assert!((c.policy(30).break_even - 0.4).abs() < 1e-12);
        // Saved: -0.2 ms at no hit, 0.3 at all, 0 at the break-even.
        assert!((c.saved_ms(0.0) + 0.2).abs() < 1e-12);
        assert!((c.saved_ms(1.0) - 0.3).abs() < 1e-12);
        assert!(c.saved_ms(0.4).abs() < 1e-12);
        let free = CacheCalibration { full_ms: 0.99, ..c };
        assert_eq!(free.policy(30).break_even, 0.0);
        let useless = CacheCalibration { hit_ms: 1.1, ..c };
        assert_eq!(useless.policy(30).break_even, f64::INFINITY);
    }

    #[test]
    fn a_moving_scene_switches_off_and_a_still_one_comes_back_at_the_next_probe() {
        let mut s = AutoSwitch::new(AutoPolicy {
            break_even: 0.4,
            probe_every: 5,
        });
        assert!(s.observe(0.9));
        // One run whose blocks all expired: 0.9 → 0.675, still on.
        assert!(s.observe(0.0));
        assert!(s.observe(0.9));
        // Motion: 0.73 → 0.55 → 0.41 → 0.31: off at the third moving run.
        assert!(s.observe(0.0));
        assert!(s.observe(0.0));
        assert!(!s.observe(0.0));
        // Four runs off, the fifth probes.
        assert!(!(0..4).any(|_| s.run_while_off()));
        assert!(s.run_while_off());
        // Still moving: off again at once (the probe's value replaces the history).
        assert!(!s.observe(0.1));
        assert!(!(0..4).any(|_| s.run_while_off()));
        assert!(s.run_while_off());
        // At rest: on.
        assert!(s.observe(0.95));
        assert_eq!(s.expected_hit(), Some(0.95));
    }
}
