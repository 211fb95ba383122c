//! A camera clip with known ground truth: a virtual camera moving over a still portrait.
//!
//! A clip directory holds `clip.json` ([`ClipSpec`]): the source image (a PNG path relative to
//! the directory), the frame size, fps and frame count, the hand-annotated face box in source
//! pixels, and keyframes of the camera (centre in source pixels, zoom, roll). Between keyframes
//! the camera follows a Catmull-Rom spline through them (clamped at the ends, held before the
//! first and after the last).
//!
//! Camera model, in pixels: the frame pixel at offset `d` from the frame centre shows the source
//! at `center + R(θ) · d / zoom`, with `R(θ) = [[cos θ, −sin θ], [sin θ, cos θ]]` in y-down
//! coordinates. `zoom` is frame pixels per source pixel; positive `θ` turns the camera clockwise,
//! so the picture appears turned anticlockwise. Frames are rendered by bilinear sampling (see
//! [`crate::warp`]); outside the portrait is black.
//!
//! Ground truth of frame `i`: the annotated box's corners mapped into the frame, their bounding
//! box clipped to the frame, normalised (uv); `None` when less than half of that box is in view.

use std::path::{Path, PathBuf};

use glam::{Affine2, Mat2, Vec2};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use heimdall_vision::Rect;
use heimdall_vision::image::{CropTransform, ImageError, RgbaImage};

use crate::warp::PackedRgba;

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
    /// `clip.json` is not valid JSON of the expected shape.
    #[error("{path}: {source}")]
    Json {
        /// The file.
        path: String,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// The source image could not be loaded.
    #[error("clip source image: {0}")]
    Image(#[from] ImageError),
    /// The spec is well-formed JSON but makes no sense (e.g. zero frames, zoom ≤ 0).
    #[error("invalid clip: {0}")]
    Invalid(String),
}

/// One camera keyframe.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Keyframe {
    /// Frame index (strictly increasing along the list).
    pub frame: u32,
    /// Point of the source shown at the frame centre, in source pixels.
    pub center: [f32; 2],
    /// Frame pixels per source pixel (> 0).
    pub zoom: f32,
    /// Camera roll in degrees (positive: clockwise).
    pub rotation_deg: f32,
}

/// The contents of `clip.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClipSpec {
    /// Source image, relative to the clip directory.
    pub source: String,
    /// Frame width in pixels.
    pub width: u32,
    /// Frame height in pixels.
    pub height: u32,
    /// Frames per second.
    pub fps: f32,
    /// Number of frames.
    pub frames: u32,
    /// The hand-annotated face box in source pixels: `[x, y, w, h]`.
    pub face_box_px: [f32; 4],
    /// Camera keyframes.
    pub keyframes: Vec<Keyframe>,
}

impl ClipSpec {
    fn validate(&self) -> Result<(), ClipError> {
        let bad = |m: &str| Err(ClipError::Invalid(m.to_string()));
        if !(1..=4096).contains(&self.width) || !(1..=4096).contains(&self.height) {
            return bad("width and height must be in 1..=4096");
        }
        if self.frames == 0 || self.frames > 1_000_000 {
            return bad("frames must be in 1..=1000000");
        }
        if !(self.fps.is_finite() && self.fps > 0.0) {
            return bad("fps must be positive");
        }
        let [_, _, w, h] = self.face_box_px;
        if !(self.face_box_px.iter().all(|v| v.is_finite()) && w > 0.0 && h > 0.0) {
            return bad("face_box_px must be finite with a positive size");
        }
        if self.keyframes.is_empty() {
            return bad("at least one keyframe is needed");
        }
        for k in &self.keyframes {
            let finite = k.zoom.is_finite()
                && k.center.iter().all(|v| v.is_finite())
                && k.rotation_deg.is_finite();
            if !finite || k.zoom <= 0.0 {
                return bad("keyframes need a finite centre and rotation and a positive zoom");
            }
        }
        if self.keyframes.windows(2).any(|p| p[1].frame <= p[0].frame) {
            return bad("keyframe frames must be strictly increasing");
        }
        Ok(())
    }
}

/// The camera of one frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CameraPose {
    /// Source point at the frame centre, in source pixels.
    pub center: Vec2,
    /// Frame pixels per source pixel.
    pub zoom: f32,
    /// Roll in radians (positive: camera turned clockwise).
    pub rotation: f32,
}

/// A loaded clip: spec plus source image.
#[derive(Clone, Debug)]
pub struct Clip {
    spec: ClipSpec,
    source: RgbaImage,
    packed: PackedRgba,
    source_path: PathBuf,
}

/// Catmull-Rom interpolation between `p1` and `p2` at `t ∈ [0, 1]`.
fn catmull_rom(p0: f32, p1: f32, p2: f32, p3: f32, t: f32) -> f32 {
    let t2 = t * t;
    let t3 = t2 * t;
    0.5 * (2.0 * p1
        + (p2 - p0) * t
        + (2.0 * p0 - 5.0 * p1 + 4.0 * p2 - p3) * t2
        + (3.0 * p1 - p0 - 3.0 * p2 + p3) * t3)
}

impl Clip {
    /// Loads `dir/clip.json` and its source image.
    pub fn load(dir: impl AsRef<Path>) -> Result<Clip, ClipError> {
        let dir = dir.as_ref();
        let json_path = dir.join("clip.json");
        let shown = json_path.display().to_string();
        let text = std::fs::read_to_string(&json_path).map_err(|source| ClipError::Io {
            path: shown.clone(),
            source,
        })?;
        let spec: ClipSpec = serde_json::from_str(&text).map_err(|source| ClipError::Json {
            path: shown,
            source,
        })?;
        spec.validate()?;
        let source_path = dir.join(&spec.source);
        let source = RgbaImage::load(&source_path)?;
        Ok(Clip {
            spec,
            packed: PackedRgba::from_image(&source),
            source,
            source_path,
        })
    }

    /// A clip from a spec and an already loaded source image (validated like [`Clip::load`]).
    pub fn from_parts(spec: ClipSpec, source: RgbaImage) -> Result<Clip, ClipError> {
        spec.validate()?;
        Ok(Clip {
            spec,
            packed: PackedRgba::from_image(&source),
            source,
            source_path: PathBuf::new(),
        })
    }

    /// The spec.
    pub fn spec(&self) -> &ClipSpec {
        &self.spec
    }

    /// The source image.
    pub fn source(&self) -> &RgbaImage {
        &self.source
    }

    /// Where the source image was loaded from (empty for [`Clip::from_parts`]).
    pub fn source_path(&self) -> &Path {
        &self.source_path
    }

    /// Number of frames (≥ 1).
    pub fn len(&self) -> usize {
        self.spec.frames as usize
    }

    /// Always false (a valid clip has at least one frame); for API symmetry with `len`.
    pub fn is_empty(&self) -> bool {
        self.spec.frames == 0
    }

    /// Frames per second.
    pub fn fps(&self) -> f32 {
        self.spec.fps
    }

    /// Frame width in pixels.
    pub fn width(&self) -> u32 {
        self.spec.width
    }

    /// Frame height in pixels.
    pub fn height(&self) -> u32 {
        self.spec.height
    }

    /// The annotated face box in source pixels.
    pub fn face_box_px(&self) -> Rect {
        let [x, y, w, h] = self.spec.face_box_px;
        Rect::new(x, y, w, h)
    }

    /// The camera at frame `i` (taken modulo the length: the clip loops).
    pub fn camera(&self, i: usize) -> CameraPose {
        let i = (i % self.len()) as f32;
        let k = &self.spec.keyframes;
        let seg = k.iter().rposition(|kf| kf.frame as f32 <= i).unwrap_or(0);
        let at = |j: isize| k[j.clamp(0, k.len() as isize - 1) as usize];
        let s = seg as isize;
        let (k0, k1, k2, k3) = (at(s - 1), at(s), at(s + 1), at(s + 2));
        let t = if k2.frame > k1.frame {
            ((i - k1.frame as f32) / (k2.frame - k1.frame) as f32).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let f = |g: fn(&Keyframe) -> f32| catmull_rom(g(&k0), g(&k1), g(&k2), g(&k3), t);
        CameraPose {
            center: Vec2::new(f(|k| k.center[0]), f(|k| k.center[1])),
            zoom: f(|k| k.zoom).max(1e-3),
            rotation: f(|k| k.rotation_deg).to_radians(),
        }
    }

    /// The map from frame `i`'s uv to the source image's uv.
    pub fn frame_to_source(&self, i: usize) -> CropTransform {
        let cam = self.camera(i);
        let frame = Vec2::new(self.spec.width as f32, self.spec.height as f32);
        let src = self.source.size();
        let (s, c) = cam.rotation.sin_cos();
        let rot = Mat2::from_cols(Vec2::new(c, s), Vec2::new(-s, c));
        // src_px = center + rot · (uv ⊙ frame − frame / 2) / zoom; src_uv = src_px / src.
        let to_uv = Mat2::from_diagonal(src.recip());
        let lin = to_uv * rot * Mat2::from_diagonal(frame / cam.zoom);
        let translation = to_uv * (cam.center - rot * (0.5 * frame / cam.zoom));
        CropTransform(Affine2::from_mat2_translation(lin, translation))
    }

    /// Renders frame `i` (modulo the length).
    pub fn frame(&self, i: usize) -> RgbaImage {
        let mut out = RgbaImage {
            width: self.spec.width,
            height: self.spec.height,
            data: Vec::new(),
        };
        self.frame_into(i, &mut out);
        out
    }

    /// Renders frame `i` into `out`, reusing its buffer (resized to the clip's frame size).
    pub fn frame_into(&self, i: usize, out: &mut RgbaImage) {
        out.width = self.spec.width;
        out.height = self.spec.height;
        out.data
            .resize(self.spec.width as usize * self.spec.height as usize * 4, 0);
        self.packed.warp_into(&self.frame_to_source(i), out);
    }

    /// The annotated face box mapped into frame `i`, unclipped, in frame uv (`None` only if the
    /// camera map is degenerate).
    pub fn face_box_unclipped(&self, i: usize) -> Option<Rect> {
        let inv = self.frame_to_source(i).inverse()?;
        let src = self.source.size();
        Rect::bounding(self.face_box_px().corners().map(|c| inv.apply(c / src)))
    }

    /// Ground truth of frame `i` (modulo the length): the face box in frame uv, clipped to the
    /// frame; `None` when less than half of it is in view.
    pub fn ground_truth(&self, i: usize) -> Option<Rect> {
        let full = self.face_box_unclipped(i)?;
        let visible = full.intersection(&Rect::new(0.0, 0.0, 1.0, 1.0))?;
        (full.area() > 0.0 && visible.area() >= 0.5 * full.area()).then_some(visible)
    }

    /// Whether the whole face box is inside frame `i`.
    pub fn face_fully_visible(&self, i: usize) -> bool {
        self.face_box_unclipped(i).is_some_and(|r| {
            let eps = 1e-6;
            r.x >= -eps && r.y >= -eps && r.x + r.w <= 1.0 + eps && r.y + r.h <= 1.0 + eps
        })
    }

    /// The per-frame ground truth as JSON, for tools without Rust (the content of the clip's
    /// `ground_truth.json`): frame size, fps, and `boxes`, one `[x, y, w, h]` (frame uv, 4
    /// decimals) or `null` per frame.
    pub fn ground_truth_json(&self) -> String {
        let mut s = String::new();
        s.push_str("{\n");
        s.push_str("  \"format\": \"per frame: face box [x, y, w, h] normalised to the frame (top-left origin, y down), clipped to the frame; null when less than half of it is in view\",\n");
        s.push_str(&format!(
            "  \"width\": {},\n  \"height\": {},\n  \"fps\": {},\n  \"frames\": {},\n",
            self.spec.width, self.spec.height, self.spec.fps, self.spec.frames
        ));
        s.push_str("  \"boxes\": [\n");
        for i in 0..self.len() {
            let sep = if i + 1 < self.len() { "," } else { "" };
            match self.ground_truth(i) {
                Some(r) => s.push_str(&format!(
                    "    [{:.4}, {:.4}, {:.4}, {:.4}]{sep}\n",
                    r.x, r.y, r.w, r.h
                )),
                None => s.push_str(&format!("    null{sep}\n")),
            }
        }
        s.push_str("  ]\n}\n");
        s
    }
}
