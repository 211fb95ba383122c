//! 8-bit RGBA images: decoding PNG and JPEG files (with the `image` crate), encoding PNG, and
//! conversion to a model's input tensor through a [`Crop`].

use std::path::Path;

use super::crop::Crop;
use super::error::ImageError;
use super::normalization::Normalization;
use super::resample::resample;

/// An 8-bit RGBA image, rows top to bottom, 4 bytes a pixel, no padding (sRGB-encoded bytes, as
/// a camera delivers them).
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

    /// Loads a PNG or JPEG file (any bit depth and colour type; converted to 8-bit RGBA).
    pub fn load(path: impl AsRef<Path>) -> Result<RgbaImage, ImageError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|source| ImageError::Io {
            path: shown.clone(),
            source,
        })?;
        Self::decode(&bytes).map_err(|e| match e {
            ImageError::Decode { message, .. } => ImageError::Decode {
                path: shown,
                message,
            },
            other => other,
        })
    }

    /// Decodes PNG or JPEG bytes (converted to 8-bit RGBA).
    pub fn decode(bytes: &[u8]) -> Result<RgbaImage, ImageError> {
        let err = |message: String| ImageError::Decode {
            path: "<memory>".into(),
            message,
        };
        let format = image::guess_format(bytes).map_err(|e| err(e.to_string()))?;
        if !matches!(format, image::ImageFormat::Png | image::ImageFormat::Jpeg) {
            return Err(err(format!("{format:?} images are not supported")));
        }
        let mut reader = image::ImageReader::with_format(std::io::Cursor::new(bytes), format);
        // Bounded like the model parsers: a hostile header cannot make us allocate gigabytes.
        let mut limits = image::Limits::default();
        limits.max_alloc = Some(1 << 30);
        reader.limits(limits);
        let decoded = reader.decode().map_err(|e| err(e.to_string()))?;
        let rgba = decoded.into_rgba8();
        let (width, height) = rgba.dimensions();
        RgbaImage::from_raw(width, height, rgba.into_raw())
    }

    /// Encodes the image as an 8-bit RGBA PNG.
    pub fn encode_png(&self) -> Result<Vec<u8>, ImageError> {
        let mut out = std::io::Cursor::new(Vec::new());
        image::write_buffer_with_format(
            &mut out,
            &self.data,
            self.width,
            self.height,
            image::ExtendedColorType::Rgba8,
            image::ImageFormat::Png,
        )
        .map_err(|e| ImageError::Decode {
            path: "<memory>".into(),
            message: e.to_string(),
        })?;
        Ok(out.into_inner())
    }

    /// Writes the image as a PNG file.
    pub fn save_png(&self, path: impl AsRef<Path>) -> Result<(), ImageError> {
        let path = path.as_ref();
        std::fs::write(path, self.encode_png()?).map_err(|source| ImageError::Io {
            path: path.display().to_string(),
            source,
        })
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
    pub fn size(&self) -> glam::Vec2 {
        glam::Vec2::new(self.width as f32, self.height as f32)
    }

    /// The image resampled through `crop` into a `[h, w, c]` float tensor (NHWC, batch 1)
    /// normalised by `norm`: what a model sees of it (see [`resample`]).
    pub fn to_tensor(
        &self,
        crop: &Crop,
        norm: &Normalization,
        shape: [usize; 3],
    ) -> Result<Vec<f32>, ImageError> {
        resample(
            &self.data,
            self.width as usize,
            self.height as usize,
            crop,
            norm,
            shape,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_round_trip_and_jpeg_decode() {
        let mut img = RgbaImage::new(3, 2).unwrap();
        img.data[4..8].copy_from_slice(&[10, 20, 30, 40]);
        let png = img.encode_png().unwrap();
        assert_eq!(RgbaImage::decode(&png).unwrap(), img);
        // A JPEG written by the same crate decodes to about the same grey.
        let grey = vec![128u8; 16 * 16 * 3];
        let mut jpeg = std::io::Cursor::new(Vec::new());
        image::write_buffer_with_format(
            &mut jpeg,
            &grey,
            16,
            16,
            image::ExtendedColorType::Rgb8,
            image::ImageFormat::Jpeg,
        )
        .unwrap();
        let j = RgbaImage::decode(jpeg.get_ref()).unwrap();
        assert_eq!((j.width, j.height), (16, 16));
        assert!(
            j.data
                .chunks(4)
                .all(|p| p[0].abs_diff(128) <= 2 && p[3] == 255)
        );
    }

    #[test]
    fn bad_bytes_are_typed_errors() {
        assert!(matches!(
            RgbaImage::decode(b"not an image"),
            Err(ImageError::Decode { .. })
        ));
        let mut png = RgbaImage::new(4, 4).unwrap().encode_png().unwrap();
        png.truncate(png.len() / 2);
        assert!(RgbaImage::decode(&png).is_err());
        assert!(RgbaImage::from_raw(2, 2, vec![0; 15]).is_err());
        assert!(matches!(
            RgbaImage::load("/nonexistent/x.png"),
            Err(ImageError::Io { .. })
        ));
    }
}
