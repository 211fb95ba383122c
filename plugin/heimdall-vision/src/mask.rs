//! `selfie_segmentation` output (`1×256×256×1`, already through a sigmoid: person probability)
//! as a mask image, optionally resized.

use crate::error::{DecodeError, check_len};

/// A single-channel float mask, rows top to bottom, values in `[0, 1]` (1 = person).
#[derive(Clone, Debug, PartialEq)]
pub struct Mask {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height` values.
    pub data: Vec<f32>,
}

/// Wraps a `width × height` model output as a mask (values clamped to `[0, 1]`, NaN to 0).
/// selfie_segmentation's output is `256 × 256`.
pub fn decode_mask(output: &[f32], width: u32, height: u32) -> Result<Mask, DecodeError> {
    check_len(
        "segmentation mask",
        output,
        width as usize * height as usize,
    )?;
    Ok(Mask {
        width,
        height,
        data: output
            .iter()
            .map(|&v| if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) })
            .collect(),
    })
}

impl Mask {
    /// The value at pixel `(x, y)` (`None` outside).
    pub fn get(&self, x: u32, y: u32) -> Option<f32> {
        if x >= self.width || y >= self.height {
            return None;
        }
        self.data
            .get(y as usize * self.width as usize + x as usize)
            .copied()
    }

    /// Bilinear resize to `width × height` (pixel centres aligned, edges clamped), e.g. to the
    /// camera frame's size. An empty mask for a zero size.
    pub fn resized(&self, width: u32, height: u32) -> Mask {
        let mut data = Vec::with_capacity(width as usize * height as usize);
        if self.width == 0 || self.height == 0 || self.data.is_empty() {
            data.resize(width as usize * height as usize, 0.0);
            return Mask {
                width,
                height,
                data,
            };
        }
        let (sw, sh) = (self.width as usize, self.height as usize);
        let sx = self.width as f32 / width.max(1) as f32;
        let sy = self.height as f32 / height.max(1) as f32;
        let tap = |f: f32, n: usize| {
            let f = f.max(0.0);
            let i0 = (f.floor() as usize).min(n - 1);
            let i1 = (i0 + 1).min(n - 1);
            (i0, i1, f - f.floor())
        };
        for j in 0..height {
            let (y0, y1, ay) = tap((j as f32 + 0.5) * sy - 0.5, sh);
            for i in 0..width {
                let (x0, x1, ax) = tap((i as f32 + 0.5) * sx - 0.5, sw);
                let p = |x: usize, y: usize| self.data[y * sw + x];
                let top = p(x0, y0) + (p(x1, y0) - p(x0, y0)) * ax;
                let bottom = p(x0, y1) + (p(x1, y1) - p(x0, y1)) * ax;
                data.push(top + (bottom - top) * ay);
            }
        }
        Mask {
            width,
            height,
            data,
        }
    }

    /// The mask as 8-bit values (`round(v · 255)`), e.g. for an R8 texture.
    pub fn to_u8(&self) -> Vec<u8> {
        self.data
            .iter()
            .map(|&v| (v.clamp(0.0, 1.0) * 255.0 + 0.5) as u8)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_checks_size_and_clamps() {
        assert!(decode_mask(&[0.5; 3], 2, 2).is_err());
        let m = decode_mask(&[-1.0, 0.25, 2.0, f32::NAN], 2, 2).unwrap();
        assert_eq!(m.data, vec![0.0, 0.25, 1.0, 0.0]);
        assert_eq!(m.to_u8(), vec![0, 64, 255, 0]);
        assert_eq!(m.get(1, 0), Some(0.25));
        assert_eq!(m.get(2, 0), None);
    }

    #[test]
    fn resize_by_hand() {
        // 2x1 [0, 1] upscaled to 4x1: centres at src x = -0.25, 0.25, 0.75, 1.25 → 0, .25, .75, 1.
        let m = decode_mask(&[0.0, 1.0], 2, 1).unwrap().resized(4, 1);
        assert_eq!(m.data, vec![0.0, 0.25, 0.75, 1.0]);
        // Same size: unchanged.
        let m = decode_mask(&[0.1, 0.2, 0.3, 0.4], 2, 2).unwrap();
        assert_eq!(m.resized(2, 2), m);
        assert!(m.resized(0, 5).data.is_empty());
    }
}
