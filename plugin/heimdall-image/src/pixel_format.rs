//! Camera frames in the formats webcams deliver (V4L2, Media Foundation, AVFoundation) turned
//! into RGBA8: packed RGB/BGR/RGBA/BGRA, grey, YUYV 4:2:2, NV12 4:2:0 and Motion-JPEG, with rows
//! padded to any stride and any size (odd ones included). The Bevy plugin's webcam source runs
//! every frame through [`to_rgba`]; a frame that cannot be converted is a typed error, never a
//! panic.
//!
//! YUV is BT.601 with limited range (Y in 16..=235, chroma in 16..=240), what V4L2 cameras
//! deliver as YUYV and NV12 unless told otherwise; the chroma of a 2x1 (YUYV) or 2x2 (NV12)
//! block is shared by its pixels, and an odd last column or row uses its block's chroma.

use super::error::ImageError;
use super::rgba::RgbaImage;

/// How a camera frame's bytes are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PixelFormat {
    /// R, G, B, A bytes per pixel.
    Rgba8,
    /// B, G, R, A bytes per pixel (alpha ignored: the result is opaque).
    Bgra8,
    /// R, G, B bytes per pixel.
    Rgb8,
    /// B, G, R bytes per pixel.
    Bgr8,
    /// One luma byte per pixel.
    Gray8,
    /// Y0 U Y1 V per pair of pixels (YUY2), BT.601 limited range.
    Yuyv,
    /// A plane of luma bytes, then a plane of interleaved U V bytes at half the width and half
    /// the height (rounded up), BT.601 limited range.
    Nv12,
    /// One JPEG image per frame.
    Mjpeg,
}

impl PixelFormat {
    /// Bytes of one row's pixels without padding (`None` for Motion-JPEG; NV12: a chroma row).
    pub fn row_bytes(self, width: usize) -> Option<usize> {
        Some(match self {
            PixelFormat::Rgba8 | PixelFormat::Bgra8 => width.checked_mul(4)?,
            PixelFormat::Rgb8 | PixelFormat::Bgr8 => width.checked_mul(3)?,
            PixelFormat::Gray8 => width,
            // Luma rows and chroma rows share the stride; a chroma row holds ceil(w/2) U V
            // pairs, a byte more than the luma row for odd widths.
            PixelFormat::Nv12 => width.div_ceil(2).checked_mul(2)?,
            // Pixel pairs of 4 bytes; an odd last pixel takes a whole pair.
            PixelFormat::Yuyv => width.div_ceil(2).checked_mul(4)?,
            PixelFormat::Mjpeg => return None,
        })
    }

    /// Rows of `stride` bytes a frame of `height` rows holds (NV12: the luma rows and the
    /// chroma rows below them).
    fn rows(self, height: usize) -> usize {
        match self {
            PixelFormat::Nv12 => height + height.div_ceil(2),
            _ => height,
        }
    }
}

/// One camera frame as the camera delivered it.
#[derive(Clone, Copy, Debug)]
pub struct RawFrame<'a> {
    /// Its layout.
    pub format: PixelFormat,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Bytes from one row's start to the next (`None`: inferred from the data's length, which
    /// must then be a whole number of equal rows, at least [`PixelFormat::row_bytes`] each;
    /// ignored for Motion-JPEG).
    pub stride: Option<usize>,
    /// The bytes.
    pub data: &'a [u8],
}

/// The frame as an RGBA8 image (opaque), or why it cannot be read: a zero size, too few bytes
/// for its size and stride, a stride shorter than a row, a JPEG that does not decode or whose
/// size is not the frame's.
pub fn to_rgba(frame: &RawFrame<'_>) -> Result<RgbaImage, ImageError> {
    let (w, h) = (frame.width as usize, frame.height as usize);
    let size_err = || ImageError::Size {
        width: frame.width,
        height: frame.height,
        len: frame.data.len(),
    };
    if w == 0 || h == 0 || w.checked_mul(h).and_then(|n| n.checked_mul(4)).is_none() {
        return Err(size_err());
    }
    if frame.format == PixelFormat::Mjpeg {
        return jpeg(frame);
    }
    let row = frame.format.row_bytes(w).ok_or_else(size_err)?;
    let rows = frame.format.rows(h);
    let stride = match frame.stride {
        Some(s) => s,
        None if frame.data.len().is_multiple_of(rows) => frame.data.len() / rows,
        None => {
            return Err(ImageError::Parameters(format!(
                "{:?} {w}x{h}: {} bytes are not {rows} rows of equal length",
                frame.format,
                frame.data.len()
            )));
        }
    };
    if stride < row {
        return Err(ImageError::Parameters(format!(
            "{:?} {w}x{h}: a stride of {stride} bytes is shorter than a row ({row} bytes)",
            frame.format
        )));
    }
    // The last row needs only its pixels, not its padding.
    let needed = stride
        .checked_mul(rows - 1)
        .and_then(|n| n.checked_add(row))
        .ok_or_else(size_err)?;
    if frame.data.len() < needed {
        return Err(size_err());
    }
    let mut out = vec![0u8; w * h * 4];
    let line = |y: usize| &frame.data[y * stride..y * stride + row];
    for (y, dst) in out.chunks_exact_mut(w * 4).enumerate() {
        let src = line(y);
        match frame.format {
            PixelFormat::Rgba8 | PixelFormat::Bgra8 | PixelFormat::Rgb8 | PixelFormat::Bgr8 => {
                let (n, bgr) = match frame.format {
                    PixelFormat::Rgba8 => (4, false),
                    PixelFormat::Bgra8 => (4, true),
                    PixelFormat::Rgb8 => (3, false),
                    _ => (3, true),
                };
                for (d, s) in dst.chunks_exact_mut(4).zip(src.chunks_exact(n)) {
                    let (r, b) = if bgr { (s[2], s[0]) } else { (s[0], s[2]) };
                    d.copy_from_slice(&[r, s[1], b, 255]);
                }
            }
            PixelFormat::Gray8 => {
                for (d, &g) in dst.chunks_exact_mut(4).zip(src) {
                    d.copy_from_slice(&[g, g, g, 255]);
                }
            }
            PixelFormat::Yuyv => {
                for (x, d) in dst.chunks_exact_mut(4).enumerate() {
                    let pair = &src[(x / 2) * 4..(x / 2) * 4 + 4];
                    let luma = if x % 2 == 0 { pair[0] } else { pair[2] };
                    d.copy_from_slice(&yuv_to_rgba(luma, pair[1], pair[3]));
                }
            }
            PixelFormat::Nv12 => {
                let chroma = line(h + y / 2);
                for (x, d) in dst.chunks_exact_mut(4).enumerate() {
                    let c = (x / 2) * 2;
                    let (u, v) = (chroma[c], chroma[c + 1]);
                    d.copy_from_slice(&yuv_to_rgba(src[x], u, v));
                }
            }
            PixelFormat::Mjpeg => unreachable!("decoded above"),
        }
    }
    RgbaImage::from_raw(frame.width, frame.height, out)
}

/// BT.601 limited range to RGB, in fixed point (16.16).
fn yuv_to_rgba(y: u8, u: u8, v: u8) -> [u8; 4] {
    let c = (i32::from(y) - 16).max(0) * 76_309; // 1.164383 * 2^16
    let d = i32::from(u) - 128;
    let e = i32::from(v) - 128;
    let clamp = |x: i32| ((x + 32_768) >> 16).clamp(0, 255) as u8;
    [
        clamp(c + 104_597 * e),             // 1.596027
        clamp(c - 25_675 * d - 53_279 * e), // 0.391762, 0.812968
        clamp(c + 132_201 * d),             // 2.017232
        255,
    ]
}

/// A Motion-JPEG frame, decoded; its size must be the frame's.
fn jpeg(frame: &RawFrame<'_>) -> Result<RgbaImage, ImageError> {
    let decoded = image::load_from_memory_with_format(frame.data, image::ImageFormat::Jpeg)
        .map_err(|e| ImageError::Decode {
            path: "<camera frame>".into(),
            message: e.to_string(),
        })?;
    if (decoded.width(), decoded.height()) != (frame.width, frame.height) {
        return Err(ImageError::Parameters(format!(
            "a {}x{} JPEG in a {}x{} camera frame",
            decoded.width(),
            decoded.height(),
            frame.width,
            frame.height
        )));
    }
    let rgba = decoded.to_rgba8();
    RgbaImage::from_raw(frame.width, frame.height, rgba.into_raw())
}

#[cfg(test)]
mod tests;
