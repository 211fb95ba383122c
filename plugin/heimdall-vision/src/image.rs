//! 8-bit RGBA images: PNG decoding, bilinear warping through a [`CropTransform`], and conversion
//! to a model's float NHWC input tensor.
//!
//! Sampling convention (the same as OpenCV's `warpAffine` with `INTER_LINEAR`, which MediaPipe's
//! CPU `ImageToTensorCalculator` uses): an output pixel's centre is mapped to the source, the four
//! source pixels around it are blended bilinearly (pixel centres at `+0.5`), taps past the edge
//! are clamped to the edge, and a centre that falls outside the source image (uv outside
//! `[0, 1]²`) gives opaque black ([`Border::Zero`], as MediaPipe's face detection letterbox
//! uses) or, where asked, the nearest edge pixel ([`Border::Replicate`], MediaPipe's default,
//! used for the landmark crops).

use std::path::Path;

use glam::Vec2;
use thiserror::Error;

use crate::face_roi::CropTransform;

/// Why an image could not be loaded.
#[derive(Debug, Error)]
pub enum ImageError {
    /// Reading the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The bytes are not a PNG this decoder handles.
    #[error("{path}: not a readable PNG: {message}")]
    Png {
        /// The file (or `<memory>`).
        path: String,
        /// What the decoder said.
        message: String,
    },
    /// Width or height is zero, or the data length does not match them.
    #[error("bad image size {width}x{height} with {len} bytes")]
    Size {
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        height: u32,
        /// Length of the data given.
        len: usize,
    },
}

/// How a model wants its input values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueRange {
    /// `u8 / 255` (face_landmark, selfie_segmentation).
    ZeroToOne,
    /// `u8 / 127.5 − 1` (face_detection_short_range).
    MinusOneToOne,
}

impl ValueRange {
    /// Maps an 8-bit channel value (as a float in `[0, 255]`) into this range.
    pub fn map(self, v: f32) -> f32 {
        match self {
            ValueRange::ZeroToOne => v / 255.0,
            ValueRange::MinusOneToOne => v / 127.5 - 1.0,
        }
    }
}

/// What a sample outside the source image gives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Border {
    /// Opaque black (`BORDER_ZERO`; a GPU shader must test the uv itself).
    #[default]
    Zero,
    /// The nearest edge pixel (`BORDER_REPLICATE`; a GPU sampler's clamp-to-edge).
    Replicate,
}

/// An 8-bit RGBA image, rows top to bottom, 4 bytes a pixel, no padding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RgbaImage {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height * 4` bytes.
    pub data: Vec<u8>,
}

impl RgbaImage {
    /// A new opaque black image (`None` for a zero or overflowing size).
    pub fn new(width: u32, height: u32) -> Option<RgbaImage> {
        let len = (width as usize)
            .checked_mul(height as usize)?
            .checked_mul(4)?;
        if len == 0 {
            return None;
        }
        let mut data = vec![0u8; len];
        for px in data.chunks_exact_mut(4) {
            px[3] = 255;
        }
        Some(RgbaImage {
            width,
            height,
            data,
        })
    }

    /// Wraps existing RGBA bytes, checking the size.
    pub fn from_raw(width: u32, height: u32, data: Vec<u8>) -> Result<RgbaImage, ImageError> {
        let expected = (width as usize)
            .checked_mul(height as usize)
            .and_then(|n| n.checked_mul(4));
        if width == 0 || height == 0 || expected != Some(data.len()) {
            return Err(ImageError::Size {
                width,
                height,
                len: data.len(),
            });
        }
        Ok(RgbaImage {
            width,
            height,
            data,
        })
    }

    /// Loads a PNG file (any bit depth and colour type; converted to 8-bit RGBA).
    pub fn load_png(path: impl AsRef<Path>) -> Result<RgbaImage, ImageError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|source| ImageError::Io {
            path: shown.clone(),
            source,
        })?;
        Self::decode_png(&bytes).map_err(|e| match e {
            ImageError::Png { message, .. } => ImageError::Png {
                path: shown,
                message,
            },
            other => other,
        })
    }

    /// Decodes PNG bytes (any bit depth and colour type; converted to 8-bit RGBA).
    pub fn decode_png(bytes: &[u8]) -> Result<RgbaImage, ImageError> {
        let err = |message: String| ImageError::Png {
            path: "<memory>".into(),
            message,
        };
        let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
        let mut reader = decoder.read_info().map_err(|e| err(e.to_string()))?;
        let size = reader
            .output_buffer_size()
            .ok_or_else(|| err("image too large".into()))?;
        let mut buf = vec![0u8; size];
        let info = reader
            .next_frame(&mut buf)
            .map_err(|e| err(e.to_string()))?;
        let (width, height) = (info.width, info.height);
        let n = width as usize * height as usize;
        let channels = match info.color_type {
            png::ColorType::Grayscale => 1,
            png::ColorType::GrayscaleAlpha => 2,
            png::ColorType::Rgb => 3,
            png::ColorType::Rgba => 4,
            png::ColorType::Indexed => return Err(err("palette not expanded".into())),
        };
        if info.bit_depth != png::BitDepth::Eight || info.line_size != width as usize * channels {
            return Err(err(format!(
                "unexpected layout after expansion: {:?}, {} bytes a row",
                info.bit_depth, info.line_size
            )));
        }
        let src = buf
            .get(..n * channels)
            .ok_or_else(|| err("short image data".into()))?;
        let mut data = Vec::with_capacity(n * 4);
        for px in src.chunks_exact(channels) {
            let rgba = match channels {
                1 => [px[0], px[0], px[0], 255],
                2 => [px[0], px[0], px[0], px[1]],
                3 => [px[0], px[1], px[2], 255],
                _ => [px[0], px[1], px[2], px[3]],
            };
            data.extend_from_slice(&rgba);
        }
        RgbaImage::from_raw(width, height, data)
    }

    /// Encodes the image as an 8-bit RGBA PNG (for debugging and tools).
    pub fn encode_png(&self) -> Result<Vec<u8>, ImageError> {
        let mut out = Vec::new();
        {
            let mut encoder = png::Encoder::new(&mut out, self.width, self.height);
            encoder.set_color(png::ColorType::Rgba);
            encoder.set_depth(png::BitDepth::Eight);
            let err = |e: png::EncodingError| ImageError::Png {
                path: "<memory>".into(),
                message: e.to_string(),
            };
            let mut writer = encoder.write_header().map_err(err)?;
            writer.write_image_data(&self.data).map_err(err)?;
        }
        Ok(out)
    }

    /// The pixel at `(x, y)` (`None` outside the image).
    pub fn pixel(&self, x: u32, y: u32) -> Option<[u8; 4]> {
        if x >= self.width || y >= self.height {
            return None;
        }
        let i = (y as usize * self.width as usize + x as usize) * 4;
        self.data.get(i..i + 4).map(|p| [p[0], p[1], p[2], p[3]])
    }

    /// Size as a vector `(width, height)`.
    pub fn size(&self) -> Vec2 {
        Vec2::new(self.width as f32, self.height as f32)
    }

    /// Bilinear sample at a source pixel position `p` (pixel centres at `i + 0.5`, so this takes
    /// `uv * size`), RGBA as floats in `[0, 255]`; opaque black outside the image.
    pub fn sample(&self, p: Vec2) -> [f32; 4] {
        self.sample_with(p, Border::Zero)
    }

    /// [`RgbaImage::sample`] with a choice of what lies outside the image.
    pub fn sample_with(&self, p: Vec2, border: Border) -> [f32; 4] {
        let (w, h) = (self.width as f32, self.height as f32);
        // Fields are public: an inconsistent image samples as black rather than panicking.
        if self.data.len() != self.width as usize * self.height as usize * 4 || p.is_nan() {
            return [0.0, 0.0, 0.0, 255.0];
        }
        let inside = p.x >= 0.0 && p.x <= w && p.y >= 0.0 && p.y <= h;
        if !inside && border == Border::Zero {
            return [0.0, 0.0, 0.0, 255.0];
        }
        // Replicate: clamp the position to the edge pixels' centres (taps clamp below too).
        let p = p.clamp(
            Vec2::splat(0.5),
            Vec2::new(w - 0.5, h - 0.5).max(Vec2::splat(0.5)),
        );
        let fx = p.x - 0.5;
        let fy = p.y - 0.5;
        let x0f = fx.floor();
        let y0f = fy.floor();
        let ax = fx - x0f;
        let ay = fy - y0f;
        let max_x = self.width as i64 - 1;
        let max_y = self.height as i64 - 1;
        let x0 = (x0f as i64).clamp(0, max_x) as usize;
        let x1 = (x0f as i64 + 1).clamp(0, max_x) as usize;
        let y0 = (y0f as i64).clamp(0, max_y) as usize;
        let y1 = (y0f as i64 + 1).clamp(0, max_y) as usize;
        let stride = self.width as usize * 4;
        let d = &self.data;
        let mut out = [0.0f32; 4];
        for (c, o) in out.iter_mut().enumerate() {
            let p00 = d[y0 * stride + x0 * 4 + c] as f32;
            let p10 = d[y0 * stride + x1 * 4 + c] as f32;
            let p01 = d[y1 * stride + x0 * 4 + c] as f32;
            let p11 = d[y1 * stride + x1 * 4 + c] as f32;
            let top = p00 + (p10 - p00) * ax;
            let bottom = p01 + (p11 - p01) * ax;
            *o = top + (bottom - top) * ay;
        }
        out
    }

    /// Renders a `width × height` image whose pixel at uv `q` is this image sampled at
    /// `transform.apply(q)` (out uv → this image's uv). `None` for a zero size.
    pub fn warp(&self, transform: &CropTransform, width: u32, height: u32) -> Option<RgbaImage> {
        let mut out = RgbaImage::new(width, height)?;
        self.warp_into(transform, &mut out);
        Some(out)
    }

    /// [`RgbaImage::warp`] into an existing image (its size chooses the output size).
    ///
    /// Same sampling as [`RgbaImage::sample`], in fixed point: weights quantised to 1/256 (as
    /// OpenCV's fixed-point `INTER_LINEAR`), rows blended then columns, each rounded: within ±1
    /// of the float result, and exact where the sample falls on a pixel centre.
    pub fn warp_into(&self, transform: &CropTransform, out: &mut RgbaImage) {
        PackedRgba::from_image(self).warp_into(transform, out);
    }

    /// The RGB channels resampled into a `width × height` float tensor (NHWC, batch 1, row-major,
    /// `width * height * 3` values) in `range`: output uv `q` samples this image at
    /// `transform.apply(q)`. Empty for a zero size.
    pub fn to_tensor(
        &self,
        transform: &CropTransform,
        width: u32,
        height: u32,
        range: ValueRange,
    ) -> Vec<f32> {
        self.to_tensor_with(transform, width, height, range, Border::Zero)
    }

    /// [`RgbaImage::to_tensor`] with a choice of border: MediaPipe's face detection uses
    /// [`Border::Zero`] (its letterbox bars are black), its landmark crops use
    /// `ImageToTensorCalculator`'s default, [`Border::Replicate`].
    pub fn to_tensor_with(
        &self,
        transform: &CropTransform,
        width: u32,
        height: u32,
        range: ValueRange,
        border: Border,
    ) -> Vec<f32> {
        let src_size = self.size();
        let out_size = Vec2::new(width as f32, height as f32);
        let mut out = Vec::with_capacity(width as usize * height as usize * 3);
        for j in 0..height {
            for i in 0..width {
                let q = (Vec2::new(i as f32, j as f32) + 0.5) / out_size;
                let s = self.sample_with(transform.apply(q) * src_size, border);
                out.extend(s[..3].iter().map(|&v| range.map(v)));
            }
        }
        out
    }
}

/// An RGBA8 image packed one little-endian `u32` a pixel: the warp's source format (one load
/// per tap). Build it once for a source warped many times (as [`crate::Clip`] does).
#[derive(Clone, Debug)]
pub(crate) struct PackedRgba {
    width: u32,
    height: u32,
    px: Vec<u32>,
}

impl PackedRgba {
    /// Packs an image.
    pub(crate) fn from_image(image: &RgbaImage) -> PackedRgba {
        PackedRgba {
            width: image.width,
            height: image.height,
            px: image
                .data
                .chunks_exact(4)
                .map(|p| u32::from_le_bytes([p[0], p[1], p[2], p[3]]))
                .collect(),
        }
    }

    /// See [`RgbaImage::warp_into`].
    pub(crate) fn warp_into(&self, transform: &CropTransform, out: &mut RgbaImage) {
        let src_size = Vec2::new(self.width as f32, self.height as f32);
        let out_size = out.size();
        let sw = self.width as usize;
        let max_x = self.width as i32 - 1;
        let max_y = self.height as i32 - 1;
        let width = out.width as usize;
        let src = &self.px;
        if width == 0 || src.len() != sw * self.height as usize {
            return;
        }
        // Tap-space positions (source pixel centres at integers) in 16.16 fixed point, stepped
        // along each row: no float work per pixel.
        const ONE: f32 = 65536.0;
        let to_fixed = |v: f32| {
            (v * ONE)
                .round()
                .clamp(-(1i64 << 46) as f32, (1i64 << 46) as f32) as i64
        };
        let (lo, hi_x, hi_y) = (
            -(1i64 << 15),
            to_fixed(src_size.x - 0.5),
            to_fixed(src_size.y - 0.5),
        );
        for (j, row) in out.data.chunks_exact_mut(width * 4).enumerate() {
            let v = (j as f32 + 0.5) / out_size.y;
            let start = transform.apply(Vec2::new(0.5 / out_size.x, v)) * src_size - 0.5;
            let next = transform.apply(Vec2::new(1.5 / out_size.x, v)) * src_size - 0.5;
            if !(start.is_finite() && next.is_finite()) {
                for px in row.chunks_exact_mut(4) {
                    px.copy_from_slice(&[0, 0, 0, 255]);
                }
                continue;
            }
            let (mut x, mut y) = (to_fixed(start.x), to_fixed(start.y));
            let (dx, dy) = (to_fixed(next.x - start.x), to_fixed(next.y - start.y));
            for px in row.chunks_exact_mut(4) {
                let mixed = if x >= lo && x <= hi_x && y >= lo && y <= hi_y {
                    let x0i = (x >> 16) as i32;
                    let y0i = (y >> 16) as i32;
                    let ax = (((x & 0xFFFF) + 128) >> 8) as u32;
                    let ay = (((y & 0xFFFF) + 128) >> 8) as u32;
                    if x0i >= 0 && x0i < max_x && y0i >= 0 && y0i < max_y {
                        // Interior: all four taps inside.
                        let o = y0i as usize * sw + x0i as usize;
                        lerp_rgba(
                            lerp_rgba(src[o], src[o + 1], ax),
                            lerp_rgba(src[o + sw], src[o + sw + 1], ax),
                            ay,
                        )
                    } else {
                        let x0 = x0i.clamp(0, max_x) as usize;
                        let x1 = (x0i + 1).clamp(0, max_x) as usize;
                        let y0 = y0i.clamp(0, max_y) as usize * sw;
                        let y1 = (y0i + 1).clamp(0, max_y) as usize * sw;
                        lerp_rgba(
                            lerp_rgba(src[y0 + x0], src[y0 + x1], ax),
                            lerp_rgba(src[y1 + x0], src[y1 + x1], ax),
                            ay,
                        )
                    }
                } else {
                    0xFF00_0000
                };
                px.copy_from_slice(&mixed.to_le_bytes());
                x += dx;
                y += dy;
            }
        }
    }
}

/// Blends two packed RGBA8 pixels, `a + (b − a) · t / 256` per channel (`t ≤ 256`), rounded,
/// two channels at a time in 16-bit lanes.
#[inline(always)]
fn lerp_rgba(a: u32, b: u32, t: u32) -> u32 {
    const LANES: u32 = 0x00FF_00FF;
    const HALF: u32 = 0x0080_0080;
    let s = 256 - t;
    let rb = (((a & LANES) * s + (b & LANES) * t + HALF) >> 8) & LANES;
    let ga = ((((a >> 8) & LANES) * s + ((b >> 8) & LANES) * t + HALF) >> 8) & LANES;
    rb | (ga << 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(w: u32, h: u32) -> RgbaImage {
        let mut data = Vec::new();
        for y in 0..h {
            for x in 0..w {
                data.extend_from_slice(&[(x * 10) as u8, (y * 10) as u8, 7, 255]);
            }
        }
        RgbaImage::from_raw(w, h, data).unwrap()
    }

    #[test]
    fn sample_hits_pixel_centres_and_blends_halfway() {
        let img = ramp(4, 3);
        // Centre of pixel (2, 1).
        assert_eq!(img.sample(Vec2::new(2.5, 1.5)), [20.0, 10.0, 7.0, 255.0]);
        // Halfway between pixels (1, 1) and (2, 1): R = (10 + 20) / 2.
        assert_eq!(img.sample(Vec2::new(2.0, 1.5))[0], 15.0);
        // Outside: black.
        assert_eq!(img.sample(Vec2::new(-0.1, 1.0)), [0.0, 0.0, 0.0, 255.0]);
        assert_eq!(img.sample(Vec2::new(f32::NAN, 1.0)), [0.0, 0.0, 0.0, 255.0]);
        // Replicate: the edge pixel (0, 1), and the corner pixel (3, 2) far outside.
        let r = img.sample_with(Vec2::new(-5.0, 1.5), Border::Replicate);
        assert_eq!(r, [0.0, 10.0, 7.0, 255.0]);
        let r = img.sample_with(Vec2::new(99.0, 99.0), Border::Replicate);
        assert_eq!(r, [30.0, 20.0, 7.0, 255.0]);
    }

    #[test]
    fn identity_warp_reproduces_the_image() {
        let img = ramp(5, 4);
        let out = img.warp(&CropTransform::IDENTITY, 5, 4).unwrap();
        assert_eq!(out, img);
    }

    #[test]
    fn fixed_point_warp_matches_float_sampling() {
        let img = ramp(9, 7);
        let t = CropTransform::from_rows([0.83, 0.21, -0.05, -0.17, 0.91, 0.12]);
        let out = img.warp(&t, 13, 11).unwrap();
        for j in 0..11u32 {
            for i in 0..13u32 {
                let uv = (Vec2::new(i as f32, j as f32) + 0.5) / Vec2::new(13.0, 11.0);
                let want = img.sample(t.apply(uv) * img.size());
                let got = out.pixel(i, j).unwrap();
                for c in 0..4 {
                    assert!(
                        (got[c] as f32 - want[c]).abs() <= 1.0,
                        "{i},{j}: {got:?} {want:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn png_round_trip_and_errors() {
        let img = ramp(3, 2);
        let bytes = img.encode_png().unwrap();
        assert_eq!(RgbaImage::decode_png(&bytes).unwrap(), img);
        assert!(matches!(
            RgbaImage::decode_png(&bytes[..bytes.len() / 2]),
            Err(ImageError::Png { .. })
        ));
        assert!(matches!(
            RgbaImage::decode_png(b"not a png"),
            Err(ImageError::Png { .. })
        ));
        assert!(matches!(
            RgbaImage::from_raw(2, 2, vec![0; 15]),
            Err(ImageError::Size { .. })
        ));
        assert!(RgbaImage::new(0, 3).is_none());
    }

    #[test]
    fn tensor_value_ranges() {
        let img = RgbaImage::from_raw(1, 1, vec![255, 0, 51, 255]).unwrap();
        let t = img.to_tensor(&CropTransform::IDENTITY, 1, 1, ValueRange::MinusOneToOne);
        assert_eq!(t, vec![1.0, -1.0, 51.0 / 127.5 - 1.0]);
        let t = img.to_tensor(&CropTransform::IDENTITY, 1, 1, ValueRange::ZeroToOne);
        assert_eq!(t, vec![1.0, 0.0, 0.2]);
    }
}
