//! How an app describes a DNN (a component) and receives its results (a component and a
//! message), stamped with the camera frame they were computed from.

use std::sync::Arc;
use std::time::Duration;

use bevy::prelude::*;
use heimdall_coordinator::UtilityParams;

use crate::asset::DnnModel;
use crate::decode::Decoded;

/// Per-channel normalisation of camera pixels, the GPU preprocessing kernel's own type
/// (`MINUS_ONE_TO_ONE`, `ZERO_TO_ONE`, `mean_std`): the CPU path applies the same.
pub use heimdall_gpu::preprocess::Normalization;

/// Which part of the camera frame feeds the model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum InputCrop {
    /// The whole frame, stretched to the model's input size.
    Full,
    /// The whole frame, scaled to fit with its aspect kept, padded with zeros (MediaPipe's
    /// letterbox).
    Letterbox,
    /// The rotated face region (MediaPipe's face-landmark ROI) of the latest face detection of
    /// another DNN entity (whose decoder is [`Decoder::BlazeFace`]). Not requested while no face
    /// is detected.
    FaceOf(Entity),
}

/// When the DNN runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RequestMode {
    /// A new inference as soon as the previous result arrived.
    Continuous,
    /// Every `period` (at most one in flight).
    Every(Duration),
    /// Only when a [`RequestInference`] message names this entity.
    OnDemand,
}

/// How raw outputs are turned into app data (on a CPU worker).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decoder {
    /// Raw tensors only ([`DnnOutput::tensors`]).
    Raw,
    /// BlazeFace short-range: anchors and weighted NMS into [`crate::decode::FaceDetections`].
    BlazeFace,
    /// Face landmark model: 468-point mesh and orientation into [`crate::decode::FaceMesh`].
    FaceMesh,
    /// Selfie segmentation: a person mask into [`crate::decode::PersonMask`] (a GPU texture).
    PersonMask,
}

/// A DNN of the app: put this on an entity.
#[derive(Component, Clone, Debug)]
pub struct Dnn {
    /// The model (`asset_server.load("models/x.tflite")`).
    pub model: Handle<DnnModel>,
    /// The entity holding the [`crate::camera::CameraSource`] it reads.
    pub source: Entity,
    /// Crop of the frame.
    pub crop: InputCrop,
    /// Pixel normalisation.
    pub normalization: Normalization,
    /// When it runs.
    pub request: RequestMode,
    /// Relative deadline of one inference.
    pub deadline: Option<Duration>,
    /// Utility parameters `L0`, `beta`, `gamma` (Heimdall sec. 6.2).
    pub utility: UtilityParams,
    /// Post-processing.
    pub decoder: Decoder,
}

impl Dnn {
    /// A continuous DNN on the whole frame with `[0, 1]` pixels, no deadline and raw outputs.
    pub fn new(model: Handle<DnnModel>, source: Entity) -> Self {
        Dnn {
            model,
            source,
            crop: InputCrop::Full,
            normalization: Normalization::ZERO_TO_ONE,
            request: RequestMode::Continuous,
            deadline: None,
            utility: UtilityParams::default(),
            decoder: Decoder::Raw,
        }
    }

    /// Sets the crop.
    pub fn with_crop(mut self, crop: InputCrop) -> Self {
        self.crop = crop;
        self
    }

    /// Sets the normalisation.
    pub fn with_normalization(mut self, n: Normalization) -> Self {
        self.normalization = n;
        self
    }

    /// Sets the request mode.
    pub fn with_request(mut self, r: RequestMode) -> Self {
        self.request = r;
        self
    }

    /// Sets the deadline.
    pub fn with_deadline(mut self, d: Duration) -> Self {
        self.deadline = Some(d);
        self
    }

    /// Sets the utility parameters.
    pub fn with_utility(mut self, u: UtilityParams) -> Self {
        self.utility = u;
        self
    }

    /// Sets the decoder.
    pub fn with_decoder(mut self, d: Decoder) -> Self {
        self.decoder = d;
        self
    }
}

/// Asks for one inference of an [`RequestMode::OnDemand`] DNN.
#[derive(Message, Clone, Copy, Debug)]
pub struct RequestInference(pub Entity);

/// Where a result was computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// On the GPU, inside the frames' command encoders.
    Gpu,
    /// On a CPU worker.
    Cpu,
}

/// The latest result of a DNN (a component on its entity; also sent as [`DnnResult`]).
#[derive(Component, Clone, Debug)]
pub struct DnnOutput {
    /// Index of the camera frame the input came from.
    pub frame_index: u64,
    /// When that frame was captured (time since app start).
    pub capture_time: Duration,
    /// Capture to result available in the main world.
    pub latency: Duration,
    /// Raw outputs (NHWC f32, in the model's output order).
    pub tensors: Arc<Vec<Vec<f32>>>,
    /// Where it ran.
    pub backend: Backend,
    /// The crop that was used (output uv to source uv).
    pub crop: crate::crop::Crop,
}

/// A finished inference, as a message.
#[derive(Message, Clone, Debug)]
pub struct DnnResult {
    /// The DNN's entity.
    pub entity: Entity,
    /// The raw result.
    pub output: DnnOutput,
    /// The decoded result.
    pub decoded: Decoded,
}
