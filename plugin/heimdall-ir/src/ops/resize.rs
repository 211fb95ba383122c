//! RESIZE of `x [1,H,W,C]` to the output's H and W: nearest, bilinear or bicubic, with ONNX's
//! coordinate transformations; TFLite's RESIZE_BILINEAR is the bilinear resize whose
//! `align_corners`/`half_pixel_centers` flags are the coordinate modes
//! [`CoordMode::AlignCorners`]/[`CoordMode::HalfPixel`] (neither: [`CoordMode::Asymmetric`])
//! with the scale taken from the sizes ([`ResizeScale::Sizes`]).
//!
//! The coordinate arithmetic lives here, as pure functions both backends call: TFLite's
//! per-index interpolation ([`tflite_interpolation`]) and ONNX's per-axis taps ([`axis_taps`],
//! [`cubic_taps`]).

use serde::Serialize;

use crate::shape::{OpShapes, need_rank};

/// How an output coordinate maps to an input coordinate (ONNX
/// `coordinate_transformation_mode`; `scale` is output / input).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum CoordMode {
    /// `(x + 0.5) / scale - 0.5`.
    HalfPixel,
    /// Like `HalfPixel`, but 0 where the output length is 1.
    PytorchHalfPixel,
    /// `x * (in - 1) / (out - 1)`.
    AlignCorners,
    /// `x / scale`.
    Asymmetric,
    /// `(x + 0.5) / scale`.
    TfHalfPixelForNn,
    /// Half-pixel, re-centred where the output length was rounded (ONNX opset 19).
    HalfPixelSymmetric,
}

/// How a nearest-neighbour resize rounds a fractional input coordinate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum NearestMode {
    /// Round half down (`ceil(x - 0.5)`).
    RoundPreferFloor,
    /// Round half up (`floor(x + 0.5)`).
    RoundPreferCeil,
    /// `floor(x)`.
    Floor,
    /// `ceil(x)`.
    Ceil,
}

/// Interpolation of a resize.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum ResizeMode {
    /// Nearest neighbour with the given rounding.
    Nearest(NearestMode),
    /// Bilinear.
    Linear,
    /// Bicubic (Keys) with coefficient `a`; `exclude_outside` drops (and renormalises) taps
    /// outside the input instead of repeating the edge.
    Cubic {
        /// The cubic coefficient (ONNX `cubic_coeff_a`, -0.75 by default).
        a: f32,
        /// ONNX `exclude_outside`.
        exclude_outside: bool,
    },
}

/// Where the scale of the coordinate transformation comes from.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum ResizeScale {
    /// The model's scales `[scale_h, scale_w]` (output / input: ONNX `scales`, or the ratio of
    /// the `sizes` it states); coordinates divide by them in f32, as ONNX Runtime does.
    Given([f32; 2]),
    /// The ratio of the tensor sizes, input / output (with [`CoordMode::AlignCorners`] and
    /// more than one output: (input - 1) / (output - 1)), computed in f32 and multiplied, as
    /// TFLite's RESIZE_BILINEAR does. Only with [`ResizeMode::Linear`] and the coordinate modes
    /// [`CoordMode::AlignCorners`], [`CoordMode::HalfPixel`] and [`CoordMode::Asymmetric`].
    Sizes,
}

/// Attributes of a resize of `x [1,H,W,C]`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ResizeAttrs {
    /// Interpolation.
    pub mode: ResizeMode,
    /// Coordinate transformation.
    pub coord: CoordMode,
    /// Where the transformation's scale comes from.
    pub scale: ResizeScale,
}

impl ResizeAttrs {
    /// TFLite's RESIZE_BILINEAR with its `align_corners` and `half_pixel_centers` flags (TFLite
    /// and TensorFlow reject both set together: so does this).
    pub fn tflite_bilinear(align_corners: bool, half_pixel_centers: bool) -> Result<Self, String> {
        let coord = match (align_corners, half_pixel_centers) {
            (false, false) => CoordMode::Asymmetric,
            (true, false) => CoordMode::AlignCorners,
            (false, true) => CoordMode::HalfPixel,
            (true, true) => {
                return Err("align_corners and half_pixel_centers are both set".into());
            }
        };
        Ok(ResizeAttrs {
            mode: ResizeMode::Linear,
            coord,
            scale: ResizeScale::Sizes,
        })
    }

    /// TFLite's flags `(align_corners, half_pixel_centers)` when this is TFLite's
    /// RESIZE_BILINEAR (the scale comes from the sizes), else `None`.
    pub fn tflite_flags(&self) -> Option<(bool, bool)> {
        match self.scale {
            ResizeScale::Sizes => Some((
                self.coord == CoordMode::AlignCorners,
                self.coord == CoordMode::HalfPixel,
            )),
            ResizeScale::Given(_) => None,
        }
    }

    /// The scale (output / input) of axis `axis` (0: height, 1: width) resizing `input`
    /// values to `output` values, for the taps.
    pub fn axis_scale(&self, axis: usize, input: usize, output: usize) -> f32 {
        match self.scale {
            ResizeScale::Given(s) => s[axis],
            ResizeScale::Sizes => output as f32 / input as f32,
        }
    }

    /// A short upper-case name.
    pub fn name(&self) -> &'static str {
        match self.scale {
            ResizeScale::Sizes => "RESIZE_BILINEAR",
            ResizeScale::Given(_) => "RESIZE",
        }
    }
}

/// Output shape of a resize: the input's batch and channels, the declared output's H and W.
pub fn infer(a: &ResizeAttrs, io: &OpShapes) -> Result<Vec<usize>, String> {
    let (x, o) = (io.input(0)?, io.output(0)?);
    need_rank(x, 4, "input")?;
    need_rank(o, 4, "output")?;
    if a.scale == ResizeScale::Sizes
        && (a.mode != ResizeMode::Linear
            || !matches!(
                a.coord,
                CoordMode::AlignCorners | CoordMode::HalfPixel | CoordMode::Asymmetric
            ))
    {
        return Err(format!(
            "a scale taken from the sizes needs linear interpolation and align-corners, \
             half-pixel or asymmetric coordinates, not {:?} with {:?}",
            a.mode, a.coord
        ));
    }
    Ok(vec![x[0], o[1], o[2], x[3]])
}

/// Multiply-adds of a resize: four per output value.
pub fn macs(io: &OpShapes) -> u64 {
    io.output_numel() * 4
}

/// TFLite's ratio of an axis resized from `input` to `output` values: `(input - 1) /
/// (output - 1)` with aligned corners (and more than one output), else `input / output`, in
/// f32.
pub fn size_ratio(input: usize, output: usize, align_corners: bool) -> f32 {
    if align_corners && output > 1 {
        (input - 1) as f32 / (output - 1) as f32
    } else {
        input as f32 / output as f32
    }
}

/// Source coordinate, lower and upper neighbour of output index `v` along an axis of `input`
/// values (TFLite's `ComputeInterpolationValues`): with `half_pixel_centers` the coordinate is
/// `(v + 0.5) * ratio - 0.5`, whose negative values clamp both neighbours to index 0.
#[inline]
pub fn tflite_interpolation(
    v: usize,
    ratio: f32,
    half_pixel_centers: bool,
    input: usize,
) -> (f32, usize, usize) {
    let scaled = if half_pixel_centers {
        (v as f32 + 0.5) * ratio - 0.5
    } else {
        v as f32 * ratio
    };
    let lower = (scaled.floor() as i64).max(0) as usize;
    let upper = (scaled.ceil() as i64).min(input as i64 - 1).max(0) as usize;
    (scaled, lower, upper)
}

/// Along one axis, output position `i` reads `(1 - w) * x[i0] + w * x[i1]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tap {
    /// First input index.
    pub i0: usize,
    /// Second input index.
    pub i1: usize,
    /// Weight of the second.
    pub w: f32,
}

/// Along one axis, output position `i` reads `sum_k w[k] * x[idx[k]]` (four taps).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tap4 {
    /// Input indices.
    pub idx: [usize; 4],
    /// Weights.
    pub w: [f32; 4],
}

/// The input coordinate that output position `i` maps to along an axis, in ONNX's coordinate
/// conventions (f32 arithmetic, as ONNX Runtime).
fn source_coord(i: usize, input: usize, output: usize, scale: f32, coord: CoordMode) -> f32 {
    let x = i as f32;
    let last = input.saturating_sub(1);
    match coord {
        CoordMode::HalfPixel => (x + 0.5) / scale - 0.5,
        CoordMode::PytorchHalfPixel => {
            if output > 1 {
                (x + 0.5) / scale - 0.5
            } else {
                0.0
            }
        }
        CoordMode::AlignCorners => {
            // ONNX divides by the unrounded output length `input * scale`.
            let len = input as f32 * scale;
            if len > 1.0 {
                x * last as f32 / (len - 1.0)
            } else {
                0.0
            }
        }
        CoordMode::Asymmetric => x / scale,
        CoordMode::HalfPixelSymmetric => {
            let adjustment = output as f32 / (input as f32 * scale);
            let center = input as f32 / 2.0;
            center * (1.0 - adjustment) + (x + 0.5) / scale - 0.5
        }
        CoordMode::TfHalfPixelForNn => (x + 0.5) / scale,
    }
}

/// The taps of one axis of `input` values resized to `output` values with `scale`
/// (output / input, as the model states it), for nearest and linear modes (cubic modes use
/// [`cubic_taps`]; given one here, the taps are linear).
pub fn axis_taps(
    input: usize,
    output: usize,
    scale: f32,
    coord: CoordMode,
    mode: ResizeMode,
) -> Vec<Tap> {
    let last = input.saturating_sub(1);
    (0..output)
        .map(|i| {
            let orig = source_coord(i, input, output, scale, coord);
            let clamp = |v: f32| (v.max(0.0) as usize).min(last);
            match mode {
                ResizeMode::Nearest(n) => {
                    let r = match n {
                        NearestMode::RoundPreferFloor => {
                            if orig.fract() == 0.5 {
                                orig.floor()
                            } else {
                                orig.round()
                            }
                        }
                        NearestMode::RoundPreferCeil => orig.round(),
                        NearestMode::Floor => orig.floor(),
                        NearestMode::Ceil => orig.ceil(),
                    };
                    let j = clamp(r);
                    Tap {
                        i0: j,
                        i1: j,
                        w: 0.0,
                    }
                }
                ResizeMode::Linear | ResizeMode::Cubic { .. } => {
                    let o = orig.clamp(0.0, last as f32);
                    let f = o.floor();
                    Tap {
                        i0: clamp(f),
                        i1: clamp(f + 1.0),
                        w: o - f,
                    }
                }
            }
        })
        .collect()
}

/// Bicubic taps of one axis (ONNX `mode="cubic"`): Keys coefficients with `a`, edge-repeated
/// or (with `exclude_outside`) dropped and renormalised outside the input.
pub fn cubic_taps(
    input: usize,
    output: usize,
    scale: f32,
    coord: CoordMode,
    a: f32,
    exclude_outside: bool,
) -> Vec<Tap4> {
    let last = input.saturating_sub(1) as isize;
    (0..output)
        .map(|i| {
            let orig = source_coord(i, input, output, scale, coord);
            let f = orig.floor();
            let r = orig - f;
            let (p, q) = (r + 1.0, 2.0 - r);
            let mut w = [
                ((a * p - 5.0 * a) * p + 8.0 * a) * p - 4.0 * a,
                ((a + 2.0) * r - (a + 3.0)) * r * r + 1.0,
                ((a + 2.0) * (1.0 - r) - (a + 3.0)) * (1.0 - r) * (1.0 - r) + 1.0,
                ((a * q - 5.0 * a) * q + 8.0 * a) * q - 4.0 * a,
            ];
            let base = f as isize - 1;
            let mut idx = [0usize; 4];
            for k in 0..4 {
                let j = base + k as isize;
                if exclude_outside && !(0..=last).contains(&j) {
                    w[k] = 0.0;
                }
                idx[k] = j.clamp(0, last) as usize;
            }
            if exclude_outside {
                let sum: f32 = w.iter().sum();
                if sum != 0.0 {
                    w.iter_mut().for_each(|v| *v /= sum);
                }
            }
            Tap4 { idx, w }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_asymmetric_floor_repeats() {
        let t = axis_taps(
            3,
            6,
            2.0,
            CoordMode::Asymmetric,
            ResizeMode::Nearest(NearestMode::Floor),
        );
        let idx: Vec<usize> = t.iter().map(|t| t.i0).collect();
        assert_eq!(idx, vec![0, 0, 1, 1, 2, 2]);
    }

    #[test]
    fn tflite_flags_are_coordinate_modes() {
        for (ac, hp) in [(false, false), (true, false), (false, true)] {
            let a = ResizeAttrs::tflite_bilinear(ac, hp).unwrap();
            assert_eq!(a.tflite_flags(), Some((ac, hp)));
            assert_eq!(a.name(), "RESIZE_BILINEAR");
        }
        assert!(ResizeAttrs::tflite_bilinear(true, true).is_err());
    }
}
