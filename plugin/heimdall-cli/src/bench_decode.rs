//! `bench --conv-cache --decode KIND`: whether the cache changes what the app sees, by decoding
//! the cached and the uncached outputs of the same input as the vision pipelines do
//! (heimdall-vision: BlazeFace for faces, the palm SSD for hands, a 0.5 threshold for masks)
//! and comparing the results.

use heimdall_vision::{BlazeFaceDecoder, Detection, hands::palm_decoder};

/// What the outputs are decoded as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DecodeKind {
    /// face_detection_short_range: boxes after weighted NMS.
    Faces,
    /// palm_detection: boxes after weighted NMS.
    Palms,
    /// A segmentation mask (output 0, probabilities): foreground where > 0.5.
    Mask,
}

impl DecodeKind {
    /// The name printed in the output.
    pub fn label(self) -> &'static str {
        match self {
            DecodeKind::Faces => "faces",
            DecodeKind::Palms => "palms",
            DecodeKind::Mask => "mask",
        }
    }
}

/// How well two decoded results agree.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Agreement {
    /// Detections: the smallest best-match IoU of an uncached detection among the cached ones
    /// (1 when both are empty, 0 when one is); masks: the foreground IoU (1 when both empty).
    pub iou: f64,
    /// Whether both found as many detections (always true for masks).
    pub same_count: bool,
}

fn detections(kind: DecodeKind, out: &[Vec<f32>]) -> anyhow::Result<Vec<Detection>> {
    let [reg, scores, ..] = out else {
        anyhow::bail!("decoding {} needs two outputs", kind.label());
    };
    Ok(match kind {
        DecodeKind::Faces => BlazeFaceDecoder::short_range().decode(reg, scores)?,
        _ => palm_decoder().decode(reg, scores)?,
    })
}

/// Decodes `cached` and `plain` (the outputs of one input) and compares them.
pub fn compare(
    kind: DecodeKind,
    cached: &[Vec<f32>],
    plain: &[Vec<f32>],
) -> anyhow::Result<Agreement> {
    if kind == DecodeKind::Mask {
        let (Some(a), Some(b)) = (cached.first(), plain.first()) else {
            anyhow::bail!("decoding a mask needs an output");
        };
        let (mut inter, mut union) = (0usize, 0usize);
        for (x, y) in a.iter().zip(b) {
            let (p, q) = (*x > 0.5, *y > 0.5);
            inter += usize::from(p && q);
            union += usize::from(p || q);
        }
        let iou = if union == 0 {
            1.0
        } else {
            inter as f64 / union as f64
        };
        return Ok(Agreement {
            iou,
            same_count: true,
        });
    }
    let (a, b) = (detections(kind, cached)?, detections(kind, plain)?);
    let iou = if a.is_empty() && b.is_empty() {
        1.0
    } else {
        b.iter()
            .map(|d| {
                a.iter()
                    .map(|c| f64::from(c.bbox.iou(&d.bbox)))
                    .fold(0.0, f64::max)
            })
            .fold(if b.is_empty() { 0.0 } else { 1.0 }, f64::min)
    };
    Ok(Agreement {
        iou,
        same_count: a.len() == b.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_compare_by_foreground_iou() {
        let a = vec![vec![0.9, 0.9, 0.1, 0.1]];
        let b = vec![vec![0.9, 0.1, 0.1, 0.9]];
        let g = compare(DecodeKind::Mask, &a, &b).unwrap();
        assert!((g.iou - 1.0 / 3.0).abs() < 1e-9);
        assert_eq!(compare(DecodeKind::Mask, &a, &a).unwrap().iou, 1.0);
        assert!(compare(DecodeKind::Faces, &a, &b).is_err());
    }
}
