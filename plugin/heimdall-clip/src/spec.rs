//! `clip.json`: the recipe of a clip ([`ClipSpec`]) and its validation.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use heimdall_image::ImageError;

/// Why a clip could not be loaded.
#[derive(Debug, Error)]
pub enum ClipError {
    /// Reading `clip.json` failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// `clip.json` is not valid JSON of the expected shape (this includes an unknown annotation
    /// `kind`).
    #[error("{path}: {source}")]
    Json {
        /// The file.
        path: String,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// The source image (the stage) could not be loaded.
    #[error("clip source image: {0}")]
    Image(#[from] ImageError),
    /// The image of layer `layer` could not be loaded.
    #[error("clip layer {layer} image: {source}")]
    LayerImage {
        /// Index of the layer in `layers`.
        layer: usize,
        /// The loader's error (it names the file).
        source: ImageError,
    },
    /// The spec is well-formed JSON but makes no sense (e.g. zero frames, zoom ≤ 0, a
    /// non-finite number, no keyframes, a layer image too large, duplicate labels).
    #[error("invalid clip: {0}")]
    Invalid(String),
}

/// Largest frame width or height, and largest layer image width or height.
pub const MAX_SIZE: u32 = 4096;
/// Largest stage image width or height.
pub const MAX_STAGE_SIZE: u32 = 16384;
/// Most layers in a clip.
pub const MAX_LAYERS: usize = 16;
/// Most annotations (stage and per layer) and most points per layer.
pub const MAX_ANNOTATIONS: usize = 256;

/// One camera keyframe.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Keyframe {
    /// Frame index (strictly increasing along the list).
    pub frame: u32,
    /// Point of the stage shown at the frame centre, in stage (source image) pixels.
    pub center: [f32; 2],
    /// Frame pixels per stage pixel (> 0).
    pub zoom: f32,
    /// Camera roll in degrees (positive: clockwise).
    pub rotation_deg: f32,
}

/// What an annotated box shows; the apps pick their boxes by kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnnotationKind {
    /// A face (as BlazeFace boxes faces).
    Face,
    /// A hand (as the palm detector boxes hands: the whole hand).
    Hand,
    /// A person (the whole visible body).
    Person,
    /// An object (furniture, a page, ...).
    Object,
    /// A block of text.
    Text,
}

impl AnnotationKind {
    /// The name used in `clip.json` and `ground_truth.json`.
    pub fn as_str(self) -> &'static str {
        match self {
            AnnotationKind::Face => "face",
            AnnotationKind::Hand => "hand",
            AnnotationKind::Person => "person",
            AnnotationKind::Object => "object",
            AnnotationKind::Text => "text",
        }
    }
}

/// A hand-annotated box: in stage pixels for the stage's annotations, in the layer image's
/// pixels for a layer's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Annotation {
    /// Name of the thing (unique among the boxes of the stage, or of one layer).
    pub label: String,
    /// What it is.
    pub kind: AnnotationKind,
    /// `[x, y, w, h]` in pixels (top-left origin, y down), finite, `w, h > 0`.
    pub box_px: [f32; 4],
}

/// A hand-annotated point of a layer (e.g. a hand landmark), in the layer image's pixels.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayerPoint {
    /// Name of the point (unique within its layer), e.g. `"wrist"`, `"index_tip"`.
    pub label: String,
    /// `[x, y]` in layer pixels (pixel `(i, j)` covers `[i, i + 1) × [j, j + 1)`).
    pub px: [f32; 2],
}

/// One keyframe of a layer's placement on the stage.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayerKeyframe {
    /// Frame index (strictly increasing along the list).
    pub frame: u32,
    /// Where the layer image's centre lands, in stage pixels.
    pub center: [f32; 2],
    /// Stage pixels per layer pixel (> 0).
    pub scale: f32,
    /// Rotation of the layer in degrees (positive: clockwise on screen, y down).
    pub rotation_deg: f32,
}

/// A moving RGBA cut-out composited over the stage (straight alpha, "over").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayerSpec {
    /// RGBA image (PNG), relative to the clip directory.
    pub source: String,
    /// Placement keyframes (Catmull-Rom between them, ends clamped, like the camera's).
    pub keyframes: Vec<LayerKeyframe>,
    /// Boxes in layer pixels.
    #[serde(default)]
    pub annotations: Vec<Annotation>,
    /// Points in layer pixels.
    #[serde(default)]
    pub points: Vec<LayerPoint>,
}

/// The contents of `clip.json` (the format is described in `assets/clips/README.md`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClipSpec {
    /// Source image (the stage), relative to the clip directory.
    pub source: String,
    /// Frame width in pixels.
    pub width: u32,
    /// Frame height in pixels.
    pub height: u32,
    /// Frames per second.
    pub fps: f32,
    /// Number of frames.
    pub frames: u32,
    /// The hand-annotated face box in stage pixels, `[x, y, w, h]`: the same as an annotation
    /// `{"label": "face", "kind": "face", "box_px": ...}` listed before `annotations` (the
    /// format of the first clip, kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub face_box_px: Option<[f32; 4]>,
    /// Camera keyframes.
    pub keyframes: Vec<Keyframe>,
    /// Boxes on the stage, in stage pixels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub annotations: Vec<Annotation>,
    /// Layers composited over the stage, bottom first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<LayerSpec>,
}

fn bad<T>(m: impl Into<String>) -> Result<T, ClipError> {
    Err(ClipError::Invalid(m.into()))
}

fn check_box(what: &str, b: &[f32; 4]) -> Result<(), ClipError> {
    let [_, _, w, h] = *b;
    if !(b.iter().all(|v| v.is_finite()) && w > 0.0 && h > 0.0) {
        return bad(format!("{what} must be finite with a positive size"));
    }
    Ok(())
}

fn check_annotations(
    whose: &str,
    face: Option<&[f32; 4]>,
    a: &[Annotation],
) -> Result<(), ClipError> {
    if a.len() > MAX_ANNOTATIONS {
        return bad(format!("{whose}: at most {MAX_ANNOTATIONS} annotations"));
    }
    let mut seen: Vec<&str> = face.map(|_| "face").into_iter().collect();
    for ann in a {
        if ann.label.is_empty() {
            return bad(format!("{whose}: annotation labels must not be empty"));
        }
        if seen.contains(&ann.label.as_str()) {
            return bad(format!(
                "{whose}: duplicate annotation label {:?}",
                ann.label
            ));
        }
        seen.push(&ann.label);
        check_box(&format!("{whose}: box_px of {:?}", ann.label), &ann.box_px)?;
    }
    Ok(())
}

/// Keyframe frames strictly increasing, at least one.
fn check_frames(whose: &str, frames: impl Iterator<Item = u32>) -> Result<(), ClipError> {
    let frames: Vec<u32> = frames.collect();
    if frames.is_empty() {
        return bad(format!("{whose}: at least one keyframe is needed"));
    }
    if frames.windows(2).any(|p| p[1] <= p[0]) {
        return bad(format!(
            "{whose}: keyframe frames must be strictly increasing"
        ));
    }
    Ok(())
}

impl ClipSpec {
    /// Checks everything that does not need the images.
    pub fn validate(&self) -> Result<(), ClipError> {
        if !(1..=MAX_SIZE).contains(&self.width) || !(1..=MAX_SIZE).contains(&self.height) {
            return bad("width and height must be in 1..=4096");
        }
        if self.frames == 0 || self.frames > 1_000_000 {
            return bad("frames must be in 1..=1000000");
        }
        if !(self.fps.is_finite() && self.fps > 0.0) {
            return bad("fps must be positive");
        }
        if let Some(face) = &self.face_box_px {
            check_box("face_box_px", face)?;
        }
        check_frames("camera", self.keyframes.iter().map(|k| k.frame))?;
        for k in &self.keyframes {
            let finite = k.zoom.is_finite()
                && k.center.iter().all(|v| v.is_finite())
                && k.rotation_deg.is_finite();
            if !finite || k.zoom <= 0.0 {
                return bad("keyframes need a finite centre and rotation and a positive zoom");
            }
        }
        check_annotations("stage", self.face_box_px.as_ref(), &self.annotations)?;
        if self.layers.len() > MAX_LAYERS {
            return bad(format!("at most {MAX_LAYERS} layers"));
        }
        for (l, layer) in self.layers.iter().enumerate() {
            let whose = format!("layer {l}");
            if layer.source.is_empty() {
                return bad(format!("{whose}: source must not be empty"));
            }
            check_frames(&whose, layer.keyframes.iter().map(|k| k.frame))?;
            for k in &layer.keyframes {
                let finite = k.scale.is_finite()
                    && k.center.iter().all(|v| v.is_finite())
                    && k.rotation_deg.is_finite();
                if !finite || k.scale <= 0.0 {
                    return bad(format!(
                        "{whose}: keyframes need a finite centre and rotation and a positive scale"
                    ));
                }
            }
            check_annotations(&whose, None, &layer.annotations)?;
            if layer.points.len() > MAX_ANNOTATIONS {
                return bad(format!("{whose}: at most {MAX_ANNOTATIONS} points"));
            }
            for (j, p) in layer.points.iter().enumerate() {
                if p.label.is_empty() {
                    return bad(format!("{whose}: point labels must not be empty"));
                }
                if layer.points[..j].iter().any(|q| q.label == p.label) {
                    return bad(format!("{whose}: duplicate point label {:?}", p.label));
                }
                if !p.px.iter().all(|v| v.is_finite()) {
                    return bad(format!("{whose}: point {:?} must be finite", p.label));
                }
            }
        }
        Ok(())
    }
}
