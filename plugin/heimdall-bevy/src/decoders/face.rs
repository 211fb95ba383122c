//! BlazeFace (`face_detection_short_range`): anchors and weighted NMS
//! ([`heimdall_vision::BlazeFaceDecoder`]) into [`FaceDetections`] in frame uv, and the face
//! landmark model's [`RegionOfInterest`] from the best face (MediaPipe's
//! `face_detection_front_detection_to_roi`).

use std::time::Duration;

use bevy::prelude::*;
use heimdall_vision::image::{Border, Crop};
use heimdall_vision::{BlazeFaceDecoder, Detection, face_landmark_roi};

use crate::decoder::{DecodeError, DecodeInput, DnnDecoder};
use crate::dnn::RegionOfInterest;

/// The latest faces of a face detector (on its entity).
#[derive(Component, Clone, Debug, Reflect)]
#[reflect(opaque)]
#[reflect(Component, Debug, Clone)]
pub struct FaceDetections {
    /// Camera frame they were computed from.
    pub frame_index: u64,
    /// Its capture time.
    pub capture_time: Duration,
    /// Faces in frame uv, best first.
    pub faces: Vec<Detection>,
}

/// Decodes `face_detection_short_range`; the best face's landmark ROI goes on the detector's
/// entity as a [`RegionOfInterest`] (removed when no face is found), for a face-landmark DNN with
/// `InputCrop::Roi(detector)`.
pub struct FaceDecoder {
    decoder: BlazeFaceDecoder,
}

impl Default for FaceDecoder {
    fn default() -> Self {
        FaceDecoder {
            decoder: BlazeFaceDecoder::short_range(),
        }
    }
}

/// What [`FaceDecoder`] delivers.
pub struct DecodedFaces {
    detections: FaceDetections,
    roi: Option<RegionOfInterest>,
}

impl DnnDecoder for FaceDecoder {
    type Output = DecodedFaces;

    fn decode(&self, input: &DecodeInput) -> Result<DecodedFaces, DecodeError> {
        let n = self.decoder.anchors().len();
        let regressors = input.output_of_len("face regressors", n * 16)?;
        let scores = input.output_of_len("face scores", n)?;
        let faces: Vec<Detection> = self
            .decoder
            .decode(regressors, scores)?
            .iter()
            .map(|f| f.transformed(&input.crop.transform))
            .collect();
        let (w, h) = (input.frame_size.x, input.frame_size.y);
        let roi = faces.first().map(|best| RegionOfInterest {
            frame_index: input.frame_index,
            // MediaPipe's face landmark graph crops with its default border, replicate.
            crop: Crop::rotated(&face_landmark_roi(best, w, h), w, h, Border::Clamp),
        });
        Ok(DecodedFaces {
            detections: FaceDetections {
                frame_index: input.frame_index,
                capture_time: input.capture_time,
                faces,
            },
            roi,
        })
    }

    fn deliver(&self, out: DecodedFaces, entity: &mut EntityWorldMut) {
        entity.insert(out.detections);
        match out.roi {
            Some(roi) => {
                entity.insert(roi);
            }
            None => {
                entity.remove::<RegionOfInterest>();
            }
        }
    }
}
