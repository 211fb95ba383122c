//! The CPU reference of the camera-to-model-input preprocessing: affine crop, bilinear
//! resampling with a border, per-channel normalisation. The GPU kernel
//! (`heimdall_gpu::preprocess`, `shaders/preprocess.wgsl`) computes the same thing and is tested
//! against this function; the CPU backend and the CLI use it directly.
//!
//! Sampling (OpenCV's `warpAffine` with `INTER_LINEAR`, which MediaPipe's CPU
//! `ImageToTensorCalculator` uses): output pixel `(x, y)` has its centre at uv
//! `((x + 0.5) / W, (y + 0.5) / H)`; the crop maps it to a frame uv `s`; the four pixels around
//! `s * size - 0.5` (pixel centres at `i + 0.5`) are blended bilinearly; a tap outside the frame
//! reads the border (the nearest edge pixel, or a constant).

use super::crop::{Border, Crop};
use super::error::ImageError;
use super::normalization::Normalization;

/// Resamples the RGBA8 frame `rgba` (`width × height` pixels, rows top first) through `crop`
/// into a `[out_h, out_w, out_c]` f32 tensor (NHWC, batch 1, `out_c ≤ 4` channels in RGBA
/// order), normalised by `norm`.
pub fn resample(
    rgba: &[u8],
    width: usize,
    height: usize,
    crop: &Crop,
    norm: &Normalization,
    out_shape: [usize; 3],
) -> Result<Vec<f32>, ImageError> {
    let [out_h, out_w, out_c] = out_shape;
    let len = out_h
        .checked_mul(out_w)
        .and_then(|n| n.checked_mul(out_c))
        .ok_or_else(|| {
            ImageError::Parameters(format!("an output of {out_shape:?} is too large"))
        })?;
    let mut out = vec![0.0; len];
    resample_into(
        rgba,
        (width, height),
        crop,
        norm,
        out_shape,
        0..out_h,
        &mut out,
    )?;
    Ok(out)
}

/// The rows `rows` of [`resample`]'s output, into `out` (`rows.len() × out_w × out_c` values):
/// each the same bits as in the whole output, so that disjoint ranges can be computed on
/// several threads (`heimdall_cpu::CpuModel::fill_input`).
pub fn resample_into(
    rgba: &[u8],
    (width, height): (usize, usize),
    crop: &Crop,
    norm: &Normalization,
    out_shape: [usize; 3],
    rows: std::ops::Range<usize>,
    out: &mut [f32],
) -> Result<(), ImageError> {
    if !crop.is_finite() || !norm.is_finite() {
        return Err(ImageError::Parameters(format!(
            "the crop {crop:?} or the normalisation {norm:?} is not finite"
        )));
    }
    let [out_h, out_w, out_c] = out_shape;
    if width == 0
        || height == 0
        || width.checked_mul(height).and_then(|n| n.checked_mul(4)) != Some(rgba.len())
        || width > i32::MAX as usize
        || height > i32::MAX as usize
    {
        return Err(ImageError::Size {
            width: width.min(u32::MAX as usize) as u32,
            height: height.min(u32::MAX as usize) as u32,
            len: rgba.len(),
        });
    }
    if !(1..=4).contains(&out_c) {
        return Err(ImageError::Parameters(format!(
            "a model input takes 1 to 4 channels of an RGBA frame, not {out_c}"
        )));
    }
    if rows.start > rows.end
        || rows.end > out_h
        || out_w
            .checked_mul(out_c)
            .and_then(|n| n.checked_mul(rows.len()))
            != Some(out.len())
    {
        return Err(ImageError::Parameters(format!(
            "rows {rows:?} of a {out_shape:?} output do not fill {} values",
            out.len()
        )));
    }
    let src = Source::new(rgba, width, height, crop.border);
    let job = Job {
        src: &src,
        rows: crop.transform.to_rows(),
        norm,
        out_w,
        out_h,
    };
    match out_c {
        1 => job.run::<1>(rows, out),
        2 => job.run::<2>(rows, out),
        3 => job.run::<3>(rows, out),
        _ => job.run::<4>(rows, out),
    }
    Ok(())
}

/// The frame as the taps read it: bytes to `[0, 1]` through a table (the same division
/// `f32::from(byte) / 255.0` gives), the border for taps outside it.
struct Source<'a> {
    rgba: &'a [u8],
    width: usize,
    w: i32,
    h: i32,
    /// A constant border's value; `None`: clamp to the edge.
    constant: Option<[f32; 4]>,
    unit: [f32; 256],
}

impl<'a> Source<'a> {
    fn new(rgba: &'a [u8], width: usize, height: usize, border: Border) -> Self {
        Source {
            rgba,
            width,
            w: width as i32,
            h: height as i32,
            constant: match border {
                Border::Constant(v) => Some(v),
                Border::Clamp => None,
            },
            unit: std::array::from_fn(|b| f32::from(b as u8) / 255.0),
        }
    }

    /// Pixel `(x, y)`'s first `C` channels in `[0, 1]`; outside the frame, the border.
    #[inline]
    fn tap<const C: usize>(&self, x: i32, y: i32) -> [f32; C] {
        if let Some(v) = self.constant
            && (x < 0 || y < 0 || x >= self.w || y >= self.h)
        {
            return std::array::from_fn(|c| v[c]);
        }
        let at =
            (y.clamp(0, self.h - 1) as usize * self.width + x.clamp(0, self.w - 1) as usize) * 4;
        std::array::from_fn(|c| self.unit[usize::from(self.rgba[at + c])])
    }

    /// Pixels `(x, y)` and `(x + 1, y)` when both lie in the frame: read directly.
    #[inline]
    fn pair_inside<const C: usize>(&self, x: i32, y: i32) -> Option<([f32; C], [f32; C])> {
        if x < 0 || y < 0 || x + 1 >= self.w || y >= self.h {
            return None;
        }
        let at = (y as usize * self.width + x as usize) * 4;
        let px = |o: usize| std::array::from_fn(|c| self.unit[usize::from(self.rgba[at + o + c])]);
        Some((px(0), px(4)))
    }

    /// The taps `(x, y)` and `(x + 1, y)`.
    #[inline]
    fn pair<const C: usize>(&self, x: i32, y: i32) -> ([f32; C], [f32; C]) {
        self.pair_inside(x, y)
            .unwrap_or_else(|| (self.tap(x, y), self.tap(x + 1, y)))
    }
}

/// A sample position along one axis: the tap left of (above) it, saturated far outside the
/// frame (no overflow; the taps read the border there either way), and the weight of the next.
#[inline]
fn split(p: f32, limit: f32) -> (i32, f32) {
    let floor = p.floor();
    (floor.clamp(-limit, limit) as i32, p - floor)
}

/// `a + (b - a) * f`, per channel.
#[inline]
fn lerp<const C: usize>(a: [f32; C], b: [f32; C], f: f32) -> [f32; C] {
    std::array::from_fn(|c| a[c] + (b[c] - a[c]) * f)
}

/// One resampling: the frame, the crop's matrix, the normalisation and the output's size.
struct Job<'a> {
    src: &'a Source<'a>,
    rows: [f32; 6],
    norm: &'a Normalization,
    out_w: usize,
    out_h: usize,
}

impl Job<'_> {
    /// Output pixel `(x, y)`'s centre in model-input uv.
    fn uv(&self, x: usize, y: usize) -> (f32, f32) {
        (
            (x as f32 + 0.5) / self.out_w as f32,
            (y as f32 + 0.5) / self.out_h as f32,
        )
    }

    /// The pixel position `(px, py)` in the frame that output uv `(u, v)` samples.
    fn position(&self, u: f32, v: f32) -> (f32, f32) {
        let r = &self.rows;
        let s = r[0] * u + r[1] * v + r[2];
        let t = r[3] * u + r[4] * v + r[5];
        let src = self.src;
        (s * src.width as f32 - 0.5, t * src.h as f32 - 0.5)
    }

    fn limits(&self) -> (f32, f32) {
        (self.src.width as f32 + 2.0, self.src.h as f32 + 2.0)
    }

    /// The normalised value of channel `c`.
    #[inline]
    fn normalise(&self, pixel: f32, c: usize) -> f32 {
        pixel * self.norm.scale[c] + self.norm.offset[c]
    }

    /// Output rows `ys` into `out`.
    fn run<const C: usize>(&self, ys: std::ops::Range<usize>, out: &mut [f32]) {
        // Without rotation or shear, a column's frame x and a row's frame y are the same on
        // every row and column: the bilinear blend separates.
        if self.rows[1] == 0.0 && self.rows[3] == 0.0 {
            self.separable::<C>(ys, out);
        } else {
            self.general::<C>(ys, out);
        }
    }

    /// Any affine crop: each output pixel's four taps, read directly when inside the frame.
    /// The position's terms that depend on one axis only are computed once per column and row
    /// (the same products, summed in the same order: the result is bit for bit the per-pixel
    /// formula's).
    fn general<const C: usize>(&self, ys: std::ops::Range<usize>, out: &mut [f32]) {
        let (r, (limx, limy)) = (&self.rows, self.limits());
        let (wf, hf) = (self.src.width as f32, self.src.h as f32);
        let cols: Vec<(f32, f32)> = (0..self.out_w)
            .map(|x| {
                let (u, _) = self.uv(x, 0);
                (r[0] * u, r[3] * u)
            })
            .collect();
        for (y, line) in ys.zip(out.chunks_exact_mut(self.out_w * C)) {
            let (_, v) = self.uv(0, y);
            let (rv1, rv4) = (r[1] * v, r[4] * v);
            for (&(ru0, ru3), px) in cols.iter().zip(line.chunks_exact_mut(C)) {
                let s = ru0 + rv1 + r[2];
                let t = ru3 + rv4 + r[5];
                let (x0, fx) = split(s * wf - 0.5, limx);
                let (y0, fy) = split(t * hf - 0.5, limy);
                let (a, b) = self.src.pair::<C>(x0, y0);
                let (c, d) = self.src.pair::<C>(x0, y0 + 1);
                let (top, bottom) = (lerp(a, b, fx), lerp(c, d, fx));
                for (ch, o) in px.iter_mut().enumerate() {
                    *o = self.normalise(top[ch] + (bottom[ch] - top[ch]) * fy, ch);
                }
            }
        }
    }

    /// An axis-aligned crop: each frame row the output needs is blended along x once (kept
    /// while consecutive output rows sample it), then each output row blends two of them
    /// along y. The same operations as the per-pixel formula on the same values: bit for bit
    /// its result.
    fn separable<const C: usize>(&self, ys: std::ops::Range<usize>, out: &mut [f32]) {
        let (limx, limy) = self.limits();
        // Any v gives a column's x (its term is a zero product) and any u a row's y.
        let cols: Vec<(i32, f32)> = (0..self.out_w)
            .map(|x| {
                let (u, v) = self.uv(x, 0);
                split(self.position(u, v).0, limx)
            })
            .collect();
        let n = self.out_w * C;
        let mut slots = [(None, vec![0.0; n]), (None, vec![0.0; n])];
        for (y, line) in ys.zip(out.chunks_exact_mut(n)) {
            let (u, v) = self.uv(0, y);
            let (y0, fy) = split(self.position(u, v).1, limy);
            let top = self.frame_row::<C>(&mut slots, &cols, y0, y0 + 1);
            let bottom = self.frame_row::<C>(&mut slots, &cols, y0 + 1, y0);
            let (top, bottom) = (&slots[top].1, &slots[bottom].1);
            for ((px, t), b) in line
                .chunks_exact_mut(C)
                .zip(top.chunks_exact(C))
                .zip(bottom.chunks_exact(C))
            {
                for (ch, o) in px.iter_mut().enumerate() {
                    *o = self.normalise(t[ch] + (b[ch] - t[ch]) * fy, ch);
                }
            }
        }
    }

    /// The slot holding frame row `row` blended along x at the columns `cols`: kept from an
    /// earlier output row, or computed into the slot that does not hold `keep`.
    fn frame_row<const C: usize>(
        &self,
        slots: &mut [(Option<i32>, Vec<f32>); 2],
        cols: &[(i32, f32)],
        row: i32,
        keep: i32,
    ) -> usize {
        if let Some(i) = slots.iter().position(|s| s.0 == Some(row)) {
            return i;
        }
        let i = usize::from(slots[0].0 == Some(keep));
        for (&(x0, fx), px) in cols.iter().zip(slots[i].1.chunks_exact_mut(C)) {
            let (a, b) = self.src.pair::<C>(x0, row);
            px.copy_from_slice(&lerp(a, b, fx));
        }
        slots[i].0 = Some(row);
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CropTransform, RotatedRect};
    use glam::Vec2;

    #[test]
    fn identity_reads_pixel_centres() {
        // 2x2 image, identity crop to 2x2: the exact bytes.
        let rgba = [
            0u8, 255, 51, 255, 102, 0, 0, 255, 255, 255, 255, 255, 0, 0, 0, 0,
        ];
        let out = resample(
            &rgba,
            2,
            2,
            &Crop::FULL,
            &Normalization::ZERO_TO_ONE,
            [2, 2, 3],
        )
        .unwrap();
        assert_eq!(
            out,
            vec![0.0, 1.0, 0.2, 0.4, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
        );
    }

    #[test]
    fn borders_by_hand() {
        // A 1x1 white image upsampled 2x with a 1-pixel shift: the taps left of the image read
        // the border.
        let rgba = [255u8; 4];
        let crop = |border| Crop {
            transform: CropTransform::rect(-0.5, 0.0, 1.5, 1.0),
            border,
        };
        let n = Normalization::ZERO_TO_ONE;
        // Output x = 0 samples frame uv -0.0: pixel position -0.5, halfway between the border
        // tap at -1 and pixel 0.
        let zero = resample(&rgba, 1, 1, &crop(Border::ZERO), &n, [1, 2, 1]).unwrap();
        assert_eq!(zero, vec![0.5, 0.5]);
        let clamp = resample(&rgba, 1, 1, &crop(Border::Clamp), &n, [1, 2, 1]).unwrap();
        assert_eq!(clamp, vec![1.0, 1.0]);
    }

    #[test]
    fn rotated_quarter_turn_by_hand() {
        // 2x2 image, a clockwise quarter turn of the whole frame: the crop's x axis points down
        // the frame and its y axis left, so the output's top-left is the frame's top-right.
        let rgba = [10u8, 0, 0, 0, 20, 0, 0, 0, 30, 0, 0, 0, 40, 0, 0, 0];
        let rect = RotatedRect {
            center: Vec2::splat(0.5),
            size: Vec2::ONE,
            rotation: std::f32::consts::FRAC_PI_2,
        };
        let crop = Crop::rotated(&rect, 2, 2, Border::Clamp);
        let n = Normalization {
            scale: [255.0; 4],
            offset: [0.0; 4],
        };
        let out = resample(&rgba, 2, 2, &crop, &n, [2, 2, 1]).unwrap();
        let rounded: Vec<f32> = out.iter().map(|v| v.round()).collect();
        assert_eq!(rounded, vec![20.0, 40.0, 10.0, 30.0]);
    }

    /// The per-pixel formula as the module states it, written plainly: four taps, each read
    /// through the border, blended along x then y, normalised.
    fn per_pixel(
        rgba: &[u8],
        (width, height): (usize, usize),
        crop: &Crop,
        norm: &Normalization,
        [out_h, out_w, out_c]: [usize; 3],
    ) -> Vec<f32> {
        let (w, h) = (width as i32, height as i32);
        let tap = |x: i32, y: i32| -> [f32; 4] {
            if let Border::Constant(v) = crop.border
                && (x < 0 || y < 0 || x >= w || y >= h)
            {
                return v;
            }
            let at = (y.clamp(0, h - 1) as usize * width + x.clamp(0, w - 1) as usize) * 4;
            std::array::from_fn(|c| f32::from(rgba[at + c]) / 255.0)
        };
        let r = crop.transform.to_rows();
        let mut out = Vec::new();
        for y in 0..out_h {
            for x in 0..out_w {
                let u = (x as f32 + 0.5) / out_w as f32;
                let v = (y as f32 + 0.5) / out_h as f32;
                let s = r[0] * u + r[1] * v + r[2];
                let t = r[3] * u + r[4] * v + r[5];
                let (px, py) = (s * width as f32 - 0.5, t * height as f32 - 0.5);
                let (fx0, fy0) = (px.floor(), py.floor());
                let (fx, fy) = (px - fx0, py - fy0);
                let (limx, limy) = (width as f32 + 2.0, height as f32 + 2.0);
                let (x0, y0) = (fx0.clamp(-limx, limx) as i32, fy0.clamp(-limy, limy) as i32);
                let (a, b) = (tap(x0, y0), tap(x0 + 1, y0));
                let (c, d) = (tap(x0, y0 + 1), tap(x0 + 1, y0 + 1));
                for ch in 0..out_c {
                    let top = a[ch] + (b[ch] - a[ch]) * fx;
                    let bottom = c[ch] + (d[ch] - c[ch]) * fx;
                    out.push((top + (bottom - top) * fy) * norm.scale[ch] + norm.offset[ch]);
                }
            }
        }
        out
    }

    /// Bit for bit the per-pixel formula, over random frames, crops (axis-aligned, which takes
    /// the separable path, flipped, rotated, reaching far outside the frame), borders, channel
    /// counts and sizes (up- and downscaling).
    #[test]
    fn fast_paths_are_the_per_pixel_formula_bit_for_bit() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut unit = move || (next() % 1_000_001) as f32 / 1e6;
        for case in 0..400 {
            let (width, height) = (1 + (unit() * 40.0) as usize, 1 + (unit() * 30.0) as usize);
            let rgba: Vec<u8> = (0..width * height * 4)
                .map(|_| (unit() * 255.0) as u8)
                .collect();
            let (x0, y0) = (unit() * 1.6 - 0.3, unit() * 1.6 - 0.3);
            let (x1, y1) = (x0 + (unit() - 0.3) * 1.5, y0 + (unit() - 0.3) * 1.5);
            let transform = match case % 4 {
                0 | 1 => CropTransform::rect(x0, y0, x1, y1),
                2 => {
                    Crop::rotated(
                        &RotatedRect {
                            center: Vec2::new(x0, y0),
                            size: Vec2::new(unit() + 0.05, unit() + 0.05),
                            rotation: (unit() - 0.5) * 7.0,
                        },
                        width as u32,
                        height as u32,
                        Border::Clamp,
                    )
                    .transform
                }
                _ => CropTransform::from_rows([x1 - x0, 0.0, x0, 0.0, y1 - y0, y0]),
            };
            let border = if case % 3 == 0 {
                Border::Clamp
            } else {
                Border::Constant([unit(), -0.0, 0.0, unit() * 2.0 - 1.0])
            };
            let crop = Crop { transform, border };
            let norm = Normalization {
                scale: [unit() * 3.0 - 1.0, 255.0, 1.0, 2.0],
                offset: [unit() - 0.5, 0.0, -1.0, -0.0],
            };
            let shape = [
                1 + (unit() * 50.0) as usize,
                1 + (unit() * 60.0) as usize,
                1 + case % 4,
            ];
            let fast = resample(&rgba, width, height, &crop, &norm, shape).unwrap();
            let plain = per_pixel(&rgba, (width, height), &crop, &norm, shape);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&fast), bits(&plain), "case {case}: {crop:?} {shape:?}");
            // In bands (as on several threads): the same bits.
            let cut = (unit() * shape[0] as f32) as usize;
            let row = shape[1] * shape[2];
            let mut banded = vec![f32::NAN; fast.len()];
            let (a, b) = banded.split_at_mut(cut * row);
            resample_into(&rgba, (width, height), &crop, &norm, shape, 0..cut, a).unwrap();
            resample_into(
                &rgba,
                (width, height),
                &crop,
                &norm,
                shape,
                cut..shape[0],
                b,
            )
            .unwrap();
            assert_eq!(bits(&banded), bits(&plain), "case {case} cut at row {cut}");
        }
    }

    #[test]
    fn bad_inputs_are_errors() {
        let n = Normalization::ZERO_TO_ONE;
        assert!(resample(&[0; 15], 2, 2, &Crop::FULL, &n, [2, 2, 3]).is_err());
        assert!(resample(&[0; 16], 2, 2, &Crop::FULL, &n, [2, 2, 5]).is_err());
        let mut nan = Crop::FULL;
        nan.transform = CropTransform::from_rows([f32::NAN, 0.0, 0.0, 0.0, 1.0, 0.0]);
        assert!(resample(&[0; 16], 2, 2, &nan, &n, [2, 2, 3]).is_err());
        // Rows outside the output, or an output slice of another size.
        let full = &Crop::FULL;
        let mut out = vec![0.0; 7];
        assert!(resample_into(&[0; 16], (2, 2), full, &n, [2, 2, 3], 1..2, &mut out).is_err());
        assert!(resample_into(&[0; 16], (2, 2), full, &n, [2, 2, 3], 2..3, &mut []).is_err());
        assert!(resample_into(&[0; 16], (2, 2), full, &n, [2, 2, 3], 1..2, &mut out[..6]).is_ok());
        assert!(resample(&[0; 16], 2, 2, full, &n, [usize::MAX, 2, 3]).is_err());
    }
}
