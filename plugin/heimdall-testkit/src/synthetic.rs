//! A synthetic frame source whose frames carry their own index in the pixels, to prove that a
//! result belongs to the frame it claims to (capture index in, same index out).
//!
//! Encoding: the top rows (up to 4) are split into 32 equal cells, one per bit of the index,
//! most significant first; a set bit is red `(255, 0, 0)`, a clear bit green `(0, 255, 0)`. The
//! decoder reads each cell's centre and insists that one of R and G is clearly above the other,
//! so a frame that is not synthetic (or was mangled) decodes to `None` rather than to a wrong
//! index. It survives a GPU upload/readback and mild resampling (cells ≥ 2 px wide).
//! Below the code: a gradient and a square that move with the index.

use thiserror::Error;

use heimdall_image::RgbaImage;

/// Bits of the encoded index.
pub const INDEX_BITS: u32 = 32;
/// Rows of the code strip (fewer on frames lower than this).
pub const CODE_ROWS: u32 = 4;

/// A frame size the synthetic source cannot encode into.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
#[error(
    "synthetic frames need a width of at least {INDEX_BITS} and a height of at least 1, got {width}x{height}"
)]
pub struct SyntheticSizeError {
    /// Width asked for.
    pub width: u32,
    /// Height asked for.
    pub height: u32,
}

/// Produces `width × height` frames with the index encoded in the top rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyntheticSource {
    width: u32,
    height: u32,
}

impl SyntheticSource {
    /// A source of `width × height` frames (`width ≥ 32`, `height ≥ 1`, at most 16384 each).
    pub fn new(width: u32, height: u32) -> Result<SyntheticSource, SyntheticSizeError> {
        if width < INDEX_BITS || height == 0 || width > 16384 || height > 16384 {
            return Err(SyntheticSizeError { width, height });
        }
        Ok(SyntheticSource { width, height })
    }

    /// Frame width.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Frame height.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The frame for `index`.
    pub fn frame(&self, index: u32) -> RgbaImage {
        let (w, h) = (self.width as usize, self.height as usize);
        let mut data = vec![0u8; w * h * 4];
        let code_rows = CODE_ROWS.min(self.height) as usize;
        let side = (w.min(h) / 4).max(1);
        let sq_x = (index as usize).wrapping_mul(3) % (w - side + 1);
        let sq_y = (index as usize).wrapping_mul(2) % (h - side + 1);
        for y in 0..h {
            for x in 0..w {
                let px = &mut data[(y * w + x) * 4..(y * w + x) * 4 + 4];
                let rgb = if y < code_rows {
                    let bit = (x * INDEX_BITS as usize / w) as u32;
                    if index >> (INDEX_BITS - 1 - bit) & 1 == 1 {
                        [255, 0, 0]
                    } else {
                        [0, 255, 0]
                    }
                } else if (sq_x..sq_x + side).contains(&x) && (sq_y..sq_y + side).contains(&y) {
                    [240, 240, 240]
                } else {
                    [
                        ((x * 255 / w) as u32).wrapping_add(index) as u8 / 2,
                        ((y * 255 / h) as u8) / 2,
                        (index.wrapping_mul(37) % 128) as u8,
                    ]
                };
                px[..3].copy_from_slice(&rgb);
                px[3] = 255;
            }
        }
        RgbaImage {
            width: self.width,
            height: self.height,
            data,
        }
    }
}

/// Reads the index of a synthetic frame (of any size with width ≥ 32); `None` when the top row
/// does not hold a clean code.
pub fn decode_frame_index(frame: &RgbaImage) -> Option<u32> {
    let w = frame.width as usize;
    if w < INDEX_BITS as usize || frame.height == 0 {
        return None;
    }
    let y = (CODE_ROWS.min(frame.height) - 1) / 2;
    let mut index = 0u32;
    for bit in 0..INDEX_BITS as usize {
        // Middle pixel of the cell: the pixels x with floor(32·x / w) = bit.
        let lo = (bit * w).div_ceil(INDEX_BITS as usize);
        let hi = ((bit + 1) * w).div_ceil(INDEX_BITS as usize);
        let x = ((lo + hi - 1) / 2) as u32;
        let [r, g, _, _] = frame.pixel(x, y)?;
        let (r, g) = (r as i32, g as i32);
        let one = if r - g > 96 {
            1
        } else if g - r > 96 {
            0
        } else {
            return None;
        };
        index = (index << 1) | one;
    }
    Some(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_indices_and_sizes() {
        for (w, h) in [(32, 1), (33, 7), (320, 240), (100, 3)] {
            let src = SyntheticSource::new(w, h).unwrap();
            for index in [0, 1, 2, 255, 256, 12345, 0x8000_0001, u32::MAX] {
                assert_eq!(
                    decode_frame_index(&src.frame(index)),
                    Some(index),
                    "{w}x{h} {index}"
                );
            }
        }
    }

    #[test]
    fn rejects_bad_sizes_and_foreign_frames() {
        assert!(SyntheticSource::new(31, 10).is_err());
        assert!(SyntheticSource::new(64, 0).is_err());
        let gray = RgbaImage::from_raw(64, 4, vec![128; 64 * 4 * 4]).unwrap();
        assert_eq!(decode_frame_index(&gray), None);
        let narrow = RgbaImage::from_raw(8, 1, vec![0; 32]).unwrap();
        assert_eq!(decode_frame_index(&narrow), None);
    }

    #[test]
    fn frames_differ() {
        let src = SyntheticSource::new(64, 48).unwrap();
        assert_ne!(
            src.frame(1).data[64 * 4 * 8..],
            src.frame(2).data[64 * 4 * 8..]
        );
    }
}
