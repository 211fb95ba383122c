//! Per-step timing: GPU time of every GPU step from timestamp queries (each step in its own
//! compute pass with `timestamp_writes`, which needs only `TIMESTAMP_QUERY`), or, without
//! timestamps, the wall time of submitting the step alone and waiting for it; CPU steps are
//! timed on the wall clock including their transfers. Median of several runs after warm-up.

use std::time::{Duration, Instant};

use crate::error::GpuError;
use crate::model::GpuModel;
use crate::plan::Placement;

/// How the step times were measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimingSource {
    /// GPU timestamps around each step's compute pass.
    Timestamps,
    /// Wall time of one submission per step (no timestamp support).
    Submissions,
}

/// Median time of every step over the measured runs.
#[derive(Clone, Debug, PartialEq)]
pub struct StepProfile {
    /// Median time per step (GPU steps: GPU time; CPU steps: wall time with transfers).
    pub steps: Vec<Duration>,
    /// How GPU steps were timed.
    pub source: TimingSource,
    /// Measured runs (after warm-up).
    pub runs: usize,
}

impl StepProfile {
    /// Sum of the medians of the GPU steps.
    pub fn gpu_total(&self, placement: &[Placement]) -> Duration {
        self.steps
            .iter()
            .zip(placement)
            .filter(|(_, p)| **p == Placement::Gpu)
            .map(|(d, _)| *d)
            .sum()
    }
}

/// A timestamp query set of `count` queries with its resolve buffer and a mappable staging
/// buffer of the same size (8 bytes per query): what every GPU timing here needs.
pub fn timestamp_buffers(
    device: &wgpu::Device,
    count: u32,
    label: &str,
) -> (wgpu::QuerySet, wgpu::Buffer, wgpu::Buffer) {
    let set = device.create_query_set(&wgpu::QuerySetDescriptor {
        label: Some(label),
        ty: wgpu::QueryType::Timestamp,
        count,
    });
    let size = 8 * u64::from(count);
    let resolve = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size,
        usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    (set, resolve, staging)
}

pub(crate) fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

impl GpuModel {
    /// Runs the model `warmup + runs` times on `inputs` and returns each step's median time
    /// (blocking: for benchmarks, the CLI and tests). With the convolution cache on, every
    /// profiled run is a full one (the cache's worst case: nothing skipped), its prologue
    /// counted in the first GPU step; the cache is invalidated afterwards.
    pub fn profile(
        &self,
        inputs: &[&[f32]],
        warmup: usize,
        runs: usize,
    ) -> Result<StepProfile, GpuError> {
        let n = self.num_steps();
        let timestamps = self.ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY)
            && n > 0
            && 2 * n <= wgpu::QUERY_SET_MAX_QUERIES as usize;
        if timestamps && self.placement.iter().all(|p| *p == Placement::Gpu) {
            return self.profile_pipelined(inputs, warmup, runs);
        }
        let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(runs); n];
        let device = &self.ctx.device;
        let queries =
            timestamps.then(|| timestamp_buffers(device, 2 * n as u32, "heimdall step timestamps"));
        let period = f64::from(self.ctx.queue.get_timestamp_period());
        for run in 0..warmup + runs {
            for (i, x) in inputs.iter().enumerate() {
                self.set_input(i, x)?;
            }
            self.invalidate_conv_cache();
            let mut times = vec![Duration::ZERO; n];
            let mut encoder = device.create_command_encoder(&Default::default());
            for (i, time) in times.iter_mut().enumerate() {
                if self.placement[i] == Placement::Cpu {
                    if let Some((set, _, _)) = &queries {
                        // Every query must be written before it is resolved: resolving an
                        // unwritten one waits forever on Vulkan drivers (NVIDIA hangs).
                        encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                            label: Some("heimdall CPU step (timestamp slots)"),
                            timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                                query_set: set,
                                beginning_of_pass_write_index: Some(2 * i as u32),
                                end_of_pass_write_index: Some(2 * i as u32 + 1),
                            }),
                        });
                    }
                    self.ctx.queue.submit([encoder.finish()]);
                    let start = Instant::now();
                    self.run_cpu_step_blocking(i)?;
                    *time = start.elapsed();
                    encoder = device.create_command_encoder(&Default::default());
                    continue;
                }
                match &queries {
                    Some((set, _, _)) => self.record_timed_step(&mut encoder, set, i),
                    None => {
                        self.ctx.queue.submit([encoder.finish()]);
                        self.wait()?;
                        let start = Instant::now();
                        self.submit_gpu(i..i + 1)?;
                        self.wait()?;
                        *time = start.elapsed();
                        encoder = device.create_command_encoder(&Default::default());
                    }
                }
            }
            if let Some((set, resolve, staging)) = &queries {
                encoder.resolve_query_set(set, 0..2 * n as u32, resolve, 0);
                encoder.copy_buffer_to_buffer(resolve, 0, staging, 0, 16 * n as u64);
            }
            self.ctx.queue.submit([encoder.finish()]);
            if let Some((_, _, staging)) = &queries {
                self.wait_for_maps(std::slice::from_ref(staging))?;
                {
                    let ticks = ticks_of(staging);
                    for i in (0..n).filter(|&i| self.placement[i] == Placement::Gpu) {
                        let dt = ticks[2 * i + 1].saturating_sub(ticks[2 * i]);
                        times[i] = Duration::from_nanos((dt as f64 * period) as u64);
                    }
                }
                staging.unmap();
            } else {
                self.wait()?;
            }
            if run >= warmup {
                for (s, t) in samples.iter_mut().zip(times) {
                    s.push(t);
                }
            }
        }
        self.invalidate_conv_cache();
        Ok(StepProfile {
            steps: samples.into_iter().map(median).collect(),
            source: if timestamps {
                TimingSource::Timestamps
            } else {
                TimingSource::Submissions
            },
            runs,
        })
    }
}

/// GPU time of whole runs: every maximal range of GPU steps recorded in one compute pass with
/// a timestamp at its start and end (what a frame pays, without the per-pass overhead that
/// per-step timing adds), summed over the ranges; CPU steps run in between and are not counted.
/// `None` without timestamp support.
#[derive(Clone, Debug, PartialEq)]
pub struct RunProfile {
    /// Median over the measured runs of the summed GPU time of the ranges.
    pub gpu: Duration,
    /// The ranges of GPU steps (each one compute pass).
    pub ranges: Vec<std::ops::Range<usize>>,
    /// Measured runs (after warm-up).
    pub runs: usize,
}

impl GpuModel {
    /// Runs the model `warmup + runs` times with each maximal range of GPU steps in one
    /// timestamped compute pass and returns the median summed GPU time (blocking: for
    /// benchmarks); `Ok(None)` when the device has no timestamp queries.
    pub fn profile_runs(
        &self,
        inputs: &[&[f32]],
        warmup: usize,
        runs: usize,
    ) -> Result<Option<RunProfile>, GpuError> {
        if !self.ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY) {
            return Ok(None);
        }
        let ranges = self.gpu_ranges();
        let device = &self.ctx.device;
        let count = 2 * ranges.len().max(1) as u32;
        let (set, resolve, staging) = timestamp_buffers(device, count, "heimdall run timestamps");
        let period = f64::from(self.ctx.queue.get_timestamp_period());
        let mut samples = Vec::with_capacity(runs);
        for run in 0..warmup + runs {
            for (i, x) in inputs.iter().enumerate() {
                self.set_input(i, x)?;
            }
            let ticks = self.timed_run(&ranges, (&set, &resolve, &staging), false)?;
            if run >= warmup {
                samples.push(Duration::from_nanos((ticks as f64 * period) as u64));
            }
        }
        Ok(Some(RunProfile {
            gpu: median(samples),
            ranges,
            runs,
        }))
    }

    /// One run of `inputs` with each maximal range of GPU steps in one timestamped compute pass
    /// (the convolution cache's prologue included), its outputs read back: the outputs and the
    /// run's GPU time (`None` without timestamp queries: then it is a plain [`GpuModel::run`]).
    /// Blocking: for benchmarks.
    pub fn run_profiled(
        &self,
        inputs: &[&[f32]],
    ) -> Result<(Vec<Vec<f32>>, Option<Duration>), GpuError> {
        if !self.ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY) {
            return Ok((self.run(inputs)?, None));
        }
        for (i, x) in inputs.iter().enumerate() {
            self.set_input(i, x)?;
        }
        let ranges = self.gpu_ranges();
        let count = 2 * ranges.len().max(1) as u32;
        let (set, resolve, staging) =
            timestamp_buffers(&self.ctx.device, count, "heimdall run timestamps");
        let ticks = self.timed_run(&ranges, (&set, &resolve, &staging), true)?;
        self.request_readback()?;
        self.wait_for(|| self.readback_ready())?;
        let outputs = self
            .take_outputs()?
            .ok_or_else(|| GpuError::Readback("outputs not ready after waiting".into()))?;
        let period = f64::from(self.ctx.queue.get_timestamp_period());
        Ok((
            outputs,
            Some(Duration::from_nanos((ticks as f64 * period) as u64)),
        ))
    }

    /// Measures what the convolution cache costs and saves on `inputs`: the median GPU time of
    /// plain runs, of cached runs that recompute everything (the worst case: prologue and
    /// listed dispatches, nothing skipped) and of cached runs that reuse everything (the same
    /// input again), interleaved. What [`crate::conv_cache::CacheCalibration::policy`] turns into
    /// the automatic switch's break-even hit rate. `None` without a cache or timestamp queries.
    /// Leaves the cache active and invalidated.
    pub fn calibrate_conv_cache(
        &self,
        inputs: &[&[f32]],
        warmup: usize,
        runs: usize,
    ) -> Result<Option<crate::conv_cache::CacheCalibration>, GpuError> {
        if self.conv_cache().is_none()
            || !self.ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY)
        {
            return Ok(None);
        }
        let mut samples: [Vec<f64>; 3] = Default::default();
        if self.placement.iter().all(|p| *p == Placement::Gpu) {
            samples = self.calibration_runs_pipelined(inputs, warmup, runs)?;
        } else {
            for run in 0..warmup + runs {
                // Plain; cached and full; cached again on the same input: nothing changed.
                for (k, cached) in [false, true, true].into_iter().enumerate() {
                    self.set_conv_cache_active(cached);
                    if k == 1 {
                        self.invalidate_conv_cache();
                    }
                    let (_, t) = self.run_profiled(inputs)?;
                    if run >= warmup {
                        samples[k].push(t.map_or(0.0, |t| t.as_secs_f64() * 1e3));
                    }
                }
            }
        }
        self.set_conv_cache_active(true);
        self.invalidate_conv_cache();
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(0.0)
        };
        let [mut p, mut f, mut h] = samples;
        let c = crate::conv_cache::CacheCalibration {
            plain_ms: median(&mut p),
            full_ms: median(&mut f),
            hit_ms: median(&mut h),
        };
        if c.plain_ms <= 0.0 {
            return Ok(None);
        }
        if let Some(cache) = self.conv_cache_handle() {
            cache.set_calibration(c);
        }
        Ok(Some(c))
    }

    /// Runs the model once on the inputs in place, each range in a timestamped pass (CPU steps
    /// between them run blocking), optionally encoding the outputs' readback copies after the
    /// last pass; waits for the timestamps and returns the summed ticks.
    fn timed_run(
        &self,
        ranges: &[std::ops::Range<usize>],
        buffers: (&wgpu::QuerySet, &wgpu::Buffer, &wgpu::Buffer),
        readback: bool,
    ) -> Result<u64, GpuError> {
        self.submit_timed_run(ranges, buffers, readback)?;
        let staging = buffers.2;
        self.wait_for_maps(std::slice::from_ref(staging))?;
        let total = range_ticks(staging, ranges.len());
        staging.unmap();
        Ok(total)
    }
}

/// The timestamps in a mapped staging buffer (8 bytes each).
pub(crate) fn ticks_of(staging: &wgpu::Buffer) -> Vec<u64> {
    let view = staging.get_mapped_range(..);
    view.chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
        .collect()
}

/// The summed ticks of `ranges` begin/end pairs in a mapped staging buffer.
fn range_ticks(staging: &wgpu::Buffer, ranges: usize) -> u64 {
    let ticks = ticks_of(staging);
    (0..ranges)
        .map(|k| ticks[2 * k + 1].saturating_sub(ticks[2 * k]))
        .sum()
}
