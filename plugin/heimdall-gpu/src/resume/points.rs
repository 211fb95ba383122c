//! [`ResumePoints`]: which boundaries a run of a [`GpuModel`](crate::GpuModel) can move to the
//! CPU at, and the download of the state there (the types are in [`super`]).

use heimdall_ir::TensorId;

use super::{NotResumable, ResumeDownload, ResumeError, ResumeState, ResumeTable};
use crate::context::GpuContext;
use crate::error::GpuError;
use crate::readback::{IoTensor, Readback};

/// The resume points of a compiled model's memory plan, as
/// [`GpuModel::resume`](crate::GpuModel::resume) returns them for the plan of the current run
/// (with a convolution cache, the plan changes as the cache switches on or off: take a new one
/// after switching).
pub struct ResumePoints<'a> {
    pub(crate) table: &'a ResumeTable,
    pub(crate) slots: &'a [wgpu::Buffer],
    pub(crate) ctx: &'a GpuContext,
    pub(crate) num_steps: usize,
}

impl ResumePoints<'_> {
    /// The tensors a CPU run of steps `step..` needs from the GPU at boundary `step` (ops
    /// `0..step` ran on the GPU; 0 to [`GpuModel::num_steps`](crate::GpuModel::num_steps)), in
    /// tensor order, or why the run cannot move there (see [`crate::resume`]).
    pub fn tensors(&self, step: usize) -> Result<Vec<TensorId>, NotResumable> {
        let live = self.table.at(step)?;
        Ok(live.iter().map(|l| l.id).collect())
    }

    /// Whether the run can move to the CPU at boundary `step` ([`ResumePoints::tensors`]);
    /// a table lookup.
    pub fn is_resumable(&self, step: usize) -> bool {
        self.table.at(step).is_ok()
    }

    /// Every boundary the run can move to the CPU at, ascending (0 and the last, the outputs,
    /// always among them).
    pub fn steps(&self) -> Vec<usize> {
        (0..=self.num_steps)
            .filter(|&s| self.is_resumable(s))
            .collect()
    }

    /// Bytes the download at boundary `step` copies (its cost to a scheduler).
    pub fn bytes(&self, step: usize) -> Result<u64, NotResumable> {
        let live = self.table.at(step)?;
        Ok(live.iter().map(|l| l.at.bytes()).sum())
    }

    /// Records the download of the state at boundary `step` (copies of each tensor
    /// [`ResumePoints::tensors`] names into staging buffers of its own) into `encoder`,
    /// after the steps before it. No other side effect: the model may go on running.
    pub fn encode_download(
        &self,
        step: usize,
        encoder: &mut wgpu::CommandEncoder,
    ) -> Result<ResumeDownload, ResumeError> {
        let live = self.table.at(step)?.to_vec();
        let staged: Vec<IoTensor> = (live.iter())
            .filter(|l| l.at.bytes() > 0)
            .map(|l| l.at.clone())
            .collect();
        let readback = Readback::new(&self.ctx.device, &staged, &[], None);
        let sources: Vec<(&wgpu::Buffer, u64)> = (staged.iter())
            .map(|t| (&self.slots[t.slot], t.offset))
            .collect();
        readback.encode(encoder, &sources, None)?;
        Ok(ResumeDownload {
            step,
            live,
            staged,
            readback,
        })
    }

    /// Downloads the state at boundary `step` now and waits for it (tests and the CLI: it
    /// blocks on the device). The steps before `step` must have been submitted.
    pub fn download(&self, step: usize) -> Result<ResumeState, ResumeError> {
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("heimdall resume download"),
            });
        let download = self.encode_download(step, &mut encoder)?;
        self.ctx.queue.submit([encoder.finish()]);
        download.request()?;
        self.ctx.wait_until(|| download.is_ready())?;
        let state = download.take()?.ok_or_else(|| {
            GpuError::Readback(format!("state at step {step} not ready after waiting"))
        })?;
        Ok(state)
    }
}
