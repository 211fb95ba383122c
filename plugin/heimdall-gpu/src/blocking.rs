//! Blocking runs of a compiled model (tests, the CLI and benchmarks): submit, poll the device
//! until the outputs are mapped, take them. The Bevy plugin never blocks: it encodes ranges into
//! its own encoder and polls for readbacks ([`crate::GpuModel::encode`]).

use std::ops::Range;
use std::time::Duration;

use crate::error::GpuError;
use crate::model::GpuModel;
use crate::plan::Placement;

impl GpuModel {
    /// Runs the whole model on `inputs` and waits for the outputs (tests and the CLI only: it
    /// blocks on `device.poll`).
    pub fn run(&self, inputs: &[&[f32]]) -> Result<Vec<Vec<f32>>, GpuError> {
        let whole = 0..self.num_steps();
        self.run_ranges(inputs, std::slice::from_ref(&whole))
    }

    pub(crate) fn wait(&self) -> Result<(), GpuError> {
        self.ctx
            .device
            .poll(wgpu::PollType::Wait {
                submission_index: None,
                timeout: None,
            })
            .map(|_| ())
            .map_err(|e| GpuError::Wgpu(e.to_string()))
    }

    /// Polls until `ready()` holds. One `poll(Wait)` is not enough when several threads poll
    /// the same device: another thread's poll may be the one running our `map_async` callback,
    /// and ours can return before that callback has finished.
    pub(crate) fn wait_for(&self, ready: impl Fn() -> bool) -> Result<(), GpuError> {
        let start = std::time::Instant::now();
        loop {
            self.wait()?;
            if ready() {
                return Ok(());
            }
            if start.elapsed() > Duration::from_secs(60) {
                return Err(GpuError::Readback("no result after 60 s of waiting".into()));
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    pub(crate) fn submit_gpu(&self, steps: Range<usize>) -> Result<(), GpuError> {
        if steps.is_empty() {
            return Ok(());
        }
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("heimdall run"),
            });
        self.encode(&mut encoder, steps)?;
        self.ctx.queue.submit([encoder.finish()]);
        Ok(())
    }

    /// Runs CPU step `i` now: downloads its inputs, waits, computes, uploads.
    pub(crate) fn run_cpu_step_blocking(&self, i: usize) -> Result<(), GpuError> {
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("heimdall CPU step inputs"),
            });
        self.encode_cpu_step_inputs(i, &mut encoder)?;
        self.ctx.queue.submit([encoder.finish()]);
        self.request_cpu_step_inputs(i)?;
        self.wait_for(|| self.cpu_step_ready(i))?;
        if self.run_cpu_step(i)? {
            Ok(())
        } else {
            Err(GpuError::Readback(format!(
                "inputs of CPU step {i} not ready after waiting"
            )))
        }
    }

    /// Like [`GpuModel::run`], encoding and submitting each range separately; CPU steps inside
    /// a range run in place (download, wait, CPU, upload).
    pub fn run_ranges(
        &self,
        inputs: &[&[f32]],
        ranges: &[Range<usize>],
    ) -> Result<Vec<Vec<f32>>, GpuError> {
        let expected = self.input_shapes().len();
        if inputs.len() != expected {
            return Err(GpuError::Input {
                index: inputs.len(),
                expected,
                got: inputs.len(),
            });
        }
        for (i, x) in inputs.iter().enumerate() {
            self.set_input(i, x)?;
        }
        self.run_ranges_preset(ranges)
    }

    /// Like [`GpuModel::run_ranges`] on the inputs already in place (set by
    /// [`GpuModel::set_input`] or written by a preprocessing kernel submitted before).
    pub fn run_ranges_preset(&self, ranges: &[Range<usize>]) -> Result<Vec<Vec<f32>>, GpuError> {
        for r in ranges {
            if r.start > r.end || r.end > self.num_steps() {
                return Err(GpuError::Range {
                    start: r.start,
                    end: r.end,
                    message: format!("the model has {} steps", self.num_steps()),
                });
            }
            let mut gpu_start = r.start;
            for i in r.clone() {
                if self.placement[i] == Placement::Cpu {
                    self.submit_gpu(gpu_start..i)?;
                    gpu_start = i + 1;
                    self.run_cpu_step_blocking(i)?;
                }
            }
            self.submit_gpu(gpu_start..r.end)?;
        }
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("heimdall readback"),
            });
        self.encode_readback(&mut encoder)?;
        self.ctx.queue.submit([encoder.finish()]);
        self.request_readback()?;
        self.wait_for(|| self.readback_ready())?;
        self.take_outputs()?
            .ok_or_else(|| GpuError::Readback("outputs not ready after waiting".into()))
    }
}
