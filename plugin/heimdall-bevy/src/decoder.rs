//! The open decoder trait: what turns a DNN's raw outputs into app data. A decoder runs on a CPU
//! worker ([`DnnDecoder::decode`]) and delivers its result on the main world
//! ([`DnnDecoder::deliver`], typically inserting a component on the DNN's entity). One file per
//! decoder lives in [`crate::decoders`]; an app adds its own by implementing the trait.
//!
//! ```
//! use bevy::prelude::*;
//! use heimdall_bevy::decoder::{DecodeError, DecodeInput, DnnDecoder};
//!
//! /// The largest value of the first output.
//! #[derive(Component, Clone, Debug)]
//! struct Peak(f32);
//!
//! struct PeakDecoder;
//!
//! impl DnnDecoder for PeakDecoder {
//!     type Output = Peak;
//!     fn decode(&self, input: &DecodeInput) -> Result<Peak, DecodeError> {
//!         let first = input.output(0)?;
//!         Ok(Peak(first.iter().copied().fold(f32::NEG_INFINITY, f32::max)))
//!     }
//!     fn deliver(&self, peak: Peak, entity: &mut EntityWorldMut) {
//!         entity.insert(peak);
//!     }
//! }
//! ```

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use bevy::math::UVec2;
use bevy::prelude::EntityWorldMut;
use heimdall_vision::image::Crop;

/// Why a decoder could not decode (it is logged, and the raw result is still delivered).
pub type DecodeError = Box<dyn std::error::Error + Send + Sync>;

/// What a decoder gets: the outputs of one inference and where its input came from.
#[derive(Clone, Copy, Debug)]
pub struct DecodeInput<'a> {
    /// The model's outputs (NHWC f32), in the model's output order.
    pub outputs: &'a [Vec<f32>],
    /// Their shapes (NHWC).
    pub shapes: &'a [Vec<usize>],
    /// The crop the input was taken with (model input uv to frame uv).
    pub crop: &'a Crop,
    /// Size of the camera frame, pixels.
    pub frame_size: UVec2,
    /// Index of the camera frame.
    pub frame_index: u64,
    /// Its capture time (time since the plugin's clock started).
    pub capture_time: Duration,
}

impl<'a> DecodeInput<'a> {
    /// Output `i`, or an error naming it.
    pub fn output(&self, i: usize) -> Result<&'a [f32], DecodeError> {
        self.outputs.get(i).map(Vec::as_slice).ok_or_else(|| {
            format!(
                "the model has {} outputs, not {}",
                self.outputs.len(),
                i + 1
            )
            .into()
        })
    }

    /// The first output with exactly `len` values (models whose output order differs between
    /// converters), or an error naming `what`.
    pub fn output_of_len(&self, what: &str, len: usize) -> Result<&'a [f32], DecodeError> {
        self.outputs
            .iter()
            .find(|o| o.len() == len)
            .map(Vec::as_slice)
            .ok_or_else(|| {
                let sizes: Vec<usize> = self.outputs.iter().map(Vec::len).collect();
                format!("{what}: no output of {len} values (outputs have {sizes:?})").into()
            })
    }
}

/// Turns raw outputs into app data. Implement it for a new pipeline or app; see the module
/// docs for an example.
pub trait DnnDecoder: Send + Sync + 'static {
    /// The decoded result.
    type Output: Send + 'static;

    /// Decodes one inference (on a CPU worker: keep it pure, no world access).
    fn decode(&self, input: &DecodeInput) -> Result<Self::Output, DecodeError>;

    /// Delivers a decoded result to the DNN's entity on the main world (before the
    /// [`crate::dnn::DnnResult`] event is triggered).
    fn deliver(&self, output: Self::Output, entity: &mut EntityWorldMut);
}

/// A decoded result on its way to the main world.
pub(crate) type Decoded = Box<dyn Any + Send>;

/// Object-safe form of [`DnnDecoder`].
trait ErasedDecoder: Send + Sync {
    fn decode(&self, input: &DecodeInput) -> Result<Decoded, DecodeError>;
    fn deliver(&self, decoded: Decoded, entity: &mut EntityWorldMut);
    fn type_name(&self) -> &'static str;
}

impl<D: DnnDecoder> ErasedDecoder for D {
    fn decode(&self, input: &DecodeInput) -> Result<Decoded, DecodeError> {
        DnnDecoder::decode(self, input).map(|o| Box::new(o) as Decoded)
    }

    fn deliver(&self, decoded: Decoded, entity: &mut EntityWorldMut) {
        if let Ok(output) = decoded.downcast::<D::Output>() {
            DnnDecoder::deliver(self, *output, entity);
        }
    }

    fn type_name(&self) -> &'static str {
        std::any::type_name::<D>()
    }
}

/// A shared, type-erased decoder (what [`crate::dnn::Dnn::decoder`] holds).
#[derive(Clone)]
pub struct DecoderHandle(Arc<dyn ErasedDecoder>);

impl DecoderHandle {
    /// Wraps a decoder.
    pub fn new(decoder: impl DnnDecoder) -> Self {
        DecoderHandle(Arc::new(decoder))
    }

    /// Decodes (on a worker).
    pub(crate) fn decode(&self, input: &DecodeInput) -> Result<Decoded, DecodeError> {
        self.0.decode(input)
    }

    /// Delivers (on the main world).
    pub(crate) fn deliver(&self, decoded: Decoded, entity: &mut EntityWorldMut) {
        self.0.deliver(decoded, entity);
    }
}

impl std::fmt::Debug for DecoderHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.type_name())
    }
}
