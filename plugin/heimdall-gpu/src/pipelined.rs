//! Profiles and calibrations whose runs are submitted in bursts, with one wait for the GPU per
//! burst. Every wait for the GPU also waits for whatever was queued before it: on a device
//! shared with a renderer (Bevy's), the frames submitted meanwhile. A model's start-up (its
//! profile, the convolution cache's calibration) made one wait per run, 7 and 72 of them, each
//! behind up to a frame or two of the app's GPU work. Submitted all at once they make one each,
//! but the burst then delays the frames queued behind it (on an H100 with 15 models at 90 fps,
//! 21 late start-up frames instead of 1-3). So the first run goes alone, and the rest go in
//! bursts of at most [`GpuContext::background_burst_ms`] of GPU time, by the longest run of the
//! burst before. Each run stays its own submission, so the inputs and the convolution cache's
//! per-run state written before it (`Queue::write_buffer`) are the ones it reads. Models with a
//! CPU step keep the run-by-run path (a CPU step waits for its inputs anyway).
//!
//! [`GpuContext::background_burst_ms`]: crate::GpuContext::background_burst_ms

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use crate::error::GpuError;
use crate::model::GpuModel;
use crate::profile::{StepProfile, TimingSource, median, ticks_of, timestamp_buffers};

/// How many runs the next burst takes: `left` at most, at least 1, and no more than fit in
/// `budget_ms` at `run_ms` each (1 while no run has been timed).
pub(crate) fn burst_len(run_ms: Option<f64>, budget_ms: f64, left: usize) -> usize {
    let fit = match run_ms {
        None => 1,
        Some(t) if t > 0.0 => {
            let k = (budget_ms / t).floor();
            if k.is_finite() && k < left as f64 {
                k as usize
            } else {
                left
            }
        }
        Some(_) => left,
    };
    fit.clamp(1, left.max(1))
}

impl GpuModel {
    /// Submits `count` runs (`submit(j)` records and submits run `j`, returning its timestamp
    /// staging buffer) in bursts ([`burst_len`] by the context's budget and `run_ms`, a run's
    /// GPU time from its ticks), waiting once per burst; returns each run's ticks.
    fn in_bursts(
        &self,
        count: usize,
        mut submit: impl FnMut(usize) -> Result<wgpu::Buffer, GpuError>,
        run_ms: impl Fn(&[u64]) -> f64,
    ) -> Result<Vec<Vec<u64>>, GpuError> {
        let budget = self.ctx.background_burst_ms;
        let mut ticks = Vec::with_capacity(count);
        let mut last: Option<f64> = None;
        while ticks.len() < count {
            let start = ticks.len();
            let n = burst_len(last, budget, count - start);
            let stagings = (start..start + n)
                .map(&mut submit)
                .collect::<Result<Vec<_>, _>>()?;
            self.wait_for_maps(&stagings)?;
            let mut longest = 0.0f64;
            for staging in &stagings {
                let t = ticks_of(staging);
                staging.unmap();
                longest = longest.max(run_ms(&t));
                ticks.push(t);
            }
            last = Some(longest);
        }
        Ok(ticks)
    }

    /// Maps every staging buffer and waits once until all are mapped.
    pub(crate) fn wait_for_maps(&self, stagings: &[wgpu::Buffer]) -> Result<(), GpuError> {
        // 0 = pending, 1 = mapped, 2 = failed; one flag per buffer.
        let states: Arc<Vec<AtomicU8>> =
            Arc::new((0..stagings.len()).map(|_| AtomicU8::new(0)).collect());
        for (k, staging) in stagings.iter().enumerate() {
            let flags = states.clone();
            staging.map_async(wgpu::MapMode::Read, .., move |r| {
                flags[k].store(if r.is_ok() { 1 } else { 2 }, Ordering::SeqCst);
            });
        }
        self.wait_for(|| states.iter().all(|s| s.load(Ordering::SeqCst) != 0))?;
        if states.iter().any(|s| s.load(Ordering::SeqCst) != 1) {
            return Err(GpuError::Readback("mapping the timestamps failed".into()));
        }
        Ok(())
    }

    /// [`GpuModel::profile`] of a model whose steps all run on the GPU, on a device with
    /// timestamps: its runs submitted in bursts ([`GpuModel::in_bursts`]), each with its own
    /// timestamp slots.
    pub(crate) fn profile_pipelined(
        &self,
        inputs: &[&[f32]],
        warmup: usize,
        runs: usize,
    ) -> Result<StepProfile, GpuError> {
        let n = self.num_steps();
        let device = &self.ctx.device;
        let period = f64::from(self.ctx.queue.get_timestamp_period());
        let step_ns = |t: &[u64], i: usize| t[2 * i + 1].saturating_sub(t[2 * i]) as f64 * period;
        let submit = |_: usize| -> Result<wgpu::Buffer, GpuError> {
            for (i, x) in inputs.iter().enumerate() {
                self.set_input(i, x)?;
            }
            self.invalidate_conv_cache();
            let (set, resolve, staging) =
                timestamp_buffers(device, 2 * n as u32, "heimdall step timestamps");
            let mut encoder = device.create_command_encoder(&Default::default());
            for i in 0..n {
                self.record_timed_step(&mut encoder, &set, i);
            }
            encoder.resolve_query_set(&set, 0..2 * n as u32, &resolve, 0);
            encoder.copy_buffer_to_buffer(&resolve, 0, &staging, 0, 16 * n as u64);
            self.ctx.queue.submit([encoder.finish()]);
            Ok(staging)
        };
        let run_ms = |t: &[u64]| (0..n).map(|i| step_ns(t, i)).sum::<f64>() / 1e6;
        let ticks = self.in_bursts(warmup + runs, submit, run_ms)?;
        let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(runs); n];
        for t in ticks.iter().skip(warmup) {
            for (i, s) in samples.iter_mut().enumerate() {
                s.push(Duration::from_nanos(step_ns(t, i) as u64));
            }
        }
        self.invalidate_conv_cache();
        Ok(StepProfile {
            steps: samples.into_iter().map(median).collect(),
            source: TimingSource::Timestamps,
            runs,
        })
    }

    /// The runs of [`GpuModel::calibrate_conv_cache`] (plain; cached and full; cached on the
    /// same input again, interleaved) submitted in bursts: each kind's measured GPU times, ms.
    /// For a model whose steps all run on the GPU, on a device with timestamps.
    pub(crate) fn calibration_runs_pipelined(
        &self,
        inputs: &[&[f32]],
        warmup: usize,
        runs: usize,
    ) -> Result<[Vec<f64>; 3], GpuError> {
        let ranges = self.gpu_ranges();
        let count = 2 * ranges.len().max(1) as u32;
        let period = f64::from(self.ctx.queue.get_timestamp_period());
        let submit = |j: usize| -> Result<wgpu::Buffer, GpuError> {
            // Plain; cached and full; cached again on the same input: nothing changed.
            let k = j % 3;
            self.set_conv_cache_active(k > 0);
            if k == 1 {
                self.invalidate_conv_cache();
            }
            for (i, x) in inputs.iter().enumerate() {
                self.set_input(i, x)?;
            }
            let (set, resolve, staging) =
                timestamp_buffers(&self.ctx.device, count, "heimdall run timestamps");
            self.submit_timed_run(&ranges, (&set, &resolve, &staging), false)?;
            Ok(staging)
        };
        let run_ms = |t: &[u64]| {
            (0..ranges.len())
                .map(|k| t[2 * k + 1].saturating_sub(t[2 * k]))
                .sum::<u64>() as f64
                * period
                / 1e6
        };
        let ticks = self.in_bursts(3 * (warmup + runs), submit, run_ms)?;
        let mut samples: [Vec<f64>; 3] = Default::default();
        for (j, t) in ticks.iter().enumerate().skip(3 * warmup) {
            samples[j % 3].push(run_ms(t));
        }
        Ok(samples)
    }
}

#[cfg(test)]
mod tests {
    use super::burst_len;

    #[test]
    fn a_burst_holds_what_fits_in_the_budget() {
        // The first run goes alone, to time it.
        assert_eq!(burst_len(None, 1.0, 7), 1);
        assert_eq!(burst_len(None, f64::INFINITY, 7), 1);
        // 0.3 ms runs in 1 ms: 3; 0.5 ms: 2; runs longer than the budget: 1 each.
        assert_eq!(burst_len(Some(0.3), 1.0, 35), 3);
        assert_eq!(burst_len(Some(0.5), 1.0, 35), 2);
        assert_eq!(burst_len(Some(5.0), 1.0, 35), 1);
        // No more than are left; a budget of 0 is one run per wait; unbounded takes the rest.
        assert_eq!(burst_len(Some(0.1), 1.0, 4), 4);
        assert_eq!(burst_len(Some(0.1), 0.0, 4), 1);
        assert_eq!(burst_len(Some(0.1), f64::INFINITY, 6), 6);
        // Runs too short to time (0 ms) take the rest; nothing left is still one (never 0).
        assert_eq!(burst_len(Some(0.0), 1.0, 6), 6);
        assert_eq!(burst_len(Some(0.1), 1.0, 0), 1);
    }
}
