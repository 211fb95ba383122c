//! PP-OCRv6 text detection (`PP-OCRv6_det_small`, DBNet): RapidOCR's DB post-processing
//! ([`heimdall_vision::text::DbPostProcess`]) into [`TextRegions`] in frame pixels, and the
//! model prepared for a camera ([`text_detection_model`]).
//!
//! RapidOCR feeds the det model the whole image resized so that its short side is 736 (sides
//! rounded to multiples of 32: [`DetResize`]), in **BGR** order, `(x / 255 − 0.5) / 0.5`. The
//! plugin's camera input is RGB at a fixed model size, so [`text_detection_model`] imports the
//! model at the size [`DetResize`] gives for the camera's frame size and swaps the red and blue
//! input channels of its first convolution: the DNN then reads the camera's RGB frame with
//! [`InputCrop::Full`](crate::dnn::InputCrop) and [`TEXT_NORMALIZATION`] exactly as RapidOCR
//! reads the BGR image.

use std::time::Duration;

use bevy::prelude::*;
use heimdall_ir::{Graph, OpKind};
use heimdall_vision::CropTransform;
use heimdall_vision::text::{DbPostProcess, DetResize, TEXT_INPUT_BGR, TextBox};

use crate::asset::{DnnModel, DnnModelSettings, import};
use crate::decoder::{DecodeError, DecodeInput, DnnDecoder};

pub use heimdall_vision::text::TEXT_NORMALIZATION;

/// The latest text regions of a text detector (on its entity).
#[derive(Component, Clone, Debug, Reflect)]
#[reflect(opaque)]
#[reflect(Component, Debug, Clone)]
pub struct TextRegions {
    /// Camera frame they were computed from.
    pub frame_index: u64,
    /// Its capture time.
    pub capture_time: Duration,
    /// Regions (score, rotated quad in frame pixels, clockwise from the top-left), in
    /// RapidOCR's order.
    pub regions: Vec<TextBox>,
}

/// Decodes the DB probability map (`[1, H, W, 1]`) of a text detector reading the whole frame.
#[derive(Default)]
pub struct TextDecoder {
    post: DbPostProcess,
}

impl TextDecoder {
    /// A decoder with other DB settings than RapidOCR's defaults.
    pub fn with_post_process(post: DbPostProcess) -> Self {
        TextDecoder { post }
    }
}

impl DnnDecoder for TextDecoder {
    type Output = TextRegions;

    fn decode(&self, input: &DecodeInput) -> Result<TextRegions, DecodeError> {
        let shape = input
            .shapes
            .first()
            .ok_or("the text detection model has no output")?;
        let (h, w) = match shape.as_slice() {
            [1, h, w, 1] | [h, w, 1] | [1, h, w] => (*h, *w),
            other => {
                return Err(format!(
                    "a DB probability map needs a [1, H, W, 1] output, not {other:?}"
                )
                .into());
            }
        };
        let (fw, fh) = (input.frame_size.x, input.frame_size.y);
        let mut regions = self.post.decode(input.output(0)?, (w, h), (fw, fh))?;
        // The boxes are in pixels of what the model saw: map them to the frame when that was a
        // crop of it.
        let t = input.crop.transform;
        if t != CropTransform::IDENTITY {
            let size = input.frame_size.as_vec2();
            for r in &mut regions {
                for p in &mut r.polygon {
                    let uv = t.apply(*p / size);
                    *p = uv * size;
                }
            }
        }
        Ok(TextRegions {
            frame_index: input.frame_index,
            capture_time: input.capture_time,
            regions,
        })
    }

    fn deliver(&self, out: TextRegions, entity: &mut EntityWorldMut) {
        entity.insert(out);
    }
}

/// Why the text detection model could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum TextModelError {
    /// RapidOCR does not feed a frame of this size to the det model as is (a side outside
    /// 30..=2000 px, or wider than 8:1).
    #[error(
        "a {0}x{1} frame: RapidOCR resizes or pads frames with a side outside 30..2000 px or wider than 8:1 before det, which is not ported"
    )]
    FrameSize(u32, u32),
    /// The model file could not be imported.
    #[error("importing the text detection model: {0}")]
    Import(#[from] heimdall::Error),
    /// The model's input does not feed convolutions whose channels can be swapped.
    #[error("the text detection model's input: {0}")]
    Input(String),
}

/// The det model's input size `(width, height)` for a camera frame of `frame_size` (RapidOCR's
/// [`DetResize`]), or `None` when RapidOCR would not feed such a frame as is.
pub fn text_detection_input_size(frame_size: UVec2) -> Option<UVec2> {
    DetResize::default()
        .input_size(frame_size.x, frame_size.y)
        .map(|(w, h)| UVec2::new(w, h))
}

/// Imports `PP-OCRv6_det_small.onnx` (`bytes`; its input is named `x`) for camera frames of
/// `frame_size`: the input at [`text_detection_input_size`], the first convolution reading RGB
/// as RapidOCR's model reads BGR. Add it with `Assets<DnnModel>::add`.
pub fn text_detection_model(bytes: &[u8], frame_size: UVec2) -> Result<DnnModel, TextModelError> {
    text_detection_model_with(bytes, frame_size, DetResize::default())
}

/// [`text_detection_model`] with another `DetResize` than RapidOCR's default (its
/// `limit_side_len` setting: a smaller short side costs less on a slow GPU and finds less small
/// text).
pub fn text_detection_model_with(
    bytes: &[u8],
    frame_size: UVec2,
    resize: DetResize,
) -> Result<DnnModel, TextModelError> {
    let size = resize
        .input_size(frame_size.x, frame_size.y)
        .map(|(w, h)| UVec2::new(w, h))
        .ok_or(TextModelError::FrameSize(frame_size.x, frame_size.y))?;
    let settings = DnnModelSettings {
        input_shapes: vec![("x".into(), vec![1, 3, size.y as usize, size.x as usize])],
    };
    let name = "PP-OCRv6_det_small";
    let mut graph = import(bytes, name, Some(std::ffi::OsStr::new("onnx")), &settings)?;
    if TEXT_INPUT_BGR {
        graph = with_swapped_red_blue(graph)?;
    }
    Ok(DnnModel {
        name: name.into(),
        graph: std::sync::Arc::new(graph),
    })
}

/// `graph` reading its first input with the first and third channels swapped (RGB for BGR):
/// every op reading that input must be a convolution with a constant filter, whose input-channel
/// axis is permuted (no extra op).
pub fn with_swapped_red_blue(mut graph: Graph) -> Result<Graph, TextModelError> {
    let err = |m: String| TextModelError::Input(m);
    let &input = graph
        .inputs
        .first()
        .ok_or_else(|| err("the model has no input".into()))?;
    let channels = graph.tensor(input).shape.last().copied().unwrap_or(0);
    if channels != 3 {
        return Err(err(format!("{channels} input channels, not 3")));
    }
    let consumers = graph.consumers().swap_remove(input.index());
    if consumers.is_empty() {
        return Err(err("no op reads the input".into()));
    }
    for i in consumers {
        let op = &graph.ops[i];
        let filter = match (&op.kind, op.inputs.as_slice()) {
            (OpKind::Conv2d(_), [x, f, ..]) if *x == input && !op.inputs[2..].contains(&input) => {
                *f
            }
            _ => {
                return Err(err(format!(
                    "op {i} ({:?}) reads it, not only as a convolution's input",
                    op.kind
                )));
            }
        };
        let t = &mut graph.tensors[filter.index()];
        let ci = t.shape.last().copied().unwrap_or(0);
        let Some(c) = t
            .constant
            .as_mut()
            .filter(|c| c.sparsity.is_none() && ci == 3)
        else {
            return Err(err(format!(
                "op {i}'s filter is not a dense constant [Co, kh, kw, 3]"
            )));
        };
        // Filter [Co, kh, kw, Ci]: Ci is the innermost axis.
        for px in c.values.chunks_exact_mut(3) {
            px.swap(0, 2);
        }
        if let Some(bits) = c.fp16.as_mut() {
            for px in bits.chunks_exact_mut(3) {
                px.swap(0, 2);
            }
        }
    }
    graph
        .validate()
        .map_err(|e| err(format!("after the swap: {e}")))?;
    Ok(graph)
}
