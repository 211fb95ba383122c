//! Separable two-tap resize of an NHWC tensor (batch 1): nearest and bilinear with any ONNX
//! coordinate transformation. The coordinate arithmetic is resolved once per axis into taps.

use heimdall_ir::{CoordMode, NearestMode, ResizeMode};

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

/// Along one axis, output position `i` reads `sum_k w[k] * x[idx[k]]` (four taps).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tap4 {
    /// Input indices.
    pub idx: [usize; 4],
    /// Weights.
    pub w: [f32; 4],
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

/// `output [oh, ow, c]` from `input [ih, iw, c]` with four-tap row and column weights.
pub fn resize4(
    input: &[f32],
    in_w: usize,
    c: usize,
    rows: &[Tap4],
    cols: &[Tap4],
    output: &mut [f32],
) {
    let ow = cols.len();
    let mut row = vec![0f32; c];
    for (oy, r) in rows.iter().enumerate() {
        for (ox, t) in cols.iter().enumerate() {
            let o = &mut output[(oy * ow + ox) * c..][..c];
            o.fill(0.0);
            for ky in 0..4 {
                row.fill(0.0);
                for kx in 0..4 {
                    let src = &input[(r.idx[ky] * in_w + t.idx[kx]) * c..][..c];
                    for (acc, v) in row.iter_mut().zip(src) {
                        *acc += t.w[kx] * v;
                    }
                }
                for (acc, v) in o.iter_mut().zip(&row) {
                    *acc += r.w[ky] * v;
                }
            }
        }
    }
}

/// `output [oh, ow, c]` from `input [ih, iw, c]` with the given row and column taps.
pub fn resize(
    input: &[f32],
    in_w: usize,
    c: usize,
    rows: &[Tap],
    cols: &[Tap],
    output: &mut [f32],
) {
    let ow = cols.len();
    for (oy, r) in rows.iter().enumerate() {
        for (ox, t) in cols.iter().enumerate() {
            let o = &mut output[(oy * ow + ox) * c..][..c];
            let at = |y: usize, x: usize| &input[(y * in_w + x) * c..][..c];
            let (a, b, cc, d) = (
                at(r.i0, t.i0),
                at(r.i0, t.i1),
                at(r.i1, t.i0),
                at(r.i1, t.i1),
            );
            for k in 0..c {
                let top = a[k] + (b[k] - a[k]) * t.w;
                let bottom = cc[k] + (d[k] - cc[k]) * t.w;
                o[k] = top + (bottom - top) * r.w;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::{assert_close, data};

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
    fn cubic_taps_interpolate_and_sum_to_one() {
        // Integer source positions reproduce the sample; weights always sum to 1.
        let t = cubic_taps(4, 8, 2.0, CoordMode::Asymmetric, -0.75, false);
        assert_eq!(t[2].w, [0.0, 1.0, 0.0, 0.0]);
        assert_eq!(t[2].idx, [0, 1, 2, 3]);
        for tap in cubic_taps(5, 3, 0.6, CoordMode::HalfPixel, -0.5, true) {
            assert!((tap.w.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        }
        // A linear ramp stays linear inside the input (cubic reproduces degree-1 polynomials).
        let x: Vec<f32> = (0..6).map(|v| v as f32).collect();
        let rows = cubic_taps(1, 1, 1.0, CoordMode::Asymmetric, -0.75, false);
        let cols = cubic_taps(6, 12, 2.0, CoordMode::Asymmetric, -0.75, false);
        let mut out = vec![0.0; 12];
        resize4(&x, 6, 1, &rows, &cols, &mut out);
        for (i, v) in out.iter().enumerate().take(9).skip(2) {
            assert!((v - i as f32 / 2.0).abs() < 1e-5, "{i}: {v}");
        }
    }

    #[test]
    fn bilinear_half_pixel_matches_reference() {
        let (ih, iw, c, oh, ow) = (5, 4, 3, 9, 7);
        let x = data(1, ih * iw * c);
        let (sy, sx) = (oh as f32 / ih as f32, ow as f32 / iw as f32);
        let rows = axis_taps(ih, oh, sy, CoordMode::HalfPixel, ResizeMode::Linear);
        let cols = axis_taps(iw, ow, sx, CoordMode::HalfPixel, ResizeMode::Linear);
        let mut out = vec![0.0; oh * ow * c];
        resize(&x, iw, c, &rows, &cols, &mut out);
        // Reference: direct formula per output value in f64.
        let mut reference = vec![0.0; out.len()];
        for oy in 0..oh {
            for ox in 0..ow {
                let fy = ((oy as f64 + 0.5) / sy as f64 - 0.5).clamp(0.0, (ih - 1) as f64);
                let fx = ((ox as f64 + 0.5) / sx as f64 - 0.5).clamp(0.0, (iw - 1) as f64);
                let (y0, x0) = (fy.floor() as usize, fx.floor() as usize);
                let (y1, x1) = ((y0 + 1).min(ih - 1), (x0 + 1).min(iw - 1));
                let (wy, wx) = (fy - y0 as f64, fx - x0 as f64);
                for k in 0..c {
                    let v = |y: usize, xx: usize| x[(y * iw + xx) * c + k] as f64;
                    reference[(oy * ow + ox) * c + k] = ((1.0 - wy)
                        * ((1.0 - wx) * v(y0, x0) + wx * v(y0, x1))
                        + wy * ((1.0 - wx) * v(y1, x0) + wx * v(y1, x1)))
                        as f32;
                }
            }
        }
        assert_close(&out, &reference);
    }
}
