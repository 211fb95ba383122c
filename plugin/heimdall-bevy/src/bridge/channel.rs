//! The channel from the render world and the CPU workers to the main world, the way Bevy's own
//! `gpu_readback` does it: they send [`RenderMessage`]s through the [`Outbox`]; once per update
//! the main world drains the [`Inbox`] (`results/receive.rs`). DNNs that fail away from the
//! render world come back to it through [`FailedDnns`].

use std::sync::Arc;

use bevy::prelude::*;
use crossbeam_channel::{Receiver, Sender, TrySendError};
use heimdall_ir::conv_cache::CacheCounts;
use heimdall_vision::image::Crop;

use super::phases::FramePhases;
use crate::decoder::{Decoded, DecoderHandle};
use crate::dnn::{Backend, DnnError, DnnPlacement, DnnStatus};
use crate::faults::{HeimdallFaults, RESULTS_QUEUE};
use crate::guard::GuardStatus;
use crate::results::{HeimdallBackend, RecordedRun};
use crate::stats::FrameRecord;
use crate::stats::stages::StageTimes;

/// A finished inference on its way to the main world.
pub(crate) struct FinishedInference {
    pub dnn: Entity,
    pub frame_index: u64,
    pub capture_ms: f64,
    pub tensors: Arc<Vec<Vec<f32>>>,
    pub backend: Backend,
    pub crop: Crop,
    /// The decoder and what it made of the outputs.
    pub decoded: Option<(DecoderHandle, Decoded)>,
    /// What the convolution cache did in this run (GPU runs with the cache on).
    pub cache: Option<ConvCacheRun>,
    /// When it passed each stage on its way here.
    pub stages: StageTimes,
    /// Where the CPU took over the GPU's activations (an offloaded inference), if it did.
    pub resumed_from_step: Option<usize>,
}

/// The convolution cache's work in one GPU run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConvCacheRun {
    /// The run's counts.
    pub counts: CacheCounts,
    /// How many ops the model caches.
    pub cached_ops: usize,
    /// GPU time the run saved by the calibration's model (negative: it cost), ms.
    pub saved_ms: Option<f64>,
}

/// What the render world and the workers tell the main world.
pub(crate) enum RenderMessage {
    /// A DNN's status changed.
    Status(Entity, DnnStatus),
    /// Where the coordinator runs a DNN, and at what rate, changed.
    Placement(Entity, DnnPlacement),
    /// An inference finished (and was decoded).
    Result(Box<FinishedInference>),
    /// What the GPU did in a frame.
    Frame(FrameRecord),
    /// The render world submitted and presented a frame at this instant; the render thread's
    /// phases since the previous one (none for the first frame).
    Presented(std::time::Instant, Option<FramePhases>),
    /// The coordinator's Chrome trace, as asked by [`HeimdallTrace::request`](crate::results::HeimdallTrace::request).
    Trace(String),
    /// The backend (at start, and after a new render device).
    Backend(HeimdallBackend),
    /// A DNN instance's index (as in [`FrameRecord::chunks`]) and model name.
    Instance(u32, String),
    /// What became of a DNN's convolution cache when its model compiled for the GPU (kept,
    /// dropped and why; `ConvCache::Off` sends none).
    ConvCacheDecision {
        /// The DNN.
        dnn: Entity,
        /// One line: kept, dropped or off, and why.
        decision: String,
        /// How many ops the compiled model caches (0 when dropped).
        cached_ops: usize,
    },
    /// Where a DNN's accuracy guard stands (see [`crate::guard`]).
    Guard(Entity, GuardStatus),
    /// The coordinator completed an inference of `dnn` `latency_ms` after admitting it (to its
    /// last op: the latency the simulator measures).
    Scheduled {
        /// The DNN.
        dnn: Entity,
        /// Admission → last op, ms.
        latency_ms: f64,
    },
    /// While recording: a GPU inference of `dnn` had its outputs read `ms` after its
    /// submission's GPU work ended (`render/recording/log.rs`).
    Readback {
        /// The DNN.
        dnn: Entity,
        /// Submission's GPU end → outputs read, ms.
        ms: f64,
    },
    /// A CPU run of `dnn`'s model (an inference, its rest, or a piece) ended: where its time
    /// went, as its worker measured it.
    CpuRun {
        /// The DNN.
        dnn: Entity,
        /// The run's times.
        times: crate::stats::CpuRunTimes,
    },
    /// The run's recording, as asked by [`HeimdallRecording::request`](crate::results::HeimdallRecording::request).
    Recording(Box<RecordedRun>),
    /// A DNN runs on the CPU backend because the GPU cannot run its kernels: why.
    CpuFallback(Entity, String),
}

/// The render world's and the workers' end of the channel (bounded: [`RESULTS_QUEUE`]
/// messages not drained yet; beyond, new ones are dropped and counted), and of the render
/// world's list of failed DNNs.
#[derive(Resource, Clone)]
pub(crate) struct Outbox {
    tx: Sender<RenderMessage>,
    failed: Sender<(Entity, DnnError)>,
    faults: HeimdallFaults,
}

/// DNNs that failed away from the render world (a panic on a decode or worker thread, or in the
/// main world's delivery): the render world stops them (render world).
#[derive(Resource)]
pub(crate) struct FailedDnns(pub Receiver<(Entity, DnnError)>);

impl Outbox {
    /// The channel to the main world (`tx`, bounded), the render world's list of failed DNNs,
    /// and the counters of the faults.
    pub fn new(tx: Sender<RenderMessage>, faults: HeimdallFaults) -> (Self, FailedDnns) {
        let (failed, failed_rx) = crossbeam_channel::bounded(RESULTS_QUEUE);
        (Outbox { tx, failed, faults }, FailedDnns(failed_rx))
    }

    pub fn send(&self, m: RenderMessage) {
        match self.tx.try_send(m) {
            Ok(()) => self.faults.queues().results.depth(self.tx.len()),
            Err(TrySendError::Full(_)) => self.faults.queues().results.drop_one(),
            // The main world only goes away when the app exits.
            Err(TrySendError::Disconnected(_)) => {}
        }
    }

    /// `dnn` cannot go on (until [`crate::faults::RestartDnn`]): its status becomes
    /// `Failed(error)` (a `DnnFailed` event in the main world) and the render world stops it.
    pub fn fail(&self, dnn: Entity, error: DnnError) {
        error!("heimdall: DNN {dnn}: {error}");
        if let DnnError::Panicked(_) = error {
            self.faults.panicked();
        }
        let _ = self.failed.try_send((dnn, error.clone()));
        self.send(RenderMessage::Status(dnn, DnnStatus::Failed(error)));
    }

    /// A DNN's CPU work ended with `err`: a job that panicked ([`crate::faults::PANICKED`])
    /// fails the DNN ([`Outbox::fail`]), any other error is logged (the DNN is idle again).
    pub fn cpu_work_error(&self, name: &str, dnn: Entity, err: &str) {
        match err.strip_prefix(crate::faults::PANICKED) {
            Some(message) => self.fail(dnn, crate::faults::panicked("its CPU work", message)),
            None => error!("heimdall: {name}: CPU work: {err}"),
        }
    }

    /// The run's fault counters.
    pub fn faults(&self) -> &HeimdallFaults {
        &self.faults
    }
}

/// The main world's end of the channel.
#[derive(Resource)]
pub(crate) struct Inbox(pub Receiver<RenderMessage>);
