//! Rendering frames from a still image through a camera transform (the clip renderer): a
//! fixed-point bilinear warp of an RGBA8 image. This is picture generation for fixtures, not model
//! preprocessing (that is `heimdall_image::resample`).

use glam::Vec2;
use heimdall_image::{CropTransform, RgbaImage};

/// Renders a `width × height` image whose pixel at uv `q` is `image` sampled at
/// `transform.apply(q)` (see [`PackedRgba::warp_into`]). `None` for a zero size.
pub fn warp(
    image: &RgbaImage,
    transform: &CropTransform,
    width: u32,
    height: u32,
) -> Option<RgbaImage> {
    let mut out = RgbaImage::new(width, height)?;
    PackedRgba::from_image(image).warp_into(transform, &mut out);
    Some(out)
}

/// An RGBA8 image packed one little-endian `u32` a pixel: the warp's source format (one load
/// per tap). Build it once for a source warped many times (as [`crate::Clip`] does).
#[derive(Clone, Debug)]
pub struct PackedRgba {
    width: u32,
    height: u32,
    px: Vec<u32>,
}

impl PackedRgba {
    /// Packs an image.
    pub fn from_image(image: &RgbaImage) -> PackedRgba {
        PackedRgba {
            width: image.width,
            height: image.height,
            px: image
                .data
                .chunks_exact(4)
                .map(|p| u32::from_le_bytes([p[0], p[1], p[2], p[3]]))
                .collect(),
        }
    }

    /// Width in pixels.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height in pixels.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The image at half the resolution (the next mipmap level): each pixel the rounded mean of
    /// a 2×2 block, sizes rounded up, the last row or column of an odd size repeated.
    pub fn half(&self) -> PackedRgba {
        let (width, height, px) = half_packed(&self.px, self.width, self.height, true);
        PackedRgba { width, height, px }
    }

    /// Renders `out`: its pixel at uv `q` is this image sampled at `transform.apply(q)` (out uv
    /// → this image's uv), bilinear in 16.16 fixed point with weights quantised to 1/256 (as
    /// OpenCV's fixed-point `INTER_LINEAR`), taps clamped to the edge, opaque black where the
    /// sample centre falls outside the image: within ±1 of the float result, exact on pixel
    /// centres.
    pub fn warp_into(&self, transform: &CropTransform, out: &mut RgbaImage) {
        let src_size = Vec2::new(self.width as f32, self.height as f32);
        let out_size = out.size();
        let sw = self.width as usize;
        let max_x = self.width as i32 - 1;
        let max_y = self.height as i32 - 1;
        let width = out.width as usize;
        let src = &self.px;
        if width == 0 || src.len() != sw * self.height as usize {
            return;
        }
        // Tap-space positions (source pixel centres at integers) in 16.16 fixed point, stepped
        // along each row: no float work per pixel.
        const ONE: f32 = 65536.0;
        let to_fixed = |v: f32| {
            (v * ONE)
                .round()
                .clamp(-(1i64 << 46) as f32, (1i64 << 46) as f32) as i64
        };
        let (lo, hi_x, hi_y) = (
            -(1i64 << 15),
            to_fixed(src_size.x - 0.5),
            to_fixed(src_size.y - 0.5),
        );
        for (j, row) in out.data.chunks_exact_mut(width * 4).enumerate() {
            let v = (j as f32 + 0.5) / out_size.y;
            let start = transform.apply(Vec2::new(0.5 / out_size.x, v)) * src_size - 0.5;
            let next = transform.apply(Vec2::new(1.5 / out_size.x, v)) * src_size - 0.5;
            if !(start.is_finite() && next.is_finite()) {
                for px in row.chunks_exact_mut(4) {
                    px.copy_from_slice(&[0, 0, 0, 255]);
                }
                continue;
            }
            let (mut x, mut y) = (to_fixed(start.x), to_fixed(start.y));
            let (dx, dy) = (to_fixed(next.x - start.x), to_fixed(next.y - start.y));
            for px in row.chunks_exact_mut(4) {
                let mixed = if x >= lo && x <= hi_x && y >= lo && y <= hi_y {
                    let x0i = (x >> 16) as i32;
                    let y0i = (y >> 16) as i32;
                    let ax = (((x & 0xFFFF) + 128) >> 8) as u32;
                    let ay = (((y & 0xFFFF) + 128) >> 8) as u32;
                    if x0i >= 0 && x0i < max_x && y0i >= 0 && y0i < max_y {
                        // Interior: all four taps inside.
                        let o = y0i as usize * sw + x0i as usize;
                        lerp_rgba(
                            lerp_rgba(src[o], src[o + 1], ax),
                            lerp_rgba(src[o + sw], src[o + sw + 1], ax),
                            ay,
                        )
                    } else {
                        let x0 = x0i.clamp(0, max_x) as usize;
                        let x1 = (x0i + 1).clamp(0, max_x) as usize;
                        let y0 = y0i.clamp(0, max_y) as usize * sw;
                        let y1 = (y0i + 1).clamp(0, max_y) as usize * sw;
                        lerp_rgba(
                            lerp_rgba(src[y0 + x0], src[y0 + x1], ax),
                            lerp_rgba(src[y1 + x0], src[y1 + x1], ax),
                            ay,
                        )
                    }
                } else {
                    0xFF00_0000
                };
                px.copy_from_slice(&mixed.to_le_bytes());
                x += dx;
                y += dy;
            }
        }
    }
}

/// Halves a packed RGBA8 image: each output pixel the rounded per-channel mean of a 2×2 block,
/// the size rounded up; a block's missing pixels (odd sizes) repeat the edge if `repeat_edge`,
/// else count as 0 (transparent, for premultiplied layers).
pub(crate) fn half_packed(px: &[u32], w: u32, h: u32, repeat_edge: bool) -> (u32, u32, Vec<u32>) {
    let (w2, h2) = (w.div_ceil(2), h.div_ceil(2));
    let (w, h) = (w as usize, h as usize);
    let at = |x: usize, y: usize| -> u32 {
        if x < w && y < h {
            px[y * w + x]
        } else if repeat_edge {
            px[y.min(h - 1) * w + x.min(w - 1)]
        } else {
            0
        }
    };
    const LANES: u32 = 0x00FF_00FF;
    let mut out = Vec::with_capacity(w2 as usize * h2 as usize);
    for y in 0..h2 as usize {
        for x in 0..w2 as usize {
            let q = [
                at(2 * x, 2 * y),
                at(2 * x + 1, 2 * y),
                at(2 * x, 2 * y + 1),
                at(2 * x + 1, 2 * y + 1),
            ];
            // Sums of four bytes fit 10 bits of each 16-bit lane.
            let rb: u32 = q.iter().map(|p| p & LANES).sum::<u32>() + 0x0002_0002;
            let ga: u32 = q.iter().map(|p| (p >> 8) & LANES).sum::<u32>() + 0x0002_0002;
            out.push(((rb >> 2) & LANES) | (((ga >> 2) & LANES) << 8));
        }
    }
    (w2, h2, out)
}

/// Blends two packed RGBA8 pixels, `a + (b − a) · t / 256` per channel (`t ≤ 256`), rounded,
/// two channels at a time in 16-bit lanes.
#[inline(always)]
pub(crate) fn lerp_rgba(a: u32, b: u32, t: u32) -> u32 {
    const LANES: u32 = 0x00FF_00FF;
    const HALF: u32 = 0x0080_0080;
    let s = 256 - t;
    let rb = (((a & LANES) * s + (b & LANES) * t + HALF) >> 8) & LANES;
    let ga = ((((a >> 8) & LANES) * s + ((b >> 8) & LANES) * t + HALF) >> 8) & LANES;
    rb | (ga << 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(w: u32, h: u32) -> RgbaImage {
        let mut data = Vec::new();
        for y in 0..h {
            for x in 0..w {
                data.extend_from_slice(&[(x * 10) as u8, (y * 10) as u8, 7, 255]);
            }
        }
        RgbaImage::from_raw(w, h, data).unwrap()
    }

    /// The float reference of the warp: bilinear at pixel position `p` (centres at `i + 0.5`),
    /// taps clamped, opaque black when `p` is outside the image.
    fn sample(img: &RgbaImage, p: Vec2) -> [f32; 4] {
        let (w, h) = (img.width as f32, img.height as f32);
        if p.is_nan() || p.x < 0.0 || p.x > w || p.y < 0.0 || p.y > h {
            return [0.0, 0.0, 0.0, 255.0];
        }
        let p = p.clamp(
            Vec2::splat(0.5),
            Vec2::new(w - 0.5, h - 0.5).max(Vec2::splat(0.5)),
        );
        let (fx, fy) = (p.x - 0.5, p.y - 0.5);
        let (x0f, y0f) = (fx.floor(), fy.floor());
        let (ax, ay) = (fx - x0f, fy - y0f);
        let (mx, my) = (img.width as i64 - 1, img.height as i64 - 1);
        let x0 = (x0f as i64).clamp(0, mx) as u32;
        let x1 = (x0f as i64 + 1).clamp(0, mx) as u32;
        let y0 = (y0f as i64).clamp(0, my) as u32;
        let y1 = (y0f as i64 + 1).clamp(0, my) as u32;
        let px = |x, y| img.pixel(x, y).unwrap().map(f32::from);
        let (p00, p10, p01, p11) = (px(x0, y0), px(x1, y0), px(x0, y1), px(x1, y1));
        std::array::from_fn(|c| {
            let top = p00[c] + (p10[c] - p00[c]) * ax;
            let bottom = p01[c] + (p11[c] - p01[c]) * ax;
            top + (bottom - top) * ay
        })
    }

    #[test]
    fn float_reference_hits_pixel_centres_and_blends_halfway() {
        let img = ramp(4, 3);
        // Centre of pixel (2, 1).
        assert_eq!(sample(&img, Vec2::new(2.5, 1.5)), [20.0, 10.0, 7.0, 255.0]);
        // Halfway between pixels (1, 1) and (2, 1): R = (10 + 20) / 2.
        assert_eq!(sample(&img, Vec2::new(2.0, 1.5))[0], 15.0);
        // Outside: black.
        assert_eq!(sample(&img, Vec2::new(-0.1, 1.0)), [0.0, 0.0, 0.0, 255.0]);
        assert_eq!(
            sample(&img, Vec2::new(f32::NAN, 1.0)),
            [0.0, 0.0, 0.0, 255.0]
        );
    }

    #[test]
    fn identity_warp_reproduces_the_image() {
        let img = ramp(5, 4);
        let out = warp(&img, &CropTransform::IDENTITY, 5, 4).unwrap();
        assert_eq!(out, img);
    }

    #[test]
    fn fixed_point_warp_matches_float_sampling() {
        let img = ramp(9, 7);
        let t = CropTransform::from_rows([0.83, 0.21, -0.05, -0.17, 0.91, 0.12]);
        let out = warp(&img, &t, 13, 11).unwrap();
        for j in 0..11u32 {
            for i in 0..13u32 {
                let uv = (Vec2::new(i as f32, j as f32) + 0.5) / Vec2::new(13.0, 11.0);
                let want = sample(&img, t.apply(uv) * Vec2::new(9.0, 7.0));
                let got = out.pixel(i, j).unwrap();
                for c in 0..4 {
                    assert!(
                        (got[c] as f32 - want[c]).abs() <= 1.0,
                        "{i},{j}: {got:?} {want:?}"
                    );
                }
            }
        }
    }
}
