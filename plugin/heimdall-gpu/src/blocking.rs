//! Blocking runs of a compiled model (tests, the CLI and benchmarks): submit, poll the device
//! until the outputs are mapped, take them. The Bevy plugin never blocks: it encodes ranges into
//! its own encoder and polls for readbacks ([`crate::GpuModel::encode`]).

use std::ops::Range;
use std::time::{Duration, Instant};

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

    /// Waits for everything submitted so far ([`crate::GpuContext::wait_idle`]).
    pub(crate) fn wait(&self) -> Result<(), GpuError> {
        self.ctx.wait_idle()
    }

    /// Polls until `ready()` holds ([`crate::GpuContext::wait_until`]).
    pub(crate) fn wait_for(&self, ready: impl Fn() -> bool) -> Result<(), GpuError> {
        self.ctx.wait_until(ready)
    }

    pub(crate) fn submit_gpu(&self, steps: Range<usize>) -> Result<(), GpuError> {
        if steps.is_empty() {
            return Ok(());
        }
        let mut encoder = self.encoder("heimdall run");
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
        let cpu = self.cpu_steps();
        cpu.encode_inputs(i, &mut encoder)?;
        self.ctx.queue.submit([encoder.finish()]);
        cpu.request_inputs(i)?;
        self.wait_for(|| cpu.is_ready(i))?;
        if cpu.run(i)? {
            Ok(())
        } else {
            Err(GpuError::Readback(format!(
                "inputs of CPU step {i} not ready after waiting"
            )))
        }
    }

    /// Like [`GpuModel::run`], each range recorded as compute passes of its own; CPU steps
    /// inside a range run in place (the GPU work before them is submitted, then download, wait,
    /// CPU, upload). The first steps are submitted early so that the GPU starts while the rest
    /// are recorded (`HEIMDALL_EARLY_SUBMIT`, 8 steps by default); the readback copies go with the last steps.
    pub fn run_ranges(
        &self,
        inputs: &[&[f32]],
        ranges: &[Range<usize>],
    ) -> Result<Vec<Vec<f32>>, GpuError> {
        self.run_ranges_timed(inputs, ranges, &mut WallParts::default())
    }

    /// [`GpuModel::run`] with its wall time split into its parts (benchmarks: `heimdall bench`
    /// prints them).
    pub fn run_timed(&self, inputs: &[&[f32]]) -> Result<(Vec<Vec<f32>>, WallParts), GpuError> {
        let mut parts = WallParts::default();
        let whole = 0..self.num_steps();
        let outputs = self.run_ranges_timed(inputs, std::slice::from_ref(&whole), &mut parts)?;
        Ok((outputs, parts))
    }

    fn run_ranges_timed(
        &self,
        inputs: &[&[f32]],
        ranges: &[Range<usize>],
        parts: &mut WallParts,
    ) -> Result<Vec<Vec<f32>>, GpuError> {
        let start = Instant::now();
        let expected = self.input_shapes().len();
        if inputs.len() != expected {
            return Err(GpuError::Input {
                index: inputs.len(),
                expected,
                got: inputs.len(),
            });
        }
        // Every length is checked before anything is written: a refused call stages nothing
        // that a later submission would pack over a preprocessed input.
        for (i, (x, shape)) in inputs.iter().zip(self.input_shapes()).enumerate() {
            let n: usize = shape.iter().product();
            if x.len() != n {
                return Err(GpuError::Input {
                    index: i,
                    expected: n,
                    got: x.len(),
                });
            }
        }
        for (i, x) in inputs.iter().enumerate() {
            // Packed by the run's first submission (`run_ranges_preset_timed`).
            self.write_input(i, x)?;
        }
        parts.upload = start.elapsed();
        self.run_ranges_preset_timed(ranges, parts)
    }

    /// Like [`GpuModel::run_ranges`] on the inputs already in place (set by
    /// [`GpuModel::set_input`] or written by a preprocessing kernel submitted before).
    pub fn run_ranges_preset(&self, ranges: &[Range<usize>]) -> Result<Vec<Vec<f32>>, GpuError> {
        self.run_ranges_preset_timed(ranges, &mut WallParts::default())
    }

    fn run_ranges_preset_timed(
        &self,
        ranges: &[Range<usize>],
        parts: &mut WallParts,
    ) -> Result<Vec<Vec<f32>>, GpuError> {
        for r in ranges {
            if r.start > r.end || r.end > self.num_steps() {
                return Err(GpuError::Range {
                    start: r.start,
                    end: r.end,
                    message: format!("the model has {} steps", self.num_steps()),
                });
            }
        }
        let t = Instant::now();
        let mut encoder = self.encoder("heimdall run");
        self.encode_staged_inputs(&mut encoder);
        for r in ranges {
            let mut gpu_start = r.start;
            for i in r.clone() {
                if self.placement[i] == Placement::Cpu {
                    self.encode(&mut encoder, gpu_start..i)?;
                    self.ctx.queue.submit([encoder.finish()]);
                    encoder = self.encoder("heimdall run");
                    gpu_start = i + 1;
                    self.run_cpu_step_blocking(i)?;
                }
            }
            let mut chunk = early_submit_steps();
            while chunk > 0 && r.end - gpu_start > chunk {
                // Let the GPU start on the first steps while the rest are recorded.
                self.encode(&mut encoder, gpu_start..gpu_start + chunk)?;
                self.ctx.queue.submit([encoder.finish()]);
                encoder = self.encoder("heimdall run");
                gpu_start += chunk;
                chunk *= 2;
            }
            self.encode(&mut encoder, gpu_start..r.end)?;
        }
        self.encode_readback(&mut encoder)?;
        let buffer = encoder.finish();
        let t = lap(&mut parts.encode, t);
        self.ctx.queue.submit([buffer]);
        self.request_readback()?;
        let t = lap(&mut parts.submit, t);
        self.wait_for(|| self.readback_ready())?;
        let t = lap(&mut parts.wait, t);
        let outputs = self
            .take_outputs()?
            .ok_or_else(|| GpuError::Readback("outputs not ready after waiting".into()));
        lap(&mut parts.take, t);
        outputs
    }

    fn encoder(&self, label: &str) -> wgpu::CommandEncoder {
        self.ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) })
    }
}

/// Where the host wall time of one blocking run went ([`GpuModel::run_timed`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WallParts {
    /// Packing the inputs into their storage precision and handing them to `write_buffer`.
    pub upload: Duration,
    /// Recording the compute passes and the readback copies (CPU steps, if any, run here).
    pub encode: Duration,
    /// `Queue::submit` (wgpu's tracking, the input copies, the driver's submission) and the
    /// `map_async` requests.
    pub submit: Duration,
    /// Waiting for the GPU to finish and the staging buffers to map.
    pub wait: Duration,
    /// Converting the mapped outputs to NHWC `f32`.
    pub take: Duration,
}

impl WallParts {
    /// The whole call.
    pub fn total(&self) -> Duration {
        self.upload + self.encode + self.submit + self.wait + self.take
    }
}

/// Adds the time since `since` to `part` and returns now.
fn lap(part: &mut Duration, since: Instant) -> Instant {
    let now = Instant::now();
    *part += now - since;
    now
}

/// How many steps a blocking run records before its first submission: the GPU starts on them
/// while the host records the rest, in submissions of twice the size each (so a model of a
/// few hundred steps makes about six; recording costs 2–4 µs a step on the H100 machine's CPU,
/// about what the GPU needs to run one, so after the first few the GPU never waits for the
/// host). On that machine the first submission of 8 steps took 0.2–0.9 ms off the wall time of
/// the models measured, against one submission at the end (docs/gpu.md, "Wall time").
/// `HEIMDALL_EARLY_SUBMIT=N` sets it (0: one submission).
fn early_submit_steps() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *N.get_or_init(|| {
        std::env::var("HEIMDALL_EARLY_SUBMIT")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(8)
    })
}
