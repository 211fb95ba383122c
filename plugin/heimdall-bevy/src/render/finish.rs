//! The end of an inference, wherever it ran: its outputs are decoded by the DNN's decoder and
//! sent to the main world at once, away from the render world (a decode thread for the GPU's
//! read-back outputs, the worker that computed them for the CPU), so a result never waits for
//! the next render frame.

use std::sync::Arc;
use std::time::Duration;

use bevy::prelude::*;
use heimdall_vision::image::Crop;

use crate::bridge::channel::{ConvCacheRun, FinishedInference, Outbox, RenderMessage};
use crate::camera::FramePins;
use crate::clock::HeimdallClock;
use crate::decoder::{DecodeInput, DecoderHandle};
use crate::dnn::Backend;
use crate::stats::stages::StageTimes;

/// What is needed to finish an inference away from the render world.
#[derive(Clone)]
pub(crate) struct Finish {
    pub dnn: Entity,
    pub clock: HeimdallClock,
    /// When the inference passed each stage so far (the rest is filled in on the way).
    pub stages: StageTimes,
    pub name: String,
    pub frame_index: u64,
    /// Its source's pinned frames.
    pub pins: FramePins,
    pub capture_ms: f64,
    pub crop: Crop,
    pub frame_size: UVec2,
    pub decoder: Option<DecoderHandle>,
    pub shapes: Arc<Vec<Vec<usize>>>,
    pub outbox: Outbox,
    /// The step from which the CPU went on with the GPU's activations, for an offloaded
    /// inference the GPU had started.
    pub resumed_from_step: Option<usize>,
}

impl Finish {
    /// Decodes `outputs` and sends the result to the main world (with the convolution cache's
    /// counts of the run, if it used the cache).
    pub fn send(self, outputs: Vec<Vec<f32>>, backend: Backend, cache: Option<ConvCacheRun>) {
        // The outputs are here: read back (GPU) or computed (CPU) just now.
        let ready_ms = self.clock.now_ms();
        self.send_ready_at(outputs, backend, cache, ready_ms);
    }

    /// As [`Finish::send`], for outputs that were in host memory at `ready_ms` (the plugin's
    /// clock): read back by the readback thread, decoded here on a decode thread.
    pub fn send_ready_at(
        self,
        outputs: Vec<Vec<f32>>,
        backend: Backend,
        cache: Option<ConvCacheRun>,
        ready_ms: f64,
    ) {
        let mut stages = self.stages;
        stages.ready_ms = ready_ms;
        let decoded = self.decoder.and_then(|decoder| {
            let input = DecodeInput {
                outputs: &outputs,
                shapes: &self.shapes,
                crop: &self.crop,
                frame_size: self.frame_size,
                frame_index: self.frame_index,
                capture_time: Duration::from_secs_f64(self.capture_ms.max(0.0) / 1e3),
            };
            let _span = info_span!("heimdall::decode", dnn = %self.name).entered();
            match crate::faults::catch(|| decoder.decode(&input)) {
                Ok(Ok(v)) => Some(Ok((decoder, v))),
                Ok(Err(err)) => {
                    warn!("heimdall: {}: decoding: {err}", self.name);
                    None
                }
                Err(message) => Some(Err(message)),
            }
        });
        // A decoder that panics fails its DNN (the others go on): no result.
        let decoded = match decoded {
            Some(Err(message)) => {
                let error = crate::faults::panicked("its decoder", &message);
                self.outbox.fail(self.dnn, error);
                return;
            }
            Some(Ok(d)) => Some(d),
            None => None,
        };
        stages.sent_ms = self.clock.now_ms();
        self.outbox
            .send(RenderMessage::Result(Box::new(FinishedInference {
                dnn: self.dnn,
                frame_index: self.frame_index,
                capture_ms: self.capture_ms,
                tensors: Arc::new(outputs),
                backend,
                crop: self.crop,
                decoded,
                cache,
                stages,
                resumed_from_step: self.resumed_from_step,
            })));
    }
}
