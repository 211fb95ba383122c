//! Timestamped recording, the layer under the profiles ([`crate::profile`]) and the burst
//! submissions ([`crate::pipelined`]): steps in compute passes with timestamp writes, the model's
//! maximal GPU ranges, and one whole run submitted with a timestamp pair per range.

use crate::error::GpuError;
use crate::model::GpuModel;
use crate::plan::Placement;

impl GpuModel {
    /// Records `steps` in one compute pass with timestamps `2 * slot` and `2 * slot + 1` of
    /// `set` (the convolution cache's run set up and its prologue recorded where the range
    /// starts the cache's steps).
    pub(crate) fn record_timed_range(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        set: &wgpu::QuerySet,
        slot: usize,
        steps: std::ops::Range<usize>,
        label: &str,
    ) {
        let cache = self.cache_starting_in(&steps);
        if let Some(c) = cache {
            c.begin_run(&self.ctx.queue, encoder);
        }
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(label),
            timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                query_set: set,
                beginning_of_pass_write_index: Some(2 * slot as u32),
                end_of_pass_write_index: Some(2 * slot as u32 + 1),
            }),
        });
        if let Some(c) = cache {
            c.record(&mut pass);
        }
        for i in steps {
            self.record_step(&mut pass, i);
        }
    }

    /// Step `i` alone in a timestamped pass, in slots `2i` and `2i + 1` of `set`.
    pub(crate) fn record_timed_step(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        set: &wgpu::QuerySet,
        i: usize,
    ) {
        self.record_timed_range(encoder, set, i, i..i + 1, self.step_name(i));
    }

    /// The maximal ranges of GPU steps.
    pub(crate) fn gpu_ranges(&self) -> Vec<std::ops::Range<usize>> {
        let n = self.num_steps();
        let mut ranges = Vec::new();
        let mut start = 0;
        for i in 0..=n {
            if i == n || self.placement[i] == Placement::Cpu {
                if start < i {
                    ranges.push(start..i);
                }
                start = i + 1;
            }
        }
        ranges
    }

    /// A timed run ([`GpuModel::profile_runs`]) up to its submission: the timestamps land in `staging` once the
    /// GPU has run it (CPU steps between the ranges still run blocking).
    pub(crate) fn submit_timed_run(
        &self,
        ranges: &[std::ops::Range<usize>],
        (set, resolve, staging): (&wgpu::QuerySet, &wgpu::Buffer, &wgpu::Buffer),
        readback: bool,
    ) -> Result<(), GpuError> {
        let device = &self.ctx.device;
        let n = self.num_steps();
        let count = 2 * ranges.len().max(1) as u32;
        let size = 8 * u64::from(count);
        let mut encoder = device.create_command_encoder(&Default::default());
        let mut next = 0;
        for (k, r) in ranges.iter().enumerate() {
            // CPU steps before this range run now (their inputs come from earlier ranges).
            for i in next..r.start {
                self.ctx.queue.submit([encoder.finish()]);
                self.run_cpu_step_blocking(i)?;
                encoder = device.create_command_encoder(&Default::default());
            }
            self.record_timed_range(&mut encoder, set, k, r.clone(), "heimdall run");
            next = r.end;
        }
        for i in next..n {
            self.ctx.queue.submit([encoder.finish()]);
            self.run_cpu_step_blocking(i)?;
            encoder = device.create_command_encoder(&Default::default());
        }
        if ranges.is_empty() {
            // Every query must be written before it is resolved.
            encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("heimdall run (no GPU steps)"),
                timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                    query_set: set,
                    beginning_of_pass_write_index: Some(0),
                    end_of_pass_write_index: Some(1),
                }),
            });
        }
        if readback {
            self.encode_readback(&mut encoder)?;
        }
        encoder.resolve_query_set(set, 0..count, resolve, 0);
        encoder.copy_buffer_to_buffer(resolve, 0, staging, 0, size);
        self.ctx.queue.submit([encoder.finish()]);
        Ok(())
    }
}
