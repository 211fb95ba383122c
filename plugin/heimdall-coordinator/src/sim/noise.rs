//! Deterministic log-normal noise for the simulator: every step and render time is multiplied by
//! `exp(sigma * z)` with `z` standard normal, so the noise has median 1 (profiles are medians of
//! measured runs, `GpuModel::profile`) and `sigma` is the spread of `ln(factor)`.
//!
//! A factor is a pure function of `(seed, what, indices)` (a SplitMix64 hash and Box–Muller), not
//! a draw from a sequential stream: the same step of the same inference gets the same factor
//! whatever else the scenario runs, so a DNN simulated alone sees exactly the noise it sees beside
//! the others, and its isolated latency is comparable.

/// What a noise factor applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NoiseSource {
    /// The render of a frame.
    Render,
    /// A GPU step.
    GpuStep,
    /// A CPU step.
    CpuStep,
}

/// Log-normal noise with spread `sigma`, deterministic per `seed`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Noise {
    /// Standard deviation of `ln(factor)`; 0 for no noise.
    pub sigma: f64,
    /// Seed: the same seed gives the same factors.
    pub seed: u64,
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A uniform number in (0, 1) from 53 bits of `h`.
fn unit(h: u64) -> f64 {
    ((h >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// A stable 64-bit key of a name (FNV-1a), for keying noise by model name.
pub fn name_key(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

impl Noise {
    /// No noise.
    pub const NONE: Noise = Noise {
        sigma: 0.0,
        seed: 0,
    };

    /// A standard normal number determined by the seed, the source and three indices.
    pub fn normal(&self, source: NoiseSource, a: u64, b: u64, c: u64) -> f64 {
        let mut h = splitmix64(self.seed ^ (source as u64 + 1).wrapping_mul(0xa076_1d64_78bd_642f));
        for x in [a, b, c] {
            h = splitmix64(h ^ x);
        }
        let u1 = unit(h);
        let u2 = unit(splitmix64(h ^ 0xe703_7ed1_a0b4_28db));
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// The factor `exp(sigma * z)` for one time (1 without noise).
    pub fn factor(&self, source: NoiseSource, a: u64, b: u64, c: u64) -> f64 {
        if self.sigma == 0.0 {
            return 1.0;
        }
        (self.sigma * self.normal(source, a, b, c)).exp()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The factors of 20 000 independent keys have the stated log-normal law: ln(factor) has
    /// mean 0 (within 4 standard errors, 4 * 0.2 / sqrt(20000) = 0.0057) and standard deviation
    /// 0.2 (within 2 %), and 95.4 % of them lie within exp(+-2 sigma) (+-1 point).
    #[test]
    fn factors_are_log_normal_with_the_given_sigma() {
        let n = Noise {
            sigma: 0.2,
            seed: 7,
        };
        let logs: Vec<f64> = (0..20_000u64)
            .map(|k| n.factor(NoiseSource::GpuStep, k % 37, k / 37, 3).ln())
            .collect();
        let mean = logs.iter().sum::<f64>() / logs.len() as f64;
        let sd = (logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / logs.len() as f64).sqrt();
        let within = logs.iter().filter(|x| x.abs() <= 0.4).count() as f64 / logs.len() as f64;
        assert!(mean.abs() < 0.0057, "mean {mean}");
        assert!((sd - 0.2).abs() < 0.004, "sd {sd}");
        assert!((within - 0.9545).abs() < 0.01, "within 2 sigma {within}");
    }

    #[test]
    fn factors_are_deterministic_per_seed_and_differ_between_seeds() {
        let a = Noise {
            sigma: 0.2,
            seed: 1,
        };
        let b = Noise { seed: 2, ..a };
        let f = |n: &Noise| n.factor(NoiseSource::Render, 5, 0, 0);
        assert_eq!(f(&a), f(&a));
        assert_ne!(f(&a), f(&b));
        assert_ne!(
            a.factor(NoiseSource::Render, 5, 0, 0),
            a.factor(NoiseSource::GpuStep, 5, 0, 0)
        );
        assert_eq!(Noise::NONE.factor(NoiseSource::CpuStep, 1, 2, 3), 1.0);
    }
}
