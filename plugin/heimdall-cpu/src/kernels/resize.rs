//! Bilinear resize (TFLite RESIZE_BILINEAR), NHWC, batch 1.
//!
//! Matches TFLite's reference kernel value for value: the same source coordinates (including
//! `half_pixel_centers`, whose negative coordinates clamp both neighbours to index 0), the same
//! weights and the same order of operations. Output rows are split over [`Par`].

use super::Par;

const MIN_VALUES_PER_PART: usize = 1 << 15;

/// Geometry and options of a bilinear resize.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResizeBilinear {
    /// Input height.
    pub in_h: usize,
    /// Input width.
    pub in_w: usize,
    /// Channels (of input and output).
    pub channels: usize,
    /// Output height.
    pub out_h: usize,
    /// Output width.
    pub out_w: usize,
    /// TFLite `align_corners`: corner pixels of input and output are aligned.
    pub align_corners: bool,
    /// TFLite `half_pixel_centers`: pixels are sampled at their centres.
    pub half_pixel_centers: bool,
}

/// Source coordinate, lower and upper neighbour of output index `v` (TFLite's
/// `ComputeInterpolationValues`).
#[inline]
fn interpolation(
    v: usize,
    scale: f32,
    half_pixel_centers: bool,
    input_size: usize,
) -> (f32, usize, usize) {
    let scaled = if half_pixel_centers {
        (v as f32 + 0.5) * scale - 0.5
    } else {
        v as f32 * scale
    };
    let lower = (scaled.floor() as i64).max(0) as usize;
    let upper = (scaled.ceil() as i64).min(input_size as i64 - 1).max(0) as usize;
    (scaled, lower, upper)
}

fn scale(input: usize, output: usize, align_corners: bool) -> f32 {
    if align_corners && output > 1 {
        (input - 1) as f32 / (output - 1) as f32
    } else {
        input as f32 / output as f32
    }
}

/// Resizes `input` (`[in_h, in_w, channels]`) into `output` (`[out_h, out_w, channels]`).
pub fn resize_bilinear(par: &Par, r: &ResizeBilinear, input: &[f32], output: &mut [f32]) {
    let c = r.channels;
    debug_assert_eq!(input.len(), r.in_h * r.in_w * c);
    let row_len = r.out_w * c;
    debug_assert_eq!(output.len(), r.out_h * row_len);
    if row_len == 0 || r.in_h == 0 || r.in_w == 0 {
        return;
    }
    let hs = scale(r.in_h, r.out_h, r.align_corners);
    let ws = scale(r.in_w, r.out_w, r.align_corners);
    let min_rows = MIN_VALUES_PER_PART.div_ceil(row_len);
    par.for_rows(output, row_len, min_rows, |rows, out| {
        for (y, out_row) in rows.zip(out.chunks_exact_mut(row_len)) {
            let (iy, y0, y1) = interpolation(y, hs, r.half_pixel_centers, r.in_h);
            let dy = iy - y0 as f32;
            let row0 = &input[y0 * r.in_w * c..(y0 + 1) * r.in_w * c];
            let row1 = &input[y1 * r.in_w * c..(y1 + 1) * r.in_w * c];
            for (x, o) in out_row.chunks_exact_mut(c).enumerate() {
                let (ix, x0, x1) = interpolation(x, ws, r.half_pixel_centers, r.in_w);
                let dx = ix - x0 as f32;
                let (p00, p10) = (&row0[x0 * c..][..c], &row1[x0 * c..][..c]);
                let (p01, p11) = (&row0[x1 * c..][..c], &row1[x1 * c..][..c]);
                for ch in 0..c {
                    o[ch] = p00[ch] * (1.0 - dy) * (1.0 - dx)
                        + p10[ch] * dy * (1.0 - dx)
                        + p01[ch] * (1.0 - dy) * dx
                        + p11[ch] * dy * dx;
                }
            }
        }
    });
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // naive references index on purpose
mod tests {
    use super::*;
    use crate::kernels::testutil::*;
    use proptest::prelude::*;

    /// Independent reference: source coordinate, clamped neighbours, lerp in f64.
    fn reference(r: &ResizeBilinear, input: &[f32]) -> Vec<f32> {
        let src = |v: usize, inp: usize, out: usize| -> f64 {
            if r.half_pixel_centers {
                (v as f64 + 0.5) * (inp as f64 / out as f64) - 0.5
            } else if r.align_corners && out > 1 {
                v as f64 * ((inp - 1) as f64 / (out - 1) as f64)
            } else {
                v as f64 * (inp as f64 / out as f64)
            }
        };
        let mut out = vec![0.0; r.out_h * r.out_w * r.channels];
        for y in 0..r.out_h {
            let sy = src(y, r.in_h, r.out_h);
            let y0 = (sy.floor().max(0.0) as usize).min(r.in_h - 1);
            let y1 = (sy.ceil().max(0.0) as usize).min(r.in_h - 1);
            let fy = sy - y0 as f64;
            for x in 0..r.out_w {
                let sx = src(x, r.in_w, r.out_w);
                let x0 = (sx.floor().max(0.0) as usize).min(r.in_w - 1);
                let x1 = (sx.ceil().max(0.0) as usize).min(r.in_w - 1);
                let fx = sx - x0 as f64;
                for ch in 0..r.channels {
                    let at =
                        |yy: usize, xx: usize| input[(yy * r.in_w + xx) * r.channels + ch] as f64;
                    let top = at(y0, x0) * (1.0 - fx) + at(y0, x1) * fx;
                    let bottom = at(y1, x0) * (1.0 - fx) + at(y1, x1) * fx;
                    out[(y * r.out_w + x) * r.channels + ch] =
                        (top * (1.0 - fy) + bottom * fy) as f32;
                }
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn resize_matches_reference(in_h in 1..9usize, in_w in 1..9usize, channels in 1..7usize, out_h in 1..20usize, out_w in 1..20usize, mode in 0..3u8, seed in 0u64..1000) {
            let r = ResizeBilinear { in_h, in_w, channels, out_h, out_w, align_corners: mode == 1, half_pixel_centers: mode == 2 };
            let input = data(seed, in_h * in_w * channels);
            let mut out = vec![f32::NAN; out_h * out_w * channels];
            resize_bilinear(&Par::new(1), &r, &input, &mut out);
            assert_close(&out, &reference(&r, &input));
        }
    }

    #[test]
    fn half_pixel_centers_2x2_to_4x4_hand_computed() {
        // Source rows/cols: -0.25 (clamped to 0), 0.25, 0.75, 1.25 (upper clamped to 1).
        let r = ResizeBilinear {
            in_h: 2,
            in_w: 2,
            channels: 1,
            out_h: 4,
            out_w: 4,
            align_corners: false,
            half_pixel_centers: true,
        };
        let mut out = vec![0.0; 16];
        resize_bilinear(&Par::new(1), &r, &[1.0, 2.0, 3.0, 4.0], &mut out);
        #[rustfmt::skip]
        let expected = [
            1.0, 1.25, 1.75, 2.0,
            1.5, 1.75, 2.25, 2.5,
            2.5, 2.75, 3.25, 3.5,
            3.0, 3.25, 3.75, 4.0,
        ];
        assert_eq!(out, expected);
    }

    #[test]
    fn align_corners_2x2_to_3x3_hand_computed() {
        let r = ResizeBilinear {
            in_h: 2,
            in_w: 2,
            channels: 1,
            out_h: 3,
            out_w: 3,
            align_corners: true,
            half_pixel_centers: false,
        };
        let mut out = vec![0.0; 9];
        resize_bilinear(&Par::new(1), &r, &[1.0, 2.0, 3.0, 4.0], &mut out);
        assert_eq!(out, [1.0, 1.5, 2.0, 2.0, 2.5, 3.0, 3.0, 3.5, 4.0]);
    }
}
