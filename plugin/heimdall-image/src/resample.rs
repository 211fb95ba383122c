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
    let rows = crop.transform.to_rows();
    let mut out = Vec::with_capacity(out_h * out_w * out_c);
    for y in 0..out_h {
        for x in 0..out_w {
            let u = (x as f32 + 0.5) / out_w as f32;
            let v = (y as f32 + 0.5) / out_h as f32;
            let s = rows[0] * u + rows[1] * v + rows[2];
            let t = rows[3] * u + rows[4] * v + rows[5];
            let (px, py) = (s * width as f32 - 0.5, t * height as f32 - 0.5);
            let (fx0, fy0) = (px.floor(), py.floor());
            let (fx, fy) = (px - fx0, py - fy0);
            // Far outside the frame the taps saturate (no overflow); the result is the same.
            let (limx, limy) = (width as f32 + 2.0, height as f32 + 2.0);
            let (x0, y0) = (fx0.clamp(-limx, limx) as i32, fy0.clamp(-limy, limy) as i32);
            let (a, b, c, d) = (
                tap(x0, y0),
                tap(x0 + 1, y0),
                tap(x0, y0 + 1),
                tap(x0 + 1, y0 + 1),
            );
            for ch in 0..out_c {
                let top = a[ch] + (b[ch] - a[ch]) * fx;
                let bottom = c[ch] + (d[ch] - c[ch]) * fx;
                let pixel = top + (bottom - top) * fy;
                out.push(pixel * norm.scale[ch] + norm.offset[ch]);
            }
        }
    }
    Ok(out)
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

    #[test]
    fn bad_inputs_are_errors() {
        let n = Normalization::ZERO_TO_ONE;
        assert!(resample(&[0; 15], 2, 2, &Crop::FULL, &n, [2, 2, 3]).is_err());
        assert!(resample(&[0; 16], 2, 2, &Crop::FULL, &n, [2, 2, 5]).is_err());
        let mut nan = Crop::FULL;
        nan.transform = CropTransform::from_rows([f32::NAN, 0.0, 0.0, 0.0, 1.0, 0.0]);
        assert!(resample(&[0; 16], 2, 2, &nan, &n, [2, 2, 3]).is_err());
    }
}
