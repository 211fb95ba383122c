//! Camera clips with known ground truth, to preview and test AR apps without a camera: a virtual camera moving over a still image (the
//! stage), with moving RGBA cut-outs (layers) composited over it.
//!
//! A clip directory holds `clip.json` ([`ClipSpec`], described in full in
//! `assets/clips/README.md`): the stage image (a PNG or JPEG path relative to the directory), the
//! frame size, fps and frame count, hand-annotated boxes in stage pixels (`face_box_px`,
//! `annotations`), keyframes of the camera (centre in stage pixels, zoom, roll), and `layers`:
//! RGBA PNGs with their own keyframes (centre on the stage, scale, rotation), boxes and points in
//! layer pixels. Between keyframes the camera and each layer follow a Catmull-Rom spline through
//! them (clamped at the ends, held before the first and after the last).
//!
//! Camera model, in pixels: the frame pixel at offset `d` from the frame centre shows the stage
//! at `center + R(θ) · d / zoom`, with `R(θ) = [[cos θ, −sin θ], [sin θ, cos θ]]` in y-down
//! coordinates. `zoom` is frame pixels per stage pixel; positive `θ` turns the camera clockwise,
//! so the picture appears turned anticlockwise. Layer model: the layer pixel `q` lands on the
//! stage at `center + scale · R(φ) · (q − size / 2)` (positive `φ` turns the layer clockwise).
//!
//! Rendering ([`Clip::frame_into`]): the stage is sampled bilinearly through the camera (see
//! [`crate::warp`]; outside the stage is black), then each layer, bottom first, is sampled
//! bilinearly through one affine map per frame (frame pixel → layer pixel, transparent outside)
//! and composited "over" (straight alpha in the PNG). Images drawn at less than half their
//! resolution are sampled from mipmap levels (box-filtered halves) instead; see `render.rs`.
//!
//! Ground truth of frame `i` ([`Clip::truth`]): every annotated box's four corners mapped into the
//! frame (through its layer's placement, then the camera), their bounding box clipped to the
//! frame, normalised (uv), `None` when less than half of that box is in view; every layer point
//! mapped the same way, `None` outside the frame. [`Clip::ground_truth`] is the face's.

#![warn(missing_docs)]

mod render;
mod spec;
mod truth;
pub mod warp;

use std::path::{Path, PathBuf};

use glam::{Affine2, Mat2, Vec2};

use heimdall_image::{CropTransform, RgbaImage};

use crate::warp::PackedRgba;
use render::{PremultipliedLayer, mip_level, mip_levels};

pub use spec::{
    Annotation, AnnotationKind, ClipError, ClipSpec, Keyframe, LayerKeyframe, LayerPoint,
    LayerSpec, MAX_ANNOTATIONS, MAX_LAYERS, MAX_SIZE, MAX_STAGE_SIZE,
};
pub use truth::{FrameTruth, TruthBox, TruthPoint};

/// The camera of one frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CameraPose {
    /// Stage point at the frame centre, in stage pixels.
    pub center: Vec2,
    /// Frame pixels per stage pixel.
    pub zoom: f32,
    /// Roll in radians (positive: camera turned clockwise).
    pub rotation: f32,
}

/// The placement of one layer on the stage in one frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayerPose {
    /// Where the layer image's centre lands, in stage pixels.
    pub center: Vec2,
    /// Stage pixels per layer pixel.
    pub scale: f32,
    /// Rotation in radians (positive: clockwise on screen).
    pub rotation: f32,
}

/// A loaded layer: its image, premultiplied for sampling, and where it came from.
#[derive(Clone, Debug)]
struct Layer {
    image: RgbaImage,
    /// Premultiplied, with its mipmap levels.
    levels: Vec<PremultipliedLayer>,
    path: PathBuf,
}

/// A loaded clip: spec plus stage and layer images.
#[derive(Clone, Debug)]
pub struct Clip {
    spec: ClipSpec,
    source: RgbaImage,
    /// The stage packed for the warp, with its mipmap levels.
    levels: Vec<PackedRgba>,
    source_path: PathBuf,
    layers: Vec<Layer>,
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

/// Interpolates keyframes at frame `i`: `value(k0, k1, k2, k3, t)` on the Catmull-Rom segment
/// holding `i` (`k1` at or before it, `k2` after; neighbours clamped at the ends).
fn spline<K: Copy, R>(
    keys: &[K],
    frame: fn(&K) -> u32,
    i: f32,
    value: impl Fn([K; 4], f32) -> R,
) -> R {
    let seg = keys.iter().rposition(|k| frame(k) as f32 <= i).unwrap_or(0);
    let at = |j: isize| keys[j.clamp(0, keys.len() as isize - 1) as usize];
    let s = seg as isize;
    let (k0, k1, k2, k3) = (at(s - 1), at(s), at(s + 1), at(s + 2));
    let (f1, f2) = (frame(&k1), frame(&k2));
    let t = if f2 > f1 {
        ((i - f1 as f32) / (f2 - f1) as f32).clamp(0.0, 1.0)
    } else {
        0.0
    };
    value([k0, k1, k2, k3], t)
}

/// `R(θ)` in y-down coordinates (positive: clockwise on screen).
fn rotation(theta: f32) -> Mat2 {
    let (s, c) = theta.sin_cos();
    Mat2::from_cols(Vec2::new(c, s), Vec2::new(-s, c))
}

impl Clip {
    /// Loads `dir/clip.json`, its stage image and its layer images.
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
        let mut images = Vec::with_capacity(spec.layers.len());
        let mut paths = Vec::with_capacity(spec.layers.len());
        for (l, layer) in spec.layers.iter().enumerate() {
            let path = dir.join(&layer.source);
            images.push(
                RgbaImage::load(&path)
                    .map_err(|source| ClipError::LayerImage { layer: l, source })?,
            );
            paths.push(path);
        }
        let mut clip = Clip::from_images(spec, source, images)?;
        clip.source_path = source_path;
        for (layer, path) in clip.layers.iter_mut().zip(paths) {
            layer.path = path;
        }
        Ok(clip)
    }

    /// A clip without layers from a spec and an already loaded stage image (validated like
    /// [`Clip::load`]; a spec with layers is refused: use [`Clip::from_images`]).
    pub fn from_parts(spec: ClipSpec, source: RgbaImage) -> Result<Clip, ClipError> {
        Clip::from_images(spec, source, Vec::new())
    }

    /// A clip from a spec, its stage image and one image per layer of `spec.layers`, in order
    /// (validated like [`Clip::load`]).
    pub fn from_images(
        spec: ClipSpec,
        source: RgbaImage,
        layers: Vec<RgbaImage>,
    ) -> Result<Clip, ClipError> {
        spec.validate()?;
        if layers.len() != spec.layers.len() {
            return Err(ClipError::Invalid(format!(
                "{} layers in the spec but {} layer images",
                spec.layers.len(),
                layers.len()
            )));
        }
        if source.width > MAX_STAGE_SIZE || source.height > MAX_STAGE_SIZE {
            return Err(ClipError::Invalid(format!(
                "stage image {}x{} larger than {MAX_STAGE_SIZE}x{MAX_STAGE_SIZE}",
                source.width, source.height
            )));
        }
        for (l, image) in layers.iter().enumerate() {
            if image.width > MAX_SIZE || image.height > MAX_SIZE {
                return Err(ClipError::Invalid(format!(
                    "layer {l}: image {}x{} larger than {MAX_SIZE}x{MAX_SIZE}",
                    image.width, image.height
                )));
            }
        }
        Ok(Clip {
            spec,
            levels: mip_levels(PackedRgba::from_image(&source), PackedRgba::half, |p| {
                (p.width(), p.height())
            }),
            source,
            source_path: PathBuf::new(),
            layers: layers
                .into_iter()
                .map(|image| Layer {
                    levels: mip_levels(
                        PremultipliedLayer::new(&image),
                        PremultipliedLayer::half,
                        |p| (p.width, p.height),
                    ),
                    image,
                    path: PathBuf::new(),
                })
                .collect(),
        })
    }

    /// The spec.
    pub fn spec(&self) -> &ClipSpec {
        &self.spec
    }

    /// The stage image.
    pub fn source(&self) -> &RgbaImage {
        &self.source
    }

    /// Where the stage image was loaded from (empty for [`Clip::from_parts`]).
    pub fn source_path(&self) -> &Path {
        &self.source_path
    }

    /// Number of layers.
    pub fn layer_count(&self) -> usize {
        self.layers.len()
    }

    /// The image of layer `l` (straight alpha, as loaded). Panics if `l` is out of range.
    pub fn layer_image(&self, l: usize) -> &RgbaImage {
        &self.layers[l].image
    }

    /// Where layer `l`'s image was loaded from (empty for [`Clip::from_images`]).
    pub fn layer_path(&self, l: usize) -> &Path {
        &self.layers[l].path
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

    /// The camera at frame `i` (taken modulo the length: the clip loops).
    pub fn camera(&self, i: usize) -> CameraPose {
        let i = (i % self.len()) as f32;
        spline(
            &self.spec.keyframes,
            |k| k.frame,
            i,
            |[k0, k1, k2, k3], t| {
                let f = |g: fn(&Keyframe) -> f32| catmull_rom(g(&k0), g(&k1), g(&k2), g(&k3), t);
                CameraPose {
                    center: Vec2::new(f(|k| k.center[0]), f(|k| k.center[1])),
                    zoom: f(|k| k.zoom).max(1e-3),
                    rotation: f(|k| k.rotation_deg).to_radians(),
                }
            },
        )
    }

    /// The placement of layer `l` at frame `i` (modulo the length). Panics if `l` is out of
    /// range.
    pub fn layer_pose(&self, l: usize, i: usize) -> LayerPose {
        let i = (i % self.len()) as f32;
        spline(
            &self.spec.layers[l].keyframes,
            |k| k.frame,
            i,
            |[k0, k1, k2, k3], t| {
                let f =
                    |g: fn(&LayerKeyframe) -> f32| catmull_rom(g(&k0), g(&k1), g(&k2), g(&k3), t);
                LayerPose {
                    center: Vec2::new(f(|k| k.center[0]), f(|k| k.center[1])),
                    scale: f(|k| k.scale).max(1e-3),
                    rotation: f(|k| k.rotation_deg).to_radians(),
                }
            },
        )
    }

    /// The map from layer `l`'s pixels to stage pixels at frame `i`.
    pub fn layer_to_stage(&self, l: usize, i: usize) -> Affine2 {
        let pose = self.layer_pose(l, i);
        let lin = rotation(pose.rotation) * pose.scale;
        let half = 0.5 * self.layers[l].image.size();
        Affine2::from_mat2_translation(lin, pose.center - lin * half)
    }

    /// The map from frame pixels to stage pixels at frame `i` (the camera).
    pub fn frame_to_stage(&self, i: usize) -> Affine2 {
        let cam = self.camera(i);
        let lin = rotation(cam.rotation) * (1.0 / cam.zoom);
        let half = 0.5 * Vec2::new(self.spec.width as f32, self.spec.height as f32);
        Affine2::from_mat2_translation(lin, cam.center - lin * half)
    }

    /// The map from frame `i`'s uv to the stage image's uv.
    pub fn frame_to_source(&self, i: usize) -> CropTransform {
        let cam = self.camera(i);
        let frame = Vec2::new(self.spec.width as f32, self.spec.height as f32);
        let src = self.source.size();
        let rot = rotation(cam.rotation);
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
        let cam = self.camera(i);
        let level = mip_level(cam.zoom, self.levels.len());
        let stage = &self.levels[level];
        if level == 0 {
            stage.warp_into(&self.frame_to_source(i), out);
        } else {
            // Level uv = stage px / 2^level / level size.
            let s = self.source.size()
                / (Vec2::new(stage.width() as f32, stage.height() as f32) * (1 << level) as f32);
            let t = Affine2::from_scale(s) * self.frame_to_source(i).0;
            stage.warp_into(&CropTransform(t), out);
        }
        if self.layers.is_empty() {
            return;
        }
        let to_stage = self.frame_to_stage(i);
        for (l, layer) in self.layers.iter().enumerate() {
            let density = self.layer_pose(l, i).scale * cam.zoom;
            let level = mip_level(density, layer.levels.len());
            // Level px = layer px / 2^level.
            let to_layer = Affine2::from_scale(Vec2::splat(1.0 / (1 << level) as f32))
                * self.layer_to_stage(l, i).inverse()
                * to_stage;
            layer.levels[level].composite(&to_layer, out);
        }
    }
}
