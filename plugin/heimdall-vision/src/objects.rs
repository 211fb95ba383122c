//! Object detection with MediaPipe's SSD MobileNetV2 trained on Open Images V4
//! (`object_detection_ssd_mobilenetv2_oidv4_fp16.tflite`, from npm `@mediapipe/objectron`),
//! as MediaPipe's `ObjectDetectionOidV4Subgraph`
//! (`mediapipe/modules/objectron/object_detection_oid_v4_cpu.pbtxt`, unchanged in v0.10.21):
//!
//! - Input: the whole frame stretched to 300×300 (`keep_aspect_ratio: false`, default border =
//!   replicate, OpenCV corner sampling), values in `[-1, 1]`.
//! - Anchors: 6 layers, strides `[16, 32, 64, 128, 256, 512]`, scales 0.2..0.95, aspect ratios
//!   `1, 2, 0.5, 3, 0.3333` plus the interpolated one, three reduced boxes in the lowest layer:
//!   19²·3 + (10² + 5² + 3² + 2² + 1)·6 = 1917.
//! - Decoding: 24 classes (class 0, the background `???`, ignored), `y, x, h, w` box
//!   encodings, scales 10, 10, 5, 5 with exponential sizes, sigmoid scores, kept when ≥ 0.5.
//! - NMS: MediaPipe's default algorithm, IoU > 0.5 suppressed, at most 100 detections, classes
//!   not looked at.
//!
//! The subgraph's `FilterDetectionCalculator` keeps only the labels the caller allows
//! (Objectron passes its one category); here every label is reported.

use crate::Rect;
use crate::anchors::{SsdAnchorsOptions, generate_anchors};
use crate::error::DecodeError;
use crate::image::{Border, CropTransform, ImageToTensor};
use crate::ssd::{Nms, SsdDecoder, SsdOptions};

/// The labelmap of the OIDv4 model (the first 184 bytes of the npm package's data file), one
/// label per class index; index 0 is the background.
pub const OIDV4_LABELS: [&str; 24] = [
    "???",
    "Bicycle",
    "Boot",
    "Laptop",
    "Person",
    "Chair",
    "Cattle",
    "Desk",
    "Cat",
    "Computer mouse",
    "Computer monitor",
    "Box",
    "Mug",
    "Coffee cup",
    "Stationary bicycle",
    "Table",
    "Bottle",
    "High heels",
    "Vehicle",
    "Footwear",
    "Dog",
    "Book",
    "Camera",
    "Car",
];

/// Side of the OIDv4 model's square input, in pixels.
pub const OIDV4_INPUT: u32 = 300;

/// One detected object.
#[derive(Clone, Debug, PartialEq)]
pub struct Object {
    /// The class label.
    pub label: String,
    /// The class index in the labelmap.
    pub class_id: usize,
    /// Confidence in `[0, 1]`.
    pub score: f32,
    /// Box in frame uv.
    pub bbox: Rect,
}

/// An SSD object detector: its decoder, labels and input size.
#[derive(Clone, Debug)]
pub struct ObjectDetector {
    decoder: SsdDecoder,
    labels: Vec<String>,
    input: u32,
}

impl ObjectDetector {
    /// MediaPipe's SSD MobileNetV2 OIDv4 detector with its graph's options.
    pub fn oidv4() -> ObjectDetector {
        let anchors = generate_anchors(&SsdAnchorsOptions {
            input_size_width: OIDV4_INPUT,
            input_size_height: OIDV4_INPUT,
            min_scale: 0.2,
            max_scale: 0.95,
            anchor_offset_x: 0.5,
            anchor_offset_y: 0.5,
            strides: vec![16, 32, 64, 128, 256, 512],
            aspect_ratios: vec![1.0, 2.0, 0.5, 3.0, 0.3333],
            reduce_boxes_in_lowest_layer: true,
            interpolated_scale_aspect_ratio: 1.0,
            fixed_anchor_size: false,
        });
        let options = SsdOptions {
            num_classes: OIDV4_LABELS.len(),
            num_coords: 4,
            keypoint_coord_offset: 4,
            num_keypoints: 0,
            values_per_keypoint: 2,
            reverse_output_order: false,
            x_scale: 10.0,
            y_scale: 10.0,
            w_scale: 5.0,
            h_scale: 5.0,
            apply_exponential_on_box_size: true,
            sigmoid_score: true,
            score_clipping_thresh: None,
            min_score_thresh: 0.5,
            ignore_classes: vec![0],
            nms: Nms::Default {
                min_suppression_threshold: 0.5,
                max_num_detections: Some(100),
            },
        };
        ObjectDetector {
            decoder: SsdDecoder::new(anchors, options),
            labels: OIDV4_LABELS.iter().map(|s| s.to_string()).collect(),
            input: OIDV4_INPUT,
        }
    }

    /// The same detector keeping objects scoring at least `min_score` (MediaPipe's graph: 0.5).
    pub fn with_min_score(mut self, min_score: f32) -> ObjectDetector {
        self.decoder = self.decoder.with_min_score(min_score);
        self
    }

    /// The decoder.
    pub fn decoder(&self) -> &SsdDecoder {
        &self.decoder
    }

    /// The labels, by class index.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// The detector's view of a `frame_w × frame_h` frame: the whole frame stretched to the
    /// input.
    pub fn crop(&self, frame_w: u32, frame_h: u32) -> ImageToTensor {
        ImageToTensor::new(
            None,
            (frame_w, frame_h),
            (self.input, self.input),
            false,
            Border::Clamp,
        )
    }

    /// Decodes the model's outputs (`boxes`: `1917 × 4` encodings, `scores`: `1917 × 24`
    /// logits) for the crop `crop` into objects in frame uv, best first.
    pub fn decode(
        &self,
        boxes: &[f32],
        scores: &[f32],
        crop: &ImageToTensor,
    ) -> Result<Vec<Object>, DecodeError> {
        self.decode_mapped(boxes, scores, &crop.transform)
    }

    /// [`ObjectDetector::decode`] with only the map from model input uv to frame uv (e.g. the
    /// transform of the crop a runtime sampled with).
    pub fn decode_mapped(
        &self,
        boxes: &[f32],
        scores: &[f32],
        transform: &CropTransform,
    ) -> Result<Vec<Object>, DecodeError> {
        Ok(self
            .decoder
            .decode(boxes, scores)?
            .into_iter()
            .map(|d| {
                let d = d.transformed(transform);
                Object {
                    label: self.labels.get(d.class_id).cloned().unwrap_or_default(),
                    class_id: d.class_id,
                    score: d.score,
                    bbox: d.bbox,
                }
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oidv4_anchors_by_hand() {
        let det = ObjectDetector::oidv4();
        let a = det.decoder().anchors();
        assert_eq!(a.len(), 1917);
        // Lowest layer (19x19, 3 boxes): the first is 0.1 x 0.1; the second scale 0.2 at
        // ratio 2: w = 0.2·√2, h = 0.2/√2.
        assert!((a[0].w - 0.1).abs() < 1e-6 && (a[0].h - 0.1).abs() < 1e-6);
        assert!((a[1].w - 0.2 * 2f32.sqrt()).abs() < 1e-6);
        assert!((a[0].x_center - 0.5 / 19.0).abs() < 1e-7);
        // The last anchor: the 1x1 map, interpolated scale sqrt(0.95 · 1).
        let last = a[1916];
        assert_eq!((last.x_center, last.y_center), (0.5, 0.5));
        assert!((last.w - 0.95f32.sqrt()).abs() < 1e-6);
    }
}
