//! MediaPipe's SSD MobileNetV2 OIDv4 object detector
//! (`object_detection_ssd_mobilenetv2_oidv4_fp16`): anchors, the upstream score threshold (0.5)
//! and NMS ([`heimdall_vision::objects::ObjectDetector`]) into [`DetectedObjects`] in frame uv.
//!
//! The DNN reads the whole frame stretched to 300×300 ([`InputCrop::Full`](crate::dnn::InputCrop))
//! with pixels in `[-1, 1]` ([`Normalization::MINUS_ONE_TO_ONE`](heimdall_vision::Normalization)).

use std::time::Duration;

use bevy::prelude::*;
use heimdall_vision::objects::{Object, ObjectDetector};

use crate::decoder::{DecodeError, DecodeInput, DnnDecoder};

/// The latest objects of an object detector (on its entity).
#[derive(Component, Clone, Debug, Reflect)]
#[reflect(opaque)]
#[reflect(Component, Debug, Clone)]
pub struct DetectedObjects {
    /// Camera frame they were computed from.
    pub frame_index: u64,
    /// Its capture time.
    pub capture_time: Duration,
    /// Objects (label, class index, score, box in frame uv), best first.
    pub objects: Vec<Object>,
}

/// A minimum score outside `[0, 1]`.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
#[error("the minimum score {0} is not in [0, 1]")]
pub struct InvalidMinScore(pub f32);

/// Decodes `object_detection_ssd_mobilenetv2_oidv4_fp16` (outputs: `1917 × 4` box encodings,
/// `1917 × 24` class logits) with MediaPipe's `ObjectDetectionOidV4Subgraph` options; every
/// label is reported.
pub struct ObjectDecoder {
    detector: ObjectDetector,
}

impl Default for ObjectDecoder {
    fn default() -> Self {
        ObjectDecoder {
            detector: ObjectDetector::oidv4(),
        }
    }
}

impl ObjectDecoder {
    /// The decoder keeping objects scoring at least `min_score` (the upstream graph: 0.5), or an
    /// error when it is not in `[0, 1]`.
    pub fn with_min_score(self, min_score: f32) -> Result<Self, InvalidMinScore> {
        if !(0.0..=1.0).contains(&min_score) {
            return Err(InvalidMinScore(min_score));
        }
        Ok(ObjectDecoder {
            detector: self.detector.with_min_score(min_score),
        })
    }

    /// The detector (labels, decoder options).
    pub fn detector(&self) -> &ObjectDetector {
        &self.detector
    }
}

impl DnnDecoder for ObjectDecoder {
    type Output = DetectedObjects;

    fn decode(&self, input: &DecodeInput) -> Result<DetectedObjects, DecodeError> {
        let n = self.detector.decoder().anchors().len();
        let boxes = input.output_of_len("object boxes", n * 4)?;
        let scores = input.output_of_len("object scores", n * self.detector.labels().len())?;
        let objects = self
            .detector
            .decode_mapped(boxes, scores, &input.crop.transform)?;
        Ok(DetectedObjects {
            frame_index: input.frame_index,
            capture_time: input.capture_time,
            objects,
        })
    }

    fn deliver(&self, out: DetectedObjects, entity: &mut EntityWorldMut) {
        entity.insert(out);
    }
}
