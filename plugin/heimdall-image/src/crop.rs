//! The crop a model sees of a camera frame: an affine [`CropTransform`] (model input uv to frame
//! uv: crop, resize, letterbox, rotation, mirroring) and the [`Border`] that taps outside the
//! frame read, together a [`Crop`]. MediaPipe's `ImageToTensorCalculator` describes the same
//! thing as a `NormalizedRect` ROI ([`RotatedRect`]) plus `border_mode` and `keep_aspect_ratio`.

use glam::{Affine2, Mat2, Vec2};

/// An affine map from a model input's (or a rendered frame's) normalised coordinates to the
/// source image's normalised coordinates: `src_uv = matrix · out_uv + translation`.
///
/// Both sides are uv in `[0, 1]²` with y down (see the crate docs); the map includes any
/// rotation, scaling, letterbox padding and aspect-ratio change. The inverse maps source uv into
/// the model input (e.g. a ground-truth box into the detector's frame).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CropTransform(pub Affine2);

impl Default for CropTransform {
    fn default() -> Self {
        CropTransform::IDENTITY
    }
}

impl CropTransform {
    /// The whole source stretched onto the whole output (`src_uv = out_uv`): "resize to 128×128"
    /// without keeping the aspect ratio.
    pub const IDENTITY: CropTransform = CropTransform(Affine2::IDENTITY);

    /// From the raw 2×3 matrix, row-major: `src_u = m[0]·u + m[1]·v + m[2]`,
    /// `src_v = m[3]·u + m[4]·v + m[5]`.
    pub fn from_rows(m: [f32; 6]) -> CropTransform {
        CropTransform(Affine2::from_cols(
            Vec2::new(m[0], m[3]),
            Vec2::new(m[1], m[4]),
            Vec2::new(m[2], m[5]),
        ))
    }

    /// The raw 2×3 matrix, row-major (see [`CropTransform::from_rows`]); e.g. for a shader uniform.
    pub fn to_rows(&self) -> [f32; 6] {
        let a = self.0.matrix2;
        let t = self.0.translation;
        [a.x_axis.x, a.y_axis.x, t.x, a.x_axis.y, a.y_axis.y, t.y]
    }

    /// The whole source fitted into an `out_w × out_h` input keeping its aspect ratio, centred,
    /// padded on two sides (what MediaPipe's face detection does: `keep_aspect_ratio: true`,
    /// zero border). Sizes in pixels; a zero size gives the identity.
    pub fn letterbox(src_w: u32, src_h: u32, out_w: u32, out_h: u32) -> CropTransform {
        if src_w == 0 || src_h == 0 || out_w == 0 || out_h == 0 {
            return CropTransform::IDENTITY;
        }
        let src = Vec2::new(src_w as f32, src_h as f32);
        let out = Vec2::new(out_w as f32, out_h as f32);
        let scale = (out.x / src.x).min(out.y / src.y);
        let pad = (out - src * scale) * 0.5;
        // src_px = (out_uv * out - pad) / scale; src_uv = src_px / src.
        let k = out / (src * scale);
        CropTransform(Affine2::from_mat2_translation(
            Mat2::from_diagonal(k),
            -pad / (src * scale),
        ))
    }

    /// The crop of a rotated rectangle (in source uv, rotation in radians clockwise on screen)
    /// out of a `src_w × src_h` image: output uv `(0, 0)` is the rect's top-left corner in its own
    /// rotated frame, `(1, 1)` its bottom-right. Rotation is applied in pixel space, so it stays a
    /// true rotation on non-square sources.
    pub fn from_rotated_rect(rect: &RotatedRect, src_w: u32, src_h: u32) -> CropTransform {
        let src = Vec2::new(src_w.max(1) as f32, src_h.max(1) as f32);
        let size_px = rect.size * src;
        let center_px = rect.center * src;
        let (s, c) = rect.rotation.sin_cos();
        let rot = Mat2::from_cols(Vec2::new(c, s), Vec2::new(-s, c));
        // src_px = center_px + rot · ((out_uv − 0.5) ⊙ size_px); src_uv = src_px / src.
        let to_uv = Mat2::from_diagonal(src.recip());
        let lin = to_uv * rot * Mat2::from_diagonal(size_px);
        let translation = to_uv * (center_px - rot * (0.5 * size_px));
        CropTransform(Affine2::from_mat2_translation(lin, translation))
    }

    /// Maps an output uv to source uv.
    pub fn apply(&self, out_uv: Vec2) -> Vec2 {
        self.0.transform_point2(out_uv)
    }

    /// The inverse map (source uv to output uv); `None` when the map is singular.
    pub fn inverse(&self) -> Option<CropTransform> {
        let det = self.0.matrix2.determinant();
        (det.is_finite() && det.abs() > 1e-12).then(|| CropTransform(self.0.inverse()))
    }

    /// `self` after `inner`: out uv → (`inner`) → middle uv → (`self`) → source uv. E.g. for a
    /// crop given in a letterboxed input's uv, `letterbox.compose(&crop)` maps crop uv to source uv.
    pub fn compose(&self, inner: &CropTransform) -> CropTransform {
        CropTransform(self.0 * inner.0)
    }
}

impl CropTransform {
    /// The transform MediaPipe's CPU `ImageToTensorCalculator` actually samples through, for
    /// this (ideal) transform, an `out_w × out_h` tensor and a `src_w × src_h` frame: OpenCV's
    /// `getPerspectiveTransform` maps the ROI's corners onto the tensor's corner coordinates
    /// `(0, 0)..(out_w, out_h)` and `warpPerspective` reads output pixel `x` at the source index
    /// coordinate that corner map gives (pixel centres at integers on both sides). In this
    /// crate's convention (centres at `i + 0.5`) that is `ideal(uv − ½ output pixel) + ½ source
    /// pixel`. Map results back with the ideal transform, as MediaPipe does.
    pub fn opencv_corners(&self, src_w: u32, src_h: u32, out_w: u32, out_h: u32) -> CropTransform {
        let half_out = Vec2::new(0.5 / out_w.max(1) as f32, 0.5 / out_h.max(1) as f32);
        let half_src = Vec2::new(0.5 / src_w.max(1) as f32, 0.5 / src_h.max(1) as f32);
        let shift_out = CropTransform(Affine2::from_translation(-half_out));
        let shift_src = CropTransform(Affine2::from_translation(half_src));
        shift_src.compose(&self.compose(&shift_out))
    }
}

impl RotatedRect {
    /// MediaPipe's `PadRoi` (`keep_aspect_ratio: true`): the rect grown along one side, in
    /// pixels of a `src_w × src_h` frame, to the aspect ratio of an `out_w × out_h` tensor (the
    /// content is then letterboxed inside it).
    pub fn padded_to_aspect(&self, src_w: u32, src_h: u32, out_w: u32, out_h: u32) -> RotatedRect {
        let src = Vec2::new(src_w.max(1) as f32, src_h.max(1) as f32);
        let size_px = self.size * src;
        let tensor_aspect = out_h.max(1) as f32 / out_w.max(1) as f32;
        let roi_aspect = size_px.y / size_px.x;
        let new_px = if tensor_aspect > roi_aspect {
            Vec2::new(size_px.x, size_px.x * tensor_aspect)
        } else {
            Vec2::new(size_px.y / tensor_aspect, size_px.y)
        };
        RotatedRect {
            size: new_px / src,
            ..*self
        }
    }
}

/// A rotated rectangle in normalised source coordinates, as MediaPipe's `NormalizedRect`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RotatedRect {
    /// Centre (uv).
    pub center: Vec2,
    /// Width and height, as fractions of the source width and height (before rotation).
    pub size: Vec2,
    /// Rotation in radians, clockwise on screen, in `[-π, π)`.
    pub rotation: f32,
}

/// Wraps an angle into `[-π, π)` (MediaPipe's `NormalizeRadians`).
pub fn normalize_radians(angle: f32) -> f32 {
    use std::f32::consts::PI;
    angle - 2.0 * PI * ((angle + PI) / (2.0 * PI)).floor()
}

impl CropTransform {
    /// The axis-aligned rectangle `[x0, x1] × [y0, y1]` of the source (uv), stretched onto the
    /// whole output; `x0 > x1` mirrors horizontally, `y0 > y1` vertically.
    pub fn rect(x0: f32, y0: f32, x1: f32, y1: f32) -> CropTransform {
        CropTransform::from_rows([x1 - x0, 0.0, x0, 0.0, y1 - y0, y0])
    }

    /// The same crop mirrored horizontally: the output's left is the crop's right (a selfie
    /// camera's view).
    pub fn mirrored(&self) -> CropTransform {
        self.compose(&CropTransform::rect(1.0, 0.0, 0.0, 1.0))
    }

    /// Whether every coefficient is finite.
    pub fn is_finite(&self) -> bool {
        self.to_rows().iter().all(|v| v.is_finite())
    }
}

/// What a bilinear tap outside the source image reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Border {
    /// The nearest edge pixel (OpenCV's `BORDER_REPLICATE`, a GPU sampler's clamp-to-edge;
    /// MediaPipe's default `border_mode`).
    Clamp,
    /// A constant RGBA value in pixel units (`[0, 1]`, before normalisation): OpenCV's
    /// `BORDER_CONSTANT`. MediaPipe's `BORDER_ZERO` (letterbox bars, detector inputs) is
    /// [`Border::ZERO`].
    Constant([f32; 4]),
}

impl Border {
    /// Zero (black, transparent): MediaPipe's `BORDER_ZERO`, which `[-1, 1]` normalisation maps
    /// to `-1`.
    pub const ZERO: Border = Border::Constant([0.0; 4]);

    /// Whether the constant (if any) is finite.
    pub fn is_finite(&self) -> bool {
        match self {
            Border::Clamp => true,
            Border::Constant(v) => v.iter().all(|x| x.is_finite()),
        }
    }
}

/// A model input's crop of a frame: the map from the input's uv to the frame's uv and what lies
/// outside the frame. The GPU preprocessing kernel and the CPU [`resample`](fn@super::resample)
/// take it; decoders map their results back to the frame with [`Crop::transform`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Crop {
    /// Model input uv to frame uv.
    pub transform: CropTransform,
    /// What taps outside the frame read.
    pub border: Border,
}

impl Default for Crop {
    fn default() -> Self {
        Crop::FULL
    }
}

impl Crop {
    /// The whole frame stretched onto the input, edges clamped.
    pub const FULL: Crop = Crop {
        transform: CropTransform::IDENTITY,
        border: Border::Clamp,
    };

    /// The whole `frame_w × frame_h` frame fitted into a `model_w × model_h` input with its
    /// aspect kept, centred, zero padding (MediaPipe's `keep_aspect_ratio: true` with
    /// `BORDER_ZERO`, as its detectors use).
    pub fn letterbox(frame_w: u32, frame_h: u32, model_w: u32, model_h: u32) -> Crop {
        Crop {
            transform: CropTransform::letterbox(frame_w, frame_h, model_w, model_h),
            border: Border::ZERO,
        }
    }

    /// A rotated region of a `frame_w × frame_h` frame (MediaPipe's landmark ROIs) with the
    /// given border (MediaPipe's landmark graphs use its default, [`Border::Clamp`]).
    pub fn rotated(rect: &RotatedRect, frame_w: u32, frame_h: u32, border: Border) -> Crop {
        Crop {
            transform: CropTransform::from_rotated_rect(rect, frame_w, frame_h),
            border,
        }
    }

    /// Maps a point of the model input (uv) to the frame (uv).
    pub fn to_frame(&self, uv: Vec2) -> Vec2 {
        self.transform.apply(uv)
    }

    /// Whether the map and the border are finite (what the preprocessing accepts).
    pub fn is_finite(&self) -> bool {
        self.transform.is_finite() && self.border.is_finite()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Vec2, b: Vec2) -> bool {
        (a - b).abs().max_element() < 1e-5
    }

    #[test]
    fn letterbox_landscape_pads_top_and_bottom() {
        // 320x240 into 128x128: scale 0.4, content 128x96, 16 rows of padding above and below.
        let t = CropTransform::letterbox(320, 240, 128, 128);
        assert!(close(t.apply(Vec2::new(0.0, 16.0 / 128.0)), Vec2::ZERO));
        assert!(close(t.apply(Vec2::new(1.0, 112.0 / 128.0)), Vec2::ONE));
        assert!(close(t.apply(Vec2::new(0.5, 0.5)), Vec2::splat(0.5)));
        // A square source is not padded.
        let t = CropTransform::letterbox(512, 512, 128, 128);
        assert!(close(t.apply(Vec2::new(0.25, 0.75)), Vec2::new(0.25, 0.75)));
    }

    #[test]
    fn rotated_rect_crop_by_hand() {
        // 200x100 image, rect centred at px (100, 50), 40x20 px, rotated 90° clockwise.
        let rect = RotatedRect {
            center: Vec2::new(0.5, 0.5),
            size: Vec2::new(0.2, 0.2),
            rotation: std::f32::consts::FRAC_PI_2,
        };
        let t = CropTransform::from_rotated_rect(&rect, 200, 100);
        // Crop x axis points down on screen: out (1, 0.5) is 20 px below the centre.
        assert!(close(
            t.apply(Vec2::new(1.0, 0.5)),
            Vec2::new(100.0 / 200.0, 70.0 / 100.0)
        ));
        // Crop y axis points left: out (0.5, 1) is 10 px left of the centre.
        assert!(close(
            t.apply(Vec2::new(0.5, 1.0)),
            Vec2::new(90.0 / 200.0, 0.5)
        ));
        let inv = t.inverse().unwrap();
        assert!(close(
            inv.apply(t.apply(Vec2::new(0.3, 0.9))),
            Vec2::new(0.3, 0.9)
        ));
        assert_eq!(CropTransform::from_rows(t.to_rows()), t);
    }

    #[test]
    fn opencv_corner_sampling_by_hand() {
        // A 4x4 frame resized to 2x2 (identity ROI): OpenCV maps output pixel 0 to source index
        // coordinate 0 (the first pixel's centre), pixel 1 to 2; our convention reads uv
        // (i + 0.5) / 4 for index i.
        let t = CropTransform::IDENTITY.opencv_corners(4, 4, 2, 2);
        assert!(close(t.apply(Vec2::splat(0.25)), Vec2::splat(0.5 / 4.0)));
        assert!(close(t.apply(Vec2::splat(0.75)), Vec2::splat(2.5 / 4.0)));
        // PadRoi: a 200x100 px ROI into a square tensor becomes 200x200 px.
        let r = RotatedRect {
            center: Vec2::splat(0.5),
            size: Vec2::new(0.5, 0.25),
            rotation: 0.3,
        };
        let p = r.padded_to_aspect(400, 400, 192, 192);
        assert!(close(p.size, Vec2::new(0.5, 0.5)));
        assert_eq!(p.rotation, 0.3);
    }

    #[test]
    fn normalize_radians_wraps() {
        use std::f32::consts::PI;
        assert!((normalize_radians(3.0 * PI / 2.0) + PI / 2.0).abs() < 1e-6);
        assert!((normalize_radians(0.25) - 0.25).abs() < 1e-7);
        assert!((normalize_radians(-PI / 2.0 - 2.0 * PI) + PI / 2.0).abs() < 1e-5);
    }

    #[test]
    fn rect_and_mirror_by_hand() {
        // The right half of the frame, mirrored: the output's left edge is the frame's right.
        let t = CropTransform::rect(0.5, 0.0, 1.0, 1.0).mirrored();
        assert!(close(t.apply(Vec2::new(0.0, 0.25)), Vec2::new(1.0, 0.25)));
        assert!(close(t.apply(Vec2::new(1.0, 1.0)), Vec2::new(0.5, 1.0)));
        assert!(!CropTransform::from_rows([f32::NAN, 0.0, 0.0, 0.0, 1.0, 0.0]).is_finite());
        assert!(!Border::Constant([0.0, f32::INFINITY, 0.0, 0.0]).is_finite());
    }
}
