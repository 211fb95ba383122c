//! A DNN's model compiled for the GPU with what its [`ConvCache`] asks for: off; forced on
//! (calibrated for the automatic switch); or [`ConvCache::Auto`], compiled with the cache,
//! calibrated and judged ([`CacheVerdict`]), and compiled again without it where it cannot pay.
//! Blocking (it runs on the compile task).

use std::ops::Range;

use heimdall_gpu::conv_cache::{CacheVerdict, MIN_GAIN, expires_before_reuse};
use heimdall_gpu::preprocess::Preprocessor;
use heimdall_gpu::{GpuContext, GpuModel, GpuOptions, Precision, StepProfile};
use heimdall_ir::Graph;
use heimdall_vision::image::Normalization;

use crate::dnn::{ConvCache, DnnError};

/// Runs with the convolution cache switched off between two probes of its automatic switch.
const CACHE_PROBE_EVERY: u32 = 30;

/// The profile's warm-up and measured runs (median of 5 after 2 warm-ups).
const PROFILE_RUNS: (usize, usize) = (2, 5);

/// The profile's runs on a CPU device (a software rasteriser): one measured run, no warm-up
/// (the pipelines were compiled with the model). There a run's time is its work, steady from
/// run to run, and a large model's run takes tens of seconds (PP-OCR's detector on lavapipe:
/// 14-29 s), so the 7 runs of a GPU's profile cost minutes per compile for no better estimate.
const PROFILE_RUNS_CPU: (usize, usize) = (0, 1);

/// The profile's runs on `ctx`'s device.
fn profile_runs(ctx: &GpuContext) -> (usize, usize) {
    if ctx.info.device_type == wgpu::DeviceType::Cpu {
        PROFILE_RUNS_CPU
    } else {
        PROFILE_RUNS
    }
}

/// What to compile: the graph, for which device, and how its cache should be.
pub(crate) struct GpuJob<'a> {
    pub ctx: &'a GpuContext,
    pub graph: &'a Graph,
    pub precision: Precision,
    /// Op ranges in another precision (the accuracy guard's f32 ranges).
    pub overrides: Vec<(Range<usize>, Precision)>,
    /// The DNN's normalisation (the histograms span what it makes of pixels).
    pub norm: Normalization,
    /// Channels of the model's input.
    pub channels: usize,
    /// The cache as the DNN asks for it.
    pub cache: ConvCache,
    /// Whether the DNN's crop is a region of interest ([`crate::dnn::InputCrop::Roi`]).
    pub roi: bool,
    /// The least time between two runs' starts, ms (the frame period, or the request period
    /// if longer): with the expiry, it bounds what a still scene can reuse.
    pub min_interval_ms: f64,
    /// The inputs of the profile and the calibration (zeros).
    pub inputs: &'a [&'a [f32]],
}

impl GpuJob<'_> {
    /// The options of the model without the cache: the precision and its overrides.
    fn options(&self) -> GpuOptions {
        let mut o = GpuOptions::new(self.precision);
        o.overrides = self.overrides.clone();
        o
    }
}

/// The compiled model, warmed and profiled, and what became of its cache.
pub(crate) struct GpuCompiled {
    pub model: GpuModel,
    /// The preprocessing into its input.
    pub pre: Preprocessor,
    /// Each step's measured time.
    pub profile: StepProfile,
    /// What became of the convolution cache, in one line (`None`: off, as asked).
    pub decision: Option<String>,
}

fn compile_err(e: &dyn std::fmt::Display) -> DnnError {
    DnnError::Compile(e.to_string())
}

/// Why [`ConvCache::Auto`] compiles no cache for a region of interest.
const ROI_OFF: &str = "off: the crop is a region of interest, which moves with what it tracks";

/// [`compile_gpu`] given `model`, compiled with the job's precision and overrides and no cache
/// (the accuracy guard's): where the job compiles no cache ([`ConvCache::Off`], or
/// [`ConvCache::Auto`] on a region of interest) that model is warmed and profiled instead of
/// compiled again; otherwise it is dropped first.
pub(crate) fn compile_gpu_reusing(
    job: &GpuJob<'_>,
    model: GpuModel,
) -> Result<GpuCompiled, DnnError> {
    let decision = match job.cache {
        ConvCache::Off => None,
        ConvCache::Auto(_) if job.roi => Some(ROI_OFF.to_string()),
        _ => {
            drop(model);
            return compile_gpu(job);
        }
    };
    let pre = Preprocessor::new(&model, 0, job.norm).map_err(|e| compile_err(&e))?;
    let profile = profile(&model, job.inputs, profile_runs(job.ctx))?;
    Ok(GpuCompiled {
        model,
        pre,
        profile,
        decision,
    })
}

/// Compiles, warms and profiles the model; with the cache, calibrates it and (for
/// [`ConvCache::Auto`]) keeps it only where the calibration says it pays.
pub(crate) fn compile_gpu(job: &GpuJob<'_>) -> Result<GpuCompiled, DnnError> {
    let (forced, settings) = match job.cache {
        ConvCache::Off => return plain(job, None, None),
        ConvCache::Auto(_) if job.roi => {
            return plain(job, None, Some(ROI_OFF.to_string()));
        }
        ConvCache::Auto(c) => (false, c),
        ConvCache::On(c) => (true, c),
    };
    // The histograms span the normalised pixel values.
    let config = crate::dnn::cache_config(&settings, &job.norm, job.channels);
    let options = job.options().with_conv_cache(config);
    let (model, pre) = match compile_model(job, options) {
        Ok(m) => m,
        Err(e) if forced => return Err(compile_err(&e)),
        Err(e) => {
            let why = format!("dropped: the model cannot be compiled with it ({e})");
            return plain(job, None, Some(why));
        }
    };
    let profile = profile(&model, job.inputs, profile_runs(job.ctx))?;
    if model.conv_cache().is_none() {
        // No op of this model depends on the input through a receptive field: compiled as
        // without the cache.
        let why = "no op of the model can be cached";
        let decision = if forced {
            format!("on, but {why}")
        } else {
            format!("dropped: {why}")
        };
        return Ok(GpuCompiled {
            model,
            pre,
            profile,
            decision: Some(decision),
        });
    }
    // A full run (the profile's, every step full) as long as the expiry: nothing to calibrate.
    let full_ms = profile.gpu_total(model.placement()).as_secs_f64() * 1e3;
    if !forced && let Some(why) = expires_before_reuse(&config, full_ms, job.min_interval_ms) {
        drop((model, pre));
        return plain(job, Some(profile), Some(why));
    }
    // Plain, full and all-hit runs: the automatic switch's break-even, and the verdict (few
    // runs on a CPU device: `heimdall_gpu::conv_cache::calibration_runs`).
    let calibration = model
        .calibrate_conv_cache_for_device(job.inputs)
        .map_err(|e| compile_err(&e))?;
    let verdict = calibration.map(|c| CacheVerdict::new(c, &config, job.min_interval_ms, MIN_GAIN));
    let keep = forced || verdict.is_some_and(|v| v.pays());
    if keep {
        if let Some(c) = calibration
            && let Some(cache) = model.conv_cache()
        {
            cache.set_auto(Some(c.policy(CACHE_PROBE_EVERY)));
        }
        let decision = match (forced, verdict) {
            (true, Some(v)) => format!("on (forced); the calibration: {}", v.describe()),
            (true, None) => {
                "on (forced); no GPU timestamps to calibrate it: no automatic switch".to_string()
            }
            (false, v) => v.map(|v| v.describe()).unwrap_or_default(),
        };
        return Ok(GpuCompiled {
            model,
            pre,
            profile,
            decision: Some(decision),
        });
    }
    let decision = verdict.map_or_else(
        || "dropped: no GPU timestamps to calibrate it".to_string(),
        |v| v.describe(),
    );
    // Its memory goes before the plain model takes its own.
    drop((model, pre));
    plain(job, Some(profile), Some(decision))
}

/// The model compiled without the cache, and profiled; `cached` is the profile of the same
/// model compiled with the cache, where the cache was dropped. A GPU profiles the plain model
/// again (a few milliseconds). A CPU device keeps `cached`: each of its steps was measured on
/// full runs, which do a plain run's work plus the histograms (palm detection on lavapipe:
/// 2446 ms against 2421 ms plain), and there a profile of the palm detector takes 7 runs of
/// 1.5–2.5 s; the coordinator's profiles adapt to the measured chunks at run time anyway.
fn plain(
    job: &GpuJob<'_>,
    cached: Option<StepProfile>,
    decision: Option<String>,
) -> Result<GpuCompiled, DnnError> {
    let (model, pre) = compile_model(job, job.options()).map_err(|e| compile_err(&e))?;
    let cpu_device = job.ctx.info.device_type == wgpu::DeviceType::Cpu;
    let profile = match cached {
        Some(p) if cpu_device && p.steps.len() == model.num_steps() => p,
        _ => profile(&model, job.inputs, profile_runs(job.ctx))?,
    };
    Ok(GpuCompiled {
        model,
        pre,
        profile,
        decision,
    })
}

/// The model and its preprocessing.
fn compile_model(
    job: &GpuJob<'_>,
    options: GpuOptions,
) -> Result<(GpuModel, Preprocessor), heimdall_gpu::GpuError> {
    let model = GpuModel::compile(job.ctx, job.graph, options)?;
    let pre = Preprocessor::new(&model, 0, job.norm)?;
    Ok((model, pre))
}

/// Warms every pipeline and measures the steps; the profile's zero inputs must not seed the
/// cache.
fn profile(
    model: &GpuModel,
    inputs: &[&[f32]],
    (warmup, runs): (usize, usize),
) -> Result<StepProfile, DnnError> {
    let profile = model
        .profile(inputs, warmup, runs)
        .map_err(|e| compile_err(&e))?;
    model.invalidate_conv_cache();
    Ok(profile)
}
