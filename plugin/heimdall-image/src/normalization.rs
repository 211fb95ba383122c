//! Per-channel normalisation of camera pixels into a model's value range.

/// `out = pixel * scale + offset` per channel, with `pixel` in `[0, 1]` (the byte / 255) and
/// channels in RGBA order: what MediaPipe's `output_tensor_float_range` and ImageNet-style
/// mean/std normalisation both are.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Normalization {
    /// Multiplier per channel (R, G, B, A).
    pub scale: [f32; 4],
    /// Offset per channel (R, G, B, A).
    pub offset: [f32; 4],
}

impl Default for Normalization {
    fn default() -> Self {
        Normalization::ZERO_TO_ONE
    }
}

impl Normalization {
    /// `[-1, 1]`: `2 * pixel - 1` (MediaPipe's face, hand and pose detectors).
    pub const MINUS_ONE_TO_ONE: Normalization = Normalization {
        scale: [2.0; 4],
        offset: [-1.0; 4],
    };
    /// `[0, 1]`: the pixel as is (landmark models, selfie segmentation, style transfer).
    pub const ZERO_TO_ONE: Normalization = Normalization {
        scale: [1.0; 4],
        offset: [0.0; 4],
    };

    /// The range `[lo, hi]` on every channel (MediaPipe's `output_tensor_float_range`).
    pub fn range(lo: f32, hi: f32) -> Normalization {
        Normalization {
            scale: [hi - lo; 4],
            offset: [lo; 4],
        }
    }

    /// `(pixel - mean) / std` per channel, with `mean` and `std` in `[0, 1]` units (ImageNet:
    /// mean `[0.485, 0.456, 0.406]`, std `[0.229, 0.224, 0.225]`); alpha passes through.
    pub fn mean_std(mean: [f32; 3], std: [f32; 3]) -> Normalization {
        let mut n = Normalization::ZERO_TO_ONE;
        for c in 0..3 {
            n.scale[c] = 1.0 / std[c];
            n.offset[c] = -mean[c] / std[c];
        }
        n
    }

    /// Normalises a byte of channel `c` (0..4).
    pub fn apply(&self, c: usize, byte: u8) -> f32 {
        (f32::from(byte) / 255.0) * self.scale[c & 3] + self.offset[c & 3]
    }

    /// Whether every coefficient is finite (what the preprocessing accepts).
    pub fn is_finite(&self) -> bool {
        self.scale.iter().chain(&self.offset).all(|v| v.is_finite())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_by_hand() {
        let n = Normalization::MINUS_ONE_TO_ONE;
        assert_eq!(n.apply(0, 0), -1.0);
        assert_eq!(n.apply(1, 255), 1.0);
        assert_eq!(Normalization::range(-1.0, 1.0), n);
        let m = Normalization::mean_std([0.5, 0.5, 0.5], [0.25, 0.5, 1.0]);
        assert!((m.apply(0, 255) - 2.0).abs() < 1e-6);
        assert!((m.apply(1, 0) + 1.0).abs() < 1e-6);
        assert_eq!(m.apply(3, 255), 1.0, "alpha passes through");
        assert!(!Normalization::mean_std([0.0; 3], [0.0; 3]).is_finite());
    }
}
