//! Compositing the layers over a rendered stage frame.
//!
//! The stage is rendered first by [`crate::warp::PackedRgba::warp_into`] (unchanged from the
//! clips without layers, so those stay bit for bit). Each layer is then sampled through one
//! affine map per frame (frame pixel → layer pixel), only inside its bounding box in the frame:
//! bilinear on premultiplied RGBA with transparent outside the image (so a cut-out's edge fades
//! over one pixel without a dark fringe), weights quantised to 1/256, and composited "over":
//! `out = src_premultiplied + dst · (1 − α)`, with exact rounding per channel. At a layer pixel
//! centre this is the straight-alpha `src · α + dst · (1 − α)` within ±1.
//!
//! Minified images are sampled from mipmap levels (2×2 box averages, [`mip_level`]): a stage or
//! layer drawn at less than half its resolution (a 1280-pixel room in a 320-pixel frame) neither
//! aliases nor reads four times the memory it shows. Level 0 serves every density above 1/2, so
//! clips that never zoom out that far render as before.

use glam::{Affine2, Vec2};

use heimdall_image::RgbaImage;

use crate::warp::{half_packed, lerp_rgba};

/// Most mipmap levels kept (the full image, then halved up to 5 times: down to 1/32).
const MAX_LEVELS: usize = 6;

/// The image and its mipmap levels (each half the previous, rounded up), down to a level
/// smaller than 32 pixels on a side or [`MAX_LEVELS`] levels.
pub(crate) fn mip_levels<T>(
    base: T,
    half: impl Fn(&T) -> T,
    size: impl Fn(&T) -> (u32, u32),
) -> Vec<T> {
    let mut levels = vec![base];
    while levels.len() < MAX_LEVELS {
        let last = levels.last().expect("never empty");
        let (w, h) = size(last);
        if w.min(h) < 64 {
            break;
        }
        levels.push(half(last));
    }
    levels
}

/// The mipmap level to sample an image drawn at `density` output pixels per image pixel: the
/// smallest level that is not minified by more than 2:1, i.e. `⌊−log₂ density⌋` (0 for density
/// above 1/2, so a camera that never zooms out past 1/2 samples the full image only).
pub(crate) fn mip_level(density: f32, levels: usize) -> usize {
    let l = (-density.log2()).floor();
    if l.is_finite() && l > 0.0 {
        (l as usize).min(levels - 1)
    } else {
        0
    }
}

/// A layer image ready to sample: premultiplied RGBA packed one little-endian `u32` a pixel.
#[derive(Clone, Debug)]
pub(crate) struct PremultipliedLayer {
    pub(crate) width: u32,
    pub(crate) height: u32,
    px: Vec<u32>,
}

/// `round(x / 255)` for `x ≤ 255 · 255` in each 16-bit lane of `x` (exact).
#[inline(always)]
fn div255_lanes(x: u32) -> u32 {
    const LANES: u32 = 0x00FF_00FF;
    const HALF: u32 = 0x0080_0080;
    let x = x + HALF;
    ((x + ((x >> 8) & LANES)) >> 8) & LANES
}

impl PremultipliedLayer {
    pub(crate) fn new(image: &RgbaImage) -> PremultipliedLayer {
        let px = image
            .data
            .chunks_exact(4)
            .map(|p| {
                let a = u32::from(p[3]);
                let rb = u32::from(p[0]) | (u32::from(p[2]) << 16);
                let g = u32::from(p[1]);
                let rb = div255_lanes(rb * a);
                let g = div255_lanes(g * a);
                rb | (g << 8) | (a << 24)
            })
            .collect();
        PremultipliedLayer {
            width: image.width,
            height: image.height,
            px,
        }
    }

    /// The next mipmap level (premultiplied averages; outside the image is transparent).
    pub(crate) fn half(&self) -> PremultipliedLayer {
        let (width, height, px) = half_packed(&self.px, self.width, self.height, false);
        PremultipliedLayer { width, height, px }
    }

    /// The premultiplied tap at `(x, y)`, transparent outside.
    #[inline(always)]
    fn tap(&self, x: i32, y: i32) -> u32 {
        if x < 0 || y < 0 || x >= self.width as i32 || y >= self.height as i32 {
            0
        } else {
            self.px[y as usize * self.width as usize + x as usize]
        }
    }

    /// Composites this layer over `out`, `to_layer` mapping frame pixels (pixel `(i, j)`
    /// covering `[i, i + 1) × [j, j + 1)`) to layer pixels.
    pub(crate) fn composite(&self, to_layer: &Affine2, out: &mut RgbaImage) {
        let Some((x0, y0, x1, y1)) = self.frame_bbox(to_layer, out.width, out.height) else {
            return;
        };
        let (w, h) = (self.width as i32, self.height as i32);
        let sw = self.width as usize;
        let width = out.width as usize;
        // Tap-space positions (layer pixel centres at integers) in 16.16 fixed point, stepped
        // along each row, as in the stage warp.
        const ONE: f32 = 65536.0;
        let to_fixed = |v: f32| {
            (v * ONE)
                .round()
                .clamp(-(1i64 << 46) as f32, (1i64 << 46) as f32) as i64
        };
        let (dx, dy) = (
            to_fixed(to_layer.matrix2.x_axis.x),
            to_fixed(to_layer.matrix2.x_axis.y),
        );
        // Samples at or beyond a pixel outside the image have only transparent taps.
        let (lo, hi_x, hi_y) = (-(1i64 << 16), (w as i64) << 16, (h as i64) << 16);
        for j in y0 as usize..y1 as usize {
            let start = to_layer.transform_point2(Vec2::new(x0 as f32 + 0.5, j as f32 + 0.5)) - 0.5;
            let (mut x, mut y) = (to_fixed(start.x), to_fixed(start.y));
            let row = &mut out.data[(j * width + x0 as usize) * 4..(j * width + x1 as usize) * 4];
            for px in row.chunks_exact_mut(4) {
                let (fx, fy) = (x, y);
                x += dx;
                y += dy;
                if !(fx > lo && fy > lo && fx < hi_x && fy < hi_y) {
                    continue;
                }
                let (xi, yi) = ((fx >> 16) as i32, (fy >> 16) as i32);
                let (p00, p10, p01, p11) = if xi >= 0 && yi >= 0 && xi + 1 < w && yi + 1 < h {
                    let o = yi as usize * sw + xi as usize;
                    (
                        self.px[o],
                        self.px[o + 1],
                        self.px[o + sw],
                        self.px[o + sw + 1],
                    )
                } else {
                    (
                        self.tap(xi, yi),
                        self.tap(xi + 1, yi),
                        self.tap(xi, yi + 1),
                        self.tap(xi + 1, yi + 1),
                    )
                };
                if p00 | p10 | p01 | p11 == 0 {
                    continue;
                }
                let ax = (((fx & 0xFFFF) + 128) >> 8) as u32;
                let ay = (((fy & 0xFFFF) + 128) >> 8) as u32;
                let src = lerp_rgba(lerp_rgba(p00, p10, ax), lerp_rgba(p01, p11, ax), ay);
                let a = src >> 24;
                if a == 0 {
                    continue;
                }
                let blended = if a == 255 {
                    src
                } else {
                    const LANES: u32 = 0x00FF_00FF;
                    let dst = u32::from_le_bytes([px[0], px[1], px[2], px[3]]);
                    let keep = 255 - a;
                    let rb = div255_lanes((dst & LANES) * keep);
                    let ga = div255_lanes(((dst >> 8) & LANES) * keep);
                    src + (rb | (ga << 8))
                };
                px.copy_from_slice(&blended.to_le_bytes());
            }
        }
    }

    /// The frame pixels `[x0, x1) × [y0, y1)` whose centres may sample the layer (its image
    /// grown by a pixel, where bilinear taps still reach it), clipped to the frame; `None` when
    /// empty or when the map is degenerate.
    fn frame_bbox(&self, to_layer: &Affine2, fw: u32, fh: u32) -> Option<(i32, i32, i32, i32)> {
        let to_frame = to_layer.inverse();
        let (w, h) = (self.width as f32, self.height as f32);
        let corners = [
            Vec2::new(-1.0, -1.0),
            Vec2::new(w + 1.0, -1.0),
            Vec2::new(-1.0, h + 1.0),
            Vec2::new(w + 1.0, h + 1.0),
        ]
        .map(|c| to_frame.transform_point2(c));
        if !corners.iter().all(|c| c.is_finite()) {
            return None;
        }
        let lo = corners.iter().fold(Vec2::INFINITY, |m, c| m.min(*c));
        let hi = corners.iter().fold(Vec2::NEG_INFINITY, |m, c| m.max(*c));
        let x0 = lo.x.floor().clamp(0.0, fw as f32) as i32;
        let y0 = lo.y.floor().clamp(0.0, fh as f32) as i32;
        let x1 = hi.x.ceil().clamp(0.0, fw as f32) as i32;
        let y1 = hi.y.ceil().clamp(0.0, fh as f32) as i32;
        (x0 < x1 && y0 < y1).then_some((x0, y0, x1, y1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn div255_is_exact_in_both_lanes() {
        for c in 0..=255u32 {
            for a in 0..=255u32 {
                let want = (c * a * 2 + 255) / 510; // round(c · a / 255), halves up
                let got = div255_lanes((c * a) | ((a * c) << 16));
                assert_eq!((got & 0xFFFF, got >> 16), (want, want), "{c} {a}");
            }
        }
    }

    #[test]
    fn premultiplied_halves_and_mip_levels() {
        let img = RgbaImage::from_raw(3, 1, vec![255, 0, 0, 255, 0, 0, 255, 255, 255, 255, 255, 0])
            .unwrap();
        let layer = PremultipliedLayer::new(&img);
        // Fully transparent white premultiplies to 0.
        assert_eq!(layer.px[2], 0);
        // 3x1 → 2x1: (red + blue) / 2 over the 2x2 block with a transparent second row, and
        // the last column alone (transparent everywhere).
        let half = layer.half();
        assert_eq!((half.width, half.height), (2, 1));
        assert_eq!(half.px[0].to_le_bytes(), [64, 0, 64, 128]);
        assert_eq!(half.px[1], 0);
        assert_eq!(mip_level(1.0, 6), 0);
        assert_eq!(mip_level(0.51, 6), 0);
        assert_eq!(mip_level(0.5, 6), 1);
        assert_eq!(mip_level(0.25, 6), 2);
        assert_eq!(mip_level(0.01, 3), 2);
        assert_eq!(mip_level(f32::NAN, 3), 0);
        assert_eq!(mip_level(4.0, 3), 0);
    }
}
