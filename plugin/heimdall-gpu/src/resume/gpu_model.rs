//! The resume API on [`GpuModel`]: which boundaries a run can move to the CPU at, and the
//! download of the state there (the types are in [`super`]).

use heimdall_ir::TensorId;

use super::{NotResumable, ResumeDownload, ResumeError, ResumeState, ResumeTable};
use crate::error::GpuError;
use crate::model::GpuModel;
use crate::readback::{IoTensor, Readback};

impl GpuModel {
    /// The tensors a CPU run of steps `step..` needs from the GPU at boundary `step` (ops
    /// `0..step` ran on the GPU; 0 to [`GpuModel::num_steps`]), in tensor order, or why the
    /// run cannot move there (see [`crate::resume`]). For the memory plan of the current run
    /// (with a convolution cache, the plan changes as the cache switches on or off).
    pub fn resume_tensors(&self, step: usize) -> Result<Vec<TensorId>, NotResumable> {
        let live = self.resume_table().at(step)?;
        Ok(live.iter().map(|l| l.id).collect())
    }

    /// Whether the run can move to the CPU at boundary `step` ([`GpuModel::resume_tensors`]);
    /// a table lookup.
    pub fn is_resumable(&self, step: usize) -> bool {
        self.resume_table().at(step).is_ok()
    }

    /// Every boundary the run can move to the CPU at, ascending (0 and the last, the outputs,
    /// always among them).
    pub fn resumable_steps(&self) -> Vec<usize> {
        (0..=self.num_steps())
            .filter(|&s| self.is_resumable(s))
            .collect()
    }

    /// Bytes the download at boundary `step` copies (its cost to a scheduler).
    pub fn resume_bytes(&self, step: usize) -> Result<u64, NotResumable> {
        let live = self.resume_table().at(step)?;
        Ok(live.iter().map(|l| l.at.bytes()).sum())
    }

    /// Records the download of the state at boundary `step` (copies of each tensor
    /// [`GpuModel::resume_tensors`] names into staging buffers of its own) into `encoder`,
    /// after the steps before it. No other side effect: the model may go on running.
    pub fn encode_resume_download(
        &self,
        step: usize,
        encoder: &mut wgpu::CommandEncoder,
    ) -> Result<ResumeDownload, ResumeError> {
        let (table, slots) = self.resume_plan();
        let live = table.at(step)?.to_vec();
        let staged: Vec<IoTensor> = (live.iter())
            .filter(|l| l.at.bytes() > 0)
            .map(|l| l.at.clone())
            .collect();
        let readback = Readback::new(&self.ctx.device, &staged, &[], None);
        let sources: Vec<(&wgpu::Buffer, u64)> =
            staged.iter().map(|t| (&slots[t.slot], t.offset)).collect();
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
    pub fn download_resume_state(&self, step: usize) -> Result<ResumeState, ResumeError> {
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("heimdall resume download"),
            });
        let download = self.encode_resume_download(step, &mut encoder)?;
        self.ctx.queue.submit([encoder.finish()]);
        download.request()?;
        self.wait_for(|| download.is_ready())?;
        let state = download.take()?.ok_or_else(|| {
            GpuError::Readback(format!("state at step {step} not ready after waiting"))
        })?;
        Ok(state)
    }

    fn resume_table(&self) -> &ResumeTable {
        self.resume_plan().0
    }
}
