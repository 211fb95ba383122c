//! RESIZE of an NHWC tensor (batch 1). TFLite's RESIZE_BILINEAR (the scale taken from the
//! sizes) runs TFLite's reference kernel value for value: the same source coordinates
//! (including `half_pixel_centers`, whose negative coordinates clamp both neighbours to index
//! 0), the same weights and the same order of operations, output rows split over [`Par`]. Every
//! other resize (ONNX: nearest, linear, cubic, any coordinate mode) is separable, with the
//! coordinate arithmetic resolved once per axis into taps by the IR
//! ([`heimdall_ir::ops::resize`]).
//!
//! A separable resize followed by a `PAD_REFLECT` that the CPU fused into it (`crate::fuse`)
//! writes the padded image: its padded rows and columns take the taps of the rows and columns
//! they mirror ([`mirrored`]), so the border costs what the interior does, per value.
//!
//! Dispatch: [`prepare`] picks the TFLite kernel, the two-tap or the four-tap kernel.

use heimdall_ir::ops::resize::{
    Tap, Tap4, axis_taps, cubic_taps, size_ratio, tflite_interpolation,
};
use heimdall_ir::{ResizeAttrs, ResizeMode};

use crate::kernels::Par;
use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

/// Output values a part must have at least before rows are split: about 7 µs of work (a
/// value costs ~0.8 ns on one core, seven multiplies and three adds after the coordinate
/// arithmetic), as the convolutions' thresholds.
const MIN_VALUES_PER_PART: usize = 1 << 13;

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

/// Resizes `input` (`[in_h, in_w, channels]`) into `output` (`[out_h, out_w, channels]`).
pub fn resize_bilinear(par: &Par, r: &ResizeBilinear, input: &[f32], output: &mut [f32]) {
    let ws = size_ratio(r.in_w, r.out_w, r.align_corners);
    let col = |x: usize| {
        let (ix, x0, x1) = tflite_interpolation(x, ws, r.half_pixel_centers, r.in_w);
        (x0, x1, ix - x0 as f32)
    };
    bilinear(par, r, input, output, col);
}

/// [`resize_bilinear`] with the source columns of each output column from `col(x)`: `(x0,
/// x1, dx)`, TFLite's lower and upper neighbours and the fraction.
fn bilinear(
    par: &Par,
    r: &ResizeBilinear,
    input: &[f32],
    output: &mut [f32],
    col: impl Fn(usize) -> (usize, usize, f32) + Sync,
) {
    let c = r.channels;
    debug_assert_eq!(input.len(), r.in_h * r.in_w * c);
    let row_len = r.out_w * c;
    debug_assert_eq!(output.len(), r.out_h * row_len);
    if row_len == 0 || r.in_h == 0 || r.in_w == 0 {
        return;
    }
    assert!(
        input.len() >= r.in_h * r.in_w * c,
        "resize: input too short"
    );
    let hs = size_ratio(r.in_h, r.out_h, r.align_corners);
    let min_rows = MIN_VALUES_PER_PART.div_ceil(row_len);
    par.for_rows(output, row_len, min_rows, |rows, out| {
        crate::kernels::isa::widest(|| {
            for (y, out_row) in rows.zip(out.chunks_exact_mut(row_len)) {
                let (iy, y0, y1) = tflite_interpolation(y, hs, r.half_pixel_centers, r.in_h);
                let dy = iy - y0 as f32;
                let row0 = &input[y0 * r.in_w * c..(y0 + 1) * r.in_w * c];
                let row1 = &input[y1 * r.in_w * c..(y1 + 1) * r.in_w * c];
                let (ay, by) = (1.0 - dy, dy);
                for (x, o) in out_row.chunks_exact_mut(c).enumerate() {
                    let (x0, x1, dx) = col(x);
                    let (ax, bx) = (1.0 - dx, dx);
                    let (p00, p10) = (&row0[x0 * c..][..c], &row1[x0 * c..][..c]);
                    let (p01, p11) = (&row0[x1 * c..][..c], &row1[x1 * c..][..c]);
                    // TFLite's reference kernel, operation for operation.
                    for ((((o, a), b), d), e) in o.iter_mut().zip(p00).zip(p10).zip(p01).zip(p11) {
                        *o = a * ay * ax + b * by * ax + d * ay * bx + e * by * bx;
                    }
                }
            }
        });
    });
}

/// A TFLite RESIZE_BILINEAR with its source columns resolved once, at preparation.
struct TfliteBilinear {
    r: ResizeBilinear,
    cols: Vec<(usize, usize, f32)>,
}

impl TfliteBilinear {
    fn new(r: ResizeBilinear) -> TfliteBilinear {
        let ws = size_ratio(r.in_w, r.out_w, r.align_corners);
        let cols = (0..r.out_w)
            .map(|x| {
                let (ix, x0, x1) = tflite_interpolation(x, ws, r.half_pixel_centers, r.in_w);
                (x0, x1, ix - x0 as f32)
            })
            .collect();
        TfliteBilinear { r, cols }
    }
}

impl Kernel for TfliteBilinear {
    fn run(&self, io: StepIo<'_>) {
        bilinear(io.par, &self.r, io.inputs.get(0), io.out, |x| self.cols[x]);
    }
}

/// Splits `output`'s `n_rows` rows of `row_len` values over `par` in parts of at least
/// `MIN_VALUES_PER_PART` values: `f(rows, their output)`.
fn split_rows(
    par: &Par,
    output: &mut [f32],
    n_rows: usize,
    row_len: usize,
    f: impl Fn(std::ops::Range<usize>, &mut [f32]) + Sync,
) {
    debug_assert_eq!(output.len(), n_rows * row_len);
    if row_len == 0 {
        return;
    }
    par.for_rows(output, row_len, MIN_VALUES_PER_PART.div_ceil(row_len), f);
}

/// `output [oh, ow, c]` from `input [ih, iw, c]` with four-tap row and column weights
/// (`rows.len()` by `cols.len()` outputs), output rows split over `par`.
pub fn resize_four_tap(
    par: &Par,
    input: &[f32],
    in_w: usize,
    c: usize,
    rows: &[Tap4],
    cols: &[Tap4],
    output: &mut [f32],
) {
    let row_len = cols.len() * c;
    split_rows(par, output, rows.len(), row_len, |ys, out| {
        let mut row = [0f32; 64];
        for (r, out_row) in rows[ys].iter().zip(out.chunks_exact_mut(row_len)) {
            for (t, o) in cols.iter().zip(out_row.chunks_exact_mut(c)) {
                // Channels in pieces of `row`'s length: each value's sums in the same order.
                for c0 in (0..c).step_by(row.len()) {
                    let n = row.len().min(c - c0);
                    let (o, row) = (&mut o[c0..c0 + n], &mut row[..n]);
                    o.fill(0.0);
                    for ky in 0..4 {
                        row.fill(0.0);
                        for kx in 0..4 {
                            let src = &input[(r.idx[ky] * in_w + t.idx[kx]) * c + c0..][..n];
                            for (acc, v) in row.iter_mut().zip(src) {
                                *acc += t.w[kx] * v;
                            }
                        }
                        for (acc, v) in o.iter_mut().zip(row.iter()) {
                            *acc += r.w[ky] * v;
                        }
                    }
                }
            }
        }
    });
}

/// `output [oh, ow, c]` from `input [ih, iw, c]` with the given row and column taps
/// (`rows.len()` by `cols.len()` outputs), output rows split over `par`.
pub fn resize_two_tap(
    par: &Par,
    input: &[f32],
    in_w: usize,
    c: usize,
    rows: &[Tap],
    cols: &[Tap],
    output: &mut [f32],
) {
    let row_len = cols.len() * c;
    split_rows(par, output, rows.len(), row_len, |ys, out| {
        crate::kernels::isa::widest(|| {
            for (r, out_row) in rows[ys].iter().zip(out.chunks_exact_mut(row_len)) {
                two_tap_row(input, in_w, c, r, cols, out_row);
            }
        });
    });
}

/// One output row of [`resize_two_tap`]: source rows `r.i0` and `r.i1` of `input`.
#[inline(always)]
fn two_tap_row(input: &[f32], in_w: usize, c: usize, r: &Tap, cols: &[Tap], out_row: &mut [f32]) {
    for (t, o) in cols.iter().zip(out_row.chunks_exact_mut(c)) {
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

/// `output [oh, ow, c]` from `input [ih, iw, c]` (`in_w`, `c`) with row and column taps `T`,
/// output rows split over `par`: [`resize_two_tap`] or [`resize_four_tap`].
type ResizeFn<T> = fn(&Par, &[f32], usize, usize, &[T], &[T], &mut [f32]);

/// The taps of one output position along an axis, and the kernel that resizes with them.
trait AxisTap: Copy + Send + Sync + 'static {
    /// The kernel of these taps.
    const RESIZE: ResizeFn<Self>;
}

impl AxisTap for Tap {
    const RESIZE: ResizeFn<Tap> = resize_two_tap;
}

impl AxisTap for Tap4 {
    const RESIZE: ResizeFn<Tap4> = resize_four_tap;
}

/// A separable resize: two-tap ([`Tap`]: nearest, linear) or four-tap ([`Tap4`]: bicubic).
struct Separable<T> {
    in_w: usize,
    channels: usize,
    rows: Vec<T>,
    cols: Vec<T>,
}

impl<T: AxisTap> Kernel for Separable<T> {
    fn run(&self, io: StepIo<'_>) {
        let x = io.inputs.get(0);
        T::RESIZE(
            io.par,
            x,
            self.in_w,
            self.channels,
            &self.rows,
            &self.cols,
            io.out,
        );
    }
}

/// The taps of an axis of `taps.len()` outputs reflect-padded by `pad` (`[before, after]`, each
/// less than the axis): output `i` of the padded axis takes the taps of output `i - before`
/// mirrored at the axis' ends without repeating them.
fn mirrored<T: Copy>(taps: &[T], pad: [usize; 2]) -> Vec<T> {
    let n = taps.len() as isize;
    (0..taps.len() + pad[0] + pad[1])
        .map(|i| {
            let j = i as isize - pad[0] as isize;
            let j = if j < 0 {
                -j
            } else if j >= n {
                2 * (n - 1) - j
            } else {
                j
            };
            taps[j as usize]
        })
        .collect()
}

/// Prepares a RESIZE; a separable one that took over the `PAD_REFLECT` after it
/// ([`PrepareCx::pad_output`]) writes the padded image, whose shape its output has.
pub(crate) fn prepare(cx: &PrepareCx, a: &ResizeAttrs) -> Result<Prepared, String> {
    let x = cx.shape(0);
    let mut out = cx.out4();
    let [rows_pad, cols_pad] = cx.pad_output.unwrap_or_default();
    out[1] = out[1].saturating_sub(rows_pad[0] + rows_pad[1]);
    out[2] = out[2].saturating_sub(cols_pad[0] + cols_pad[1]);
    if rows_pad[0].max(rows_pad[1]) >= out[1].max(1)
        || cols_pad[0].max(cols_pad[1]) >= out[2].max(1)
    {
        return Err(format!(
            "reflect padding {:?} of a {out:?} resize",
            cx.pad_output
        ));
    }
    if let Some((align_corners, half_pixel_centers)) = a.tflite_flags() {
        if cx.pad_output.is_some() {
            return Err("a reflect pad fused into a TFLite bilinear resize".into());
        }
        return Ok(Prepared::new(TfliteBilinear::new(ResizeBilinear {
            in_h: x[1],
            in_w: x[2],
            channels: x[3],
            out_h: out[1],
            out_w: out[2],
            align_corners,
            half_pixel_centers,
        })));
    }
    let (sh, sw) = (a.axis_scale(0, x[1], out[1]), a.axis_scale(1, x[2], out[2]));
    if let ResizeMode::Cubic {
        a: coef,
        exclude_outside,
    } = a.mode
    {
        let rows = cubic_taps(x[1], out[1], sh, a.coord, coef, exclude_outside);
        let cols = cubic_taps(x[2], out[2], sw, a.coord, coef, exclude_outside);
        return Ok(Prepared::new(Separable {
            in_w: x[2],
            channels: x[3],
            rows: mirrored(&rows, rows_pad),
            cols: mirrored(&cols, cols_pad),
        }));
    }
    let rows = axis_taps(x[1], out[1], sh, a.coord, a.mode);
    let cols = axis_taps(x[2], out[2], sw, a.coord, a.mode);
    Ok(Prepared::new(Separable {
        in_w: x[2],
        channels: x[3],
        rows: mirrored(&rows, rows_pad),
        cols: mirrored(&cols, cols_pad),
    }))
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // naive references index on purpose
mod bilinear_tests {
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

#[cfg(test)]
mod tap_tests {
    use super::*;
    use crate::kernels::testutil::{assert_close, data};
    use heimdall_ir::ops::resize::{axis_taps, cubic_taps};
    use heimdall_ir::{CoordMode, NearestMode, ResizeMode};

    /// A resize writing a reflect-padded image is, bit for bit, the resize padded by the pad
    /// kernel (checked against NumPy in `pad.rs`), for two-tap and four-tap taps.
    #[test]
    fn mirrored_taps_give_the_padded_resize() {
        use crate::kernels::Par;
        use crate::ops::pad::{Fill, pad_with};
        let (ih, iw, c, oh, ow) = (4, 5, 3, 8, 10);
        let x = data(3, ih * iw * c);
        let (sy, sx) = (2.0, 2.0);
        for (pad_r, pad_c) in [([1, 1], [1, 1]), ([4, 2], [0, 3]), ([7, 7], [9, 9])] {
            let (ph, pw) = (oh + pad_r[0] + pad_r[1], ow + pad_c[0] + pad_c[1]);
            let pads = [(0, 0), (pad_r[0], pad_r[1]), (pad_c[0], pad_c[1]), (0, 0)];
            // The reference: the dense resize padded by the pad kernel.
            let padded = |dense: &[f32]| {
                let mut want = vec![f32::NAN; ph * pw * c];
                let shape = [1, oh, ow, c];
                pad_with(&Par::new(1), dense, &shape, &pads, Fill::Reflect, &mut want);
                want
            };
            for mode in [ResizeMode::Nearest(NearestMode::Floor), ResizeMode::Linear] {
                let rows = axis_taps(ih, oh, sy, CoordMode::HalfPixel, mode);
                let cols = axis_taps(iw, ow, sx, CoordMode::HalfPixel, mode);
                let mut dense = vec![f32::NAN; oh * ow * c];
                resize_two_tap(&Par::new(1), &x, iw, c, &rows, &cols, &mut dense);
                let want = padded(&dense);
                let (pr, pc) = (mirrored(&rows, pad_r), mirrored(&cols, pad_c));
                let mut got = vec![f32::NAN; want.len()];
                resize_two_tap(&Par::new(1), &x, iw, c, &pr, &pc, &mut got);
                assert_eq!(got, want, "{mode:?} {pad_r:?} {pad_c:?}");
            }
            let rows = cubic_taps(ih, oh, sy, CoordMode::HalfPixel, -0.75, false);
            let cols = cubic_taps(iw, ow, sx, CoordMode::HalfPixel, -0.75, false);
            let mut dense = vec![f32::NAN; oh * ow * c];
            resize_four_tap(&Par::new(1), &x, iw, c, &rows, &cols, &mut dense);
            let want = padded(&dense);
            let mut got = vec![f32::NAN; want.len()];
            let (pr, pc) = (mirrored(&rows, pad_r), mirrored(&cols, pad_c));
            resize_four_tap(&Par::new(1), &x, iw, c, &pr, &pc, &mut got);
            assert_eq!(got, want, "cubic {pad_r:?} {pad_c:?}");
        }
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
        resize_four_tap(&Par::new(1), &x, 6, 1, &rows, &cols, &mut out);
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
        resize_two_tap(&Par::new(1), &x, iw, c, &rows, &cols, &mut out);
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
