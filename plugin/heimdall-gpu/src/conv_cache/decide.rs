//! Whether the convolution cache can pay for a model at all, decided once from its calibration
//! ([`crate::GpuModel::calibrate_conv_cache`]), before an app keeps it: the automatic switch
//! ([`super::AutoPolicy`]) then decides run by run while the scene moves, but it cannot give
//! back the cache's memory (the kept activations and the second, plain memory plan) or make a
//! cache pay that cannot even on a still scene.
//!
//! The rule: the cache is kept when a **still scene** saves at least [`MIN_GAIN`] of a plain
//! run. A still scene does not reuse everything: every block is recomputed when it expires
//! (`expiry_ms`, `expiry_runs`) and on a periodic refresh (`refresh_runs`), so its hit rate is at
//! most [`still_scene_hit_rate`] (0 when a full run takes longer than the expiry: then every run
//! finds every block expired). By the calibration's linear model a run at hit rate `h` saves
//! `h · (overhead + saving) − overhead` of a plain run ([`super::CacheCalibration`]). So the rule
//! drops the cache both where a run that reuses everything saves too little over the
//! histograms' cost and where the break-even hit rate is above what the expiry lets a still
//! scene reach.

use heimdall_ir::conv_cache::ConvCacheConfig;

use super::CacheCalibration;
use crate::error::GpuError;
use crate::model::GpuModel;

/// The smallest share of a plain run's GPU time that a still scene must save for the cache to
/// be kept (10 %): below it, the memory it holds and the risk of a slower run while the scene
/// starts moving buy too little.
pub const MIN_GAIN: f64 = 0.10;

/// How [`GpuModel::calibrate_conv_cache_for_device`] measures each kind of run (plain, full,
/// all reused) on a device of a type ([`calibration_runs`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CalibrationRuns {
    /// The median of `runs` runs after `warmup` ones.
    Median {
        /// Runs of each kind left out first.
        warmup: usize,
        /// Runs of each kind measured.
        runs: usize,
    },
    /// The fastest of `rounds` runs, with no warm-up.
    Fastest {
        /// Runs of each kind.
        rounds: usize,
    },
}

/// How to calibrate on a device of this type. A GPU runs these models in tenths of a
/// millisecond, with clocks and launch latencies that vary from run to run: the median of 9
/// after 3 warm-ups, a few milliseconds in all. On a CPU device (lavapipe, SwiftShader) one run
/// is the model's whole work, 0.3–1.6 s for the bundled detectors, and the 36 runs of the
/// median took about a minute per model; there the time is the work, the profile that runs
/// first has warmed every pipeline and buffer, and other work on the same cores (the app, other
/// models compiling) can only make a run slower: the fastest of 2 runs of each kind (6 runs,
/// about 4 of the plain model) is the better estimate, and the cache's saving there (~95 %) is
/// far from [`MIN_GAIN`].
pub fn calibration_runs(device_type: wgpu::DeviceType) -> CalibrationRuns {
    match device_type {
        wgpu::DeviceType::Cpu => CalibrationRuns::Fastest { rounds: 2 },
        _ => CalibrationRuns::Median { warmup: 3, runs: 9 },
    }
}

impl GpuModel {
    /// [`GpuModel::calibrate_conv_cache`] with the runs [`calibration_runs`] gives its device;
    /// the result is kept with the model ([`ConvCacheControl::calibration`](crate::ConvCacheControl::calibration)).
    pub fn calibrate_conv_cache_for_device(
        &self,
        inputs: &[&[f32]],
    ) -> Result<Option<CacheCalibration>, GpuError> {
        let rounds = match calibration_runs(self.context().info.device_type) {
            CalibrationRuns::Median { warmup, runs } => {
                return self.calibrate_conv_cache(inputs, warmup, runs);
            }
            CalibrationRuns::Fastest { rounds } => rounds,
        };
        let mut best: Option<CacheCalibration> = None;
        for _ in 0..rounds.max(1) {
            let Some(c) = self.calibrate_conv_cache(inputs, 0, 1)? else {
                return Ok(None);
            };
            best = Some(best.map_or(c, |b| CacheCalibration {
                plain_ms: b.plain_ms.min(c.plain_ms),
                full_ms: b.full_ms.min(c.full_ms),
                hit_ms: b.hit_ms.min(c.hit_ms),
            }));
        }
        if let (Some(b), Some(cache)) = (best, self.conv_cache_handle()) {
            cache.set_calibration(b);
        }
        Ok(best)
    }
}

/// The hit rate a still scene reaches at most with `config` when runs start at least
/// `min_interval_ms` apart (the frame period, or a DNN's request period) and take the
/// calibration's GPU times: every `expiry_runs`-th and `refresh_runs`-th run recomputes every
/// block, and with `expiry_ms`, after a full run (every block stamped at its start) the runs
/// that start within the expiry reuse everything, then the next one is full again.
pub fn still_scene_hit_rate(
    config: &ConvCacheConfig,
    calibration: &CacheCalibration,
    min_interval_ms: f64,
) -> f64 {
    let mut rate: f64 = 1.0;
    for every in [config.expiry_runs, config.refresh_runs] {
        if every > 0 {
            rate = rate.min(1.0 - 1.0 / f64::from(every));
        }
    }
    if config.expiry_ms > 0 {
        let expiry = f64::from(config.expiry_ms);
        let floor = min_interval_ms.max(0.0);
        let full = calibration.full_ms.max(floor);
        // A hit run still runs the histograms: never free (1 µs at the least).
        let hit = calibration.hit_ms.max(floor).max(1e-3);
        let hits = if full >= expiry || !full.is_finite() {
            0.0
        } else {
            ((expiry - full) / hit).ceil()
        };
        rate = rate.min(hits / (hits + 1.0));
    }
    rate.clamp(0.0, 1.0)
}

/// Why a still scene can reuse nothing, whatever a calibration would say: with `expiry_ms`,
/// every run finds every block expired when a full run (`full_ms`, e.g. the sum of a profile's
/// steps) or the interval between two runs' starts is as long as the expiry. `None` when the
/// calibration has to decide. Lets a caller drop the cache without calibrating it: on a CPU
/// device, where a detector's full run can take longer than DeepMon's second, that saves the
/// calibration's runs of a cache that can only be dropped.
pub fn expires_before_reuse(
    config: &ConvCacheConfig,
    full_ms: f64,
    min_interval_ms: f64,
) -> Option<String> {
    let expiry = f64::from(config.expiry_ms);
    (config.expiry_ms > 0 && full_ms.max(min_interval_ms) >= expiry).then(|| {
        format!(
            "dropped: with this expiry a still scene reuses nothing: a full run takes \
             {full_ms:.1} ms and runs start at least {min_interval_ms:.1} ms apart, against an \
             expiry of {} ms",
            config.expiry_ms
        )
    })
}

/// What the calibration says about a model's cache: whether it pays, and the figures behind it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CacheVerdict {
    /// The calibration it was made from.
    pub calibration: CacheCalibration,
    /// The hit rate a still scene reaches at most ([`still_scene_hit_rate`]).
    pub still_hit_rate: f64,
    /// The share of a plain run that a still scene saves at that hit rate (negative: it costs).
    pub still_gain: f64,
    /// The hit rate under which the cache costs more than it saves.
    pub break_even: f64,
    /// The smallest `still_gain` that keeps the cache ([`MIN_GAIN`] by default).
    pub min_gain: f64,
}

impl CacheVerdict {
    /// Judges `calibration` for `config` with runs at least `min_interval_ms` apart, against
    /// `min_gain` ([`MIN_GAIN`] unless measuring the rule itself).
    pub fn new(
        calibration: CacheCalibration,
        config: &ConvCacheConfig,
        min_interval_ms: f64,
        min_gain: f64,
    ) -> CacheVerdict {
        let still_hit_rate = still_scene_hit_rate(config, &calibration, min_interval_ms);
        // A full cached run does a plain run's work and the histograms: one measured faster is
        // noise, and must not make a cache that never hits look like a saving.
        let (o, s) = (calibration.overhead().max(0.0), calibration.saving());
        let still_gain = if calibration.plain_ms > 0.0 {
            still_hit_rate * (o + s) - o
        } else {
            f64::NEG_INFINITY
        };
        CacheVerdict {
            calibration,
            still_hit_rate,
            still_gain,
            break_even: calibration.policy(2).break_even,
            min_gain,
        }
    }

    /// Whether the cache pays: a still scene saves at least `min_gain` of a plain run.
    pub fn pays(&self) -> bool {
        self.still_gain.is_finite() && self.still_gain >= self.min_gain
    }

    /// One line for a log or a report: kept or dropped, and why.
    pub fn describe(&self) -> String {
        let c = &self.calibration;
        let pct = |x: f64| 100.0 * x;
        let figures = format!(
            "plain {:.3} ms, full {:.3} ms, all reused {:.3} ms; break-even hit rate {:.2}, \
             a still scene reaches {:.2}",
            c.plain_ms, c.full_ms, c.hit_ms, self.break_even, self.still_hit_rate
        );
        if self.pays() {
            return format!(
                "kept: a still scene saves {:.0} % of a plain run ({figures})",
                pct(self.still_gain)
            );
        }
        let why = if self.still_hit_rate <= 0.0 {
            "with this expiry a still scene reuses nothing: every block expires before the next \
             run"
            .to_string()
        } else if c.saving() < self.min_gain {
            format!(
                "a run that reuses everything saves {:.0} %, under {:.0} %",
                pct(c.saving()),
                pct(self.min_gain)
            )
        } else {
            format!(
                "expiry and refresh let a still scene save {:.0} %, under {:.0} %",
                pct(self.still_gain),
                pct(self.min_gain)
            )
        };
        format!("dropped: {why} ({figures})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cal(plain_ms: f64, full_ms: f64, hit_ms: f64) -> CacheCalibration {
        CacheCalibration {
            plain_ms,
            full_ms,
            hit_ms,
        }
    }

    fn by_runs(expiry_runs: u32) -> ConvCacheConfig {
        ConvCacheConfig {
            expiry_ms: 0,
            expiry_runs,
            ..ConvCacheConfig::default()
        }
    }

    #[test]
    fn the_expiry_bounds_a_still_scenes_hit_rate() {
        let c = cal(1.0, 1.05, 0.5);
        assert_eq!(still_scene_hit_rate(&by_runs(0), &c, 0.0), 1.0);
        assert!((still_scene_hit_rate(&by_runs(30), &c, 0.0) - 29.0 / 30.0).abs() < 1e-12);
        let refresh = ConvCacheConfig {
            refresh_runs: 4,
            ..by_runs(30)
        };
        assert_eq!(still_scene_hit_rate(&refresh, &c, 0.0), 0.75);
        // 1000 ms: after a full run of 100 ms, hits of 100 ms (the frame period) start at 100,
        // 200, ..., 900 ms: 9 hits to one full run.
        let timed = ConvCacheConfig::default();
        let slow = cal(80.0, 100.0, 5.0);
        assert!((still_scene_hit_rate(&timed, &slow, 100.0) - 0.9).abs() < 1e-12);
        // A full run as long as the expiry: every run finds every block expired.
        let slower = cal(900.0, 1000.0, 50.0);
        assert_eq!(still_scene_hit_rate(&timed, &slower, 0.0), 0.0);
        // A DNN requested every 2 s: the same.
        assert_eq!(still_scene_hit_rate(&timed, &slow, 2000.0), 0.0);
    }

    #[test]
    fn kept_where_a_still_scene_saves_enough_dropped_where_it_cannot() {
        let config = by_runs(30);
        // The H100's palm detection (grid dispatches): kept.
        let h100 = CacheVerdict::new(cal(0.36, 0.37, 0.233), &config, 0.0, MIN_GAIN);
        assert!(h100.pays(), "{}", h100.describe());
        assert!(h100.describe().starts_with("kept: "));
        // Lavapipe: kept, ~94 % saved.
        let cpu = CacheVerdict::new(cal(269.6, 275.0, 15.4), &config, 33.0, MIN_GAIN);
        assert!(cpu.pays() && cpu.still_gain > 0.9, "{}", cpu.describe());
        // A reused run saves 5 %: dropped, whatever the hit rate.
        let little = CacheVerdict::new(cal(1.0, 1.02, 0.95), &by_runs(0), 0.0, MIN_GAIN);
        assert!(!little.pays());
        assert!(little.describe().contains("reuses everything saves 5 %"));
        // The histograms cost more than the work they skip: dropped.
        let tiny = CacheVerdict::new(cal(0.01, 0.03, 0.02), &config, 0.0, MIN_GAIN);
        assert!(!tiny.pays() && tiny.still_gain < 0.0);
        // A break-even of 0.75 with a 5-run expiry (still scenes reach 0.8): 4 % saved.
        let late = CacheVerdict::new(cal(1.0, 1.6, 0.8), &by_runs(5), 0.0, MIN_GAIN);
        assert!((late.break_even - 0.75).abs() < 1e-12);
        assert!(!late.pays(), "{}", late.describe());
        assert!(late.describe().contains("expiry and refresh"));
        // Slower than the expiry: nothing is ever reused.
        let expired = CacheVerdict::new(
            cal(1500.0, 1600.0, 35.0),
            &ConvCacheConfig::default(),
            33.0,
            MIN_GAIN,
        );
        assert_eq!(expired.still_hit_rate, 0.0);
        assert!(!expired.pays());
        assert!(expired.describe().contains("reuses nothing"));
        // A full run measured faster than a plain one (noise) saves nothing without hits.
        let noisy = CacheVerdict::new(
            cal(0.05, 0.04, 0.03),
            &ConvCacheConfig {
                expiry_ms: 1,
                ..ConvCacheConfig::default()
            },
            33.0,
            MIN_GAIN,
        );
        assert_eq!(noisy.still_hit_rate, 0.0);
        assert!(
            !noisy.pays() && noisy.still_gain == 0.0,
            "{}",
            noisy.describe()
        );
        // A broken calibration never keeps it.
        let broken = CacheVerdict::new(cal(0.0, 1.0, 1.0), &config, 0.0, MIN_GAIN);
        assert!(!broken.pays());
    }

    #[test]
    fn a_full_run_as_long_as_the_expiry_drops_the_cache_before_any_calibration() {
        let timed = ConvCacheConfig::default();
        let why = expires_before_reuse(&timed, 1500.0, 33.0).expect("1.5 s runs, 1 s expiry");
        assert!(
            why.starts_with("dropped: ") && why.contains("1500.0 ms"),
            "{why}"
        );
        assert!(
            expires_before_reuse(&timed, 10.0, 2000.0).is_some(),
            "requested every 2 s"
        );
        assert_eq!(expires_before_reuse(&timed, 300.0, 33.0), None);
        assert_eq!(
            expires_before_reuse(&by_runs(30), 1e6, 1e6),
            None,
            "no time expiry"
        );
    }

    #[test]
    fn cpu_devices_calibrate_with_the_fastest_of_two_runs() {
        assert_eq!(
            calibration_runs(wgpu::DeviceType::Cpu),
            CalibrationRuns::Fastest { rounds: 2 }
        );
        for gpu in [
            wgpu::DeviceType::DiscreteGpu,
            wgpu::DeviceType::IntegratedGpu,
        ] {
            assert_eq!(
                calibration_runs(gpu),
                CalibrationRuns::Median { warmup: 3, runs: 9 }
            );
        }
    }
}
