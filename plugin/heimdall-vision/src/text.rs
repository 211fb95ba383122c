//! Text detection with PP-OCRv6 det (DBNet), as RapidOCR 3.10.0 runs it with its default det
//! settings (`rapidocr/ch_ppocr_det/utils.py`, `config.yaml`).
//!
//! - Pre-processing ([`DetResize`]): `limit_type: min`, `limit_side_len: 736`: when the short
//!   side is below 736 the image is scaled up so that it is 736; each side is then truncated to
//!   an integer and rounded to a multiple of 32 (Python's `round`, ties to even); a plain
//!   bilinear resize (OpenCV's `cv2.resize`, half-pixel centres, no antialiasing: this crate's
//!   `resample` with [`Crop::FULL`](crate::Crop::FULL)); values `(x / 255 − 0.5) / 0.5`
//!   ([`TEXT_NORMALIZATION`]) in the **BGR** channel order RapidOCR reads images in
//!   ([`TEXT_INPUT_BGR`]).
//! - Post-processing ([`DbPostProcess`]): the probability map `> 0.3`, dilated by a 2×2 kernel;
//!   every 8-connected region's minimum-area rotated rectangle (OpenCV's `minAreaRect` of its
//!   contour, i.e. of the convex hull of its pixels), dropped when its short side is < 3; the
//!   box score is the mean probability inside the rectangle ("fast" mode), dropped below 0.5;
//!   the rectangle is grown by `area · 1.6 / perimeter` on every side (pyclipper's round
//!   offset, whose minimum-area rectangle is exactly that), dropped when its short side is < 5;
//!   mapped to the image (`round(x / map_w · image_w)`, clipped), ordered clockwise from the
//!   top-left, clipped to the image and truncated to integers, dropped when a side is ≤ 3 px.
//!
//! Differences from RapidOCR, by design: RapidOCR's `findContours(RETR_LIST)` also returns the
//! inner contours of regions with holes, whose boxes almost never pass the score threshold;
//! they are not produced here. RapidOCR's global pre-processing (images with a side over 2000 or
//! under 30 px, or wider than 8:1, are resized or padded first) is not ported: such images are
//! refused by [`DetResize::input_size`].

use glam::Vec2;

use crate::error::{DecodeError, check_len};
use crate::image::Normalization;

/// `(x / 255 − mean) / std` with RapidOCR's det `mean` and `std` of 0.5 on every channel.
pub const TEXT_NORMALIZATION: Normalization = Normalization {
    scale: [2.0; 4],
    offset: [-1.0; 4],
};

/// The det model reads the image in BGR order (RapidOCR loads images with OpenCV): swap R and B
/// before the normalisation.
pub const TEXT_INPUT_BGR: bool = true;

/// RapidOCR's det resize (`DetPreProcess.resize`, `limit_type: min`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DetResize {
    /// The short side is scaled up to this when smaller (736).
    pub limit_side_len: f32,
}

impl Default for DetResize {
    fn default() -> Self {
        DetResize {
            limit_side_len: 736.0,
        }
    }
}

impl DetResize {
    /// The model input `(width, height)` for a `w × h` image; `None` when RapidOCR would not
    /// feed the image to the det model as is (a side outside 30..=2000 px, wider or taller than
    /// 8:1, or a zero result).
    pub fn input_size(&self, w: u32, h: u32) -> Option<(u32, u32)> {
        let (wf, hf) = (w as f64, h as f64);
        if w.max(h) > 2000 || w.min(h) < 30 || wf / hf > 8.0 || h <= 30 {
            return None;
        }
        let short = wf.min(hf);
        let ratio = if short < self.limit_side_len as f64 {
            // Python: float(limit) / h (or w), in double precision.
            self.limit_side_len as f64 / short
        } else {
            1.0
        };
        let round32 = |v: f64| ((v.trunc() / 32.0).round_ties_even() * 32.0) as u32;
        let (rw, rh) = (round32(wf * ratio), round32(hf * ratio));
        (rw > 0 && rh > 0).then_some((rw, rh))
    }
}

/// One text region: a rotated rectangle in image pixels.
#[derive(Clone, Debug, PartialEq)]
pub struct TextBox {
    /// Mean probability inside the (un-grown) rectangle.
    pub score: f32,
    /// Corners in image pixels: top-left, top-right, bottom-right, bottom-left (integers, as
    /// RapidOCR returns them).
    pub polygon: [Vec2; 4],
}

/// RapidOCR's `DBPostProcess` with its default det settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DbPostProcess {
    /// Binarisation threshold of the probability map (0.3).
    pub thresh: f32,
    /// Boxes scoring below this are dropped (0.5).
    pub box_thresh: f32,
    /// At most this many regions are looked at (1000).
    pub max_candidates: usize,
    /// The rectangle grows by `area · unclip_ratio / perimeter` (1.6).
    pub unclip_ratio: f32,
    /// Dilate the binary map by a 2×2 kernel first (true).
    pub use_dilation: bool,
}

impl Default for DbPostProcess {
    fn default() -> Self {
        DbPostProcess {
            thresh: 0.3,
            box_thresh: 0.5,
            max_candidates: 1000,
            unclip_ratio: 1.6,
            use_dilation: true,
        }
    }
}

/// A rotated rectangle: centre, the unit vector of its first side, its two side lengths.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MinAreaRect {
    /// Centre.
    pub center: Vec2,
    /// Unit direction of the first side.
    pub axis: Vec2,
    /// Length along `axis`, and across it.
    pub size: Vec2,
}

impl MinAreaRect {
    /// The four corners.
    pub fn corners(&self) -> [Vec2; 4] {
        let u = self.axis * (0.5 * self.size.x);
        let v = self.axis.perp() * (0.5 * self.size.y);
        let c = self.center;
        [c - u - v, c + u - v, c + u + v, c - u + v]
    }
}

/// The convex hull of `points` (Andrew's monotone chain), counter-clockwise in a y-up frame,
/// without collinear points.
pub fn convex_hull(points: &mut [Vec2]) -> Vec<Vec2> {
    points.sort_by(|a, b| a.x.total_cmp(&b.x).then(a.y.total_cmp(&b.y)));
    let cross = |o: Vec2, a: Vec2, b: Vec2| (a - o).perp_dot(b - o);
    let mut hull: Vec<Vec2> = Vec::with_capacity(points.len() + 1);
    for pass in 0..2 {
        let start = hull.len();
        let iter: Box<dyn Iterator<Item = &Vec2>> = if pass == 0 {
            Box::new(points.iter())
        } else {
            Box::new(points.iter().rev())
        };
        for &p in iter {
            while hull.len() >= start + 2
                && cross(hull[hull.len() - 2], hull[hull.len() - 1], p) <= 0.0
            {
                hull.pop();
            }
            hull.push(p);
        }
        hull.pop();
    }
    hull.dedup();
    hull
}

/// The minimum-area rectangle around a convex hull (rotating calipers over its edges);
/// `None` for fewer than 3 points (OpenCV gives a zero-width rectangle, which every caller here
/// drops).
pub fn min_area_rect(hull: &[Vec2]) -> Option<MinAreaRect> {
    if hull.len() < 3 {
        return None;
    }
    let mut best: Option<(f32, MinAreaRect)> = None;
    for i in 0..hull.len() {
        let edge = hull[(i + 1) % hull.len()] - hull[i];
        let Some(axis) = edge.try_normalize() else {
            continue;
        };
        let perp = axis.perp();
        let (mut lo, mut hi) = (Vec2::splat(f32::MAX), Vec2::splat(f32::MIN));
        for &p in hull {
            let q = Vec2::new(p.dot(axis), p.dot(perp));
            lo = lo.min(q);
            hi = hi.max(q);
        }
        let size = hi - lo;
        let area = size.x * size.y;
        if best.is_none_or(|(a, _)| area < a) {
            let mid = (lo + hi) * 0.5;
            best = Some((
                area,
                MinAreaRect {
                    center: axis * mid.x + perp * mid.y,
                    axis,
                    size,
                },
            ));
        }
    }
    best.map(|(_, r)| r)
}

/// The 8-connected regions of a binary `w × h` map (runs of each row joined with a union-find
/// to the runs of the row above that touch them, diagonals included), in the order of their
/// first pixel (row-major), each as the convex-hull input RapidOCR's contour gives: the ends of
/// its runs.
fn regions(mask: &[bool], w: usize, h: usize, max: usize) -> Vec<Vec<Vec2>> {
    // Runs: (y, x0, x1) inclusive.
    let mut runs: Vec<(u32, u32, u32)> = Vec::new();
    let mut row_start = Vec::with_capacity(h + 1);
    for y in 0..h {
        row_start.push(runs.len());
        let row = &mask[y * w..(y + 1) * w];
        let mut x = 0;
        while x < w {
            if row[x] {
                let x0 = x;
                while x < w && row[x] {
                    x += 1;
                }
                runs.push((y as u32, x0 as u32, x as u32 - 1));
            } else {
                x += 1;
            }
        }
    }
    row_start.push(runs.len());
    let mut parent: Vec<usize> = (0..runs.len()).collect();
    fn find(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for y in 1..h {
        let (above, here) = (
            row_start[y - 1]..row_start[y],
            row_start[y]..row_start[y + 1],
        );
        let mut j = above.start;
        for i in here {
            let (_, a0, a1) = runs[i];
            // Skip runs above that end left of this one's reach.
            while j < above.end && runs[j].2 + 1 < a0 {
                j += 1;
            }
            let mut k = j;
            while k < above.end && runs[k].1 <= a1 + 1 {
                let (ri, rk) = (find(&mut parent, i), find(&mut parent, k));
                if ri != rk {
                    // The root is the earlier run, so regions keep their first pixel's order.
                    let (lo, hi) = (ri.min(rk), ri.max(rk));
                    parent[hi] = lo;
                }
                k += 1;
            }
        }
    }
    let mut index = vec![usize::MAX; runs.len()];
    let mut out: Vec<Vec<Vec2>> = Vec::new();
    for (i, &(y, x0, x1)) in runs.iter().enumerate() {
        let r = find(&mut parent, i);
        if index[r] == usize::MAX {
            if out.len() >= max {
                continue;
            }
            index[r] = out.len();
            out.push(Vec::new());
        }
        let pts = &mut out[index[r]];
        pts.push(Vec2::new(x0 as f32, y as f32));
        if x1 != x0 {
            pts.push(Vec2::new(x1 as f32, y as f32));
        }
    }
    out
}

/// The mean of `prob` over the pixels inside the quadrilateral `quad` (RapidOCR's
/// `box_score_fast`: the quad's corners truncated to integers and drawn with OpenCV's
/// `fillPoly` — the rows' spans between the edges, rounded, plus the 8-connected outline — over
/// its bounding box clipped to the map).
fn box_score(prob: &[f32], w: usize, h: usize, quad: &[Vec2; 4]) -> f32 {
    let q = quad.map(|p| (p.x.trunc() as i64, p.y.trunc() as i64));
    let clampi = |v: f32, max: usize| (v as i64).clamp(0, max as i64 - 1);
    let xmin = clampi(quad.iter().map(|p| p.x).fold(f32::MAX, f32::min).floor(), w);
    let xmax = clampi(quad.iter().map(|p| p.x).fold(f32::MIN, f32::max).ceil(), w);
    let ymin = clampi(quad.iter().map(|p| p.y).fold(f32::MAX, f32::min).floor(), h);
    let ymax = clampi(quad.iter().map(|p| p.y).fold(f32::MIN, f32::max).ceil(), h);
    // Per row of the bounding box: the covered interval (a convex quad covers one per row).
    let mut rows = vec![(i64::MAX, i64::MIN); (ymax - ymin + 1) as usize];
    let mut cover = |x: i64, y: i64| {
        if (ymin..=ymax).contains(&y) {
            let r = &mut rows[(y - ymin) as usize];
            *r = (r.0.min(x), r.1.max(x));
        }
    };
    // Fill: each row crossing two edges, from round(left) to round(right).
    for y in ymin..=ymax {
        let (mut lo, mut hi) = (f64::MAX, f64::MIN);
        for i in 0..4 {
            let (a, b) = (q[i], q[(i + 1) % 4]);
            let (top, bottom) = if a.1 <= b.1 { (a, b) } else { (b, a) };
            if top.1 == bottom.1 || y < top.1 || y >= bottom.1 {
                continue;
            }
            let x = top.0 as f64
                + (bottom.0 - top.0) as f64 * (y - top.1) as f64 / (bottom.1 - top.1) as f64;
            lo = lo.min(x);
            hi = hi.max(x);
        }
        if lo <= hi {
            cover((lo + 0.5).floor() as i64, y);
            cover((hi + 0.5).floor() as i64, y);
        }
    }
    // Outline: Bresenham lines between the corners.
    for i in 0..4 {
        let ((mut x0, mut y0), (x1, y1)) = (q[i], q[(i + 1) % 4]);
        let (dx, dy) = ((x1 - x0).abs(), -(y1 - y0).abs());
        let (sx, sy) = ((x1 - x0).signum(), (y1 - y0).signum());
        let mut err = dx + dy;
        loop {
            cover(x0, y0);
            if x0 == x1 && y0 == y1 {
                break;
            }
            let e2 = 2 * err;
            if e2 >= dy {
                err += dy;
                x0 += sx;
            }
            if e2 <= dx {
                err += dx;
                y0 += sy;
            }
        }
    }
    let (mut sum, mut n) = (0.0f64, 0usize);
    for (r, &(lo, hi)) in rows.iter().enumerate() {
        let y = ymin as usize + r;
        for x in lo.max(xmin)..=hi.min(xmax) {
            sum += f64::from(prob[y * w + x as usize]);
            n += 1;
        }
    }
    if n == 0 { 0.0 } else { (sum / n as f64) as f32 }
}

/// RapidOCR's `order_points_clockwise`: top-left, top-right, bottom-right, bottom-left.
fn order_clockwise(pts: [Vec2; 4]) -> [Vec2; 4] {
    let mut by_x = pts;
    by_x.sort_by(|a, b| a.x.total_cmp(&b.x));
    let (mut left, mut right) = ([by_x[0], by_x[1]], [by_x[2], by_x[3]]);
    left.sort_by(|a, b| a.y.total_cmp(&b.y));
    right.sort_by(|a, b| a.y.total_cmp(&b.y));
    [left[0], right[0], right[1], left[1]]
}

impl DbPostProcess {
    /// Decodes the probability map (`map_w × map_h`, the model's output) into text boxes in
    /// pixels of the `image_w × image_h` image.
    pub fn decode(
        &self,
        prob: &[f32],
        (map_w, map_h): (usize, usize),
        (image_w, image_h): (u32, u32),
    ) -> Result<Vec<TextBox>, DecodeError> {
        check_len("DB probability map", prob, map_w * map_h)?;
        let (w, h) = (map_w, map_h);
        let mut mask: Vec<bool> = prob.iter().map(|&p| p > self.thresh).collect();
        if self.use_dilation {
            // cv2.dilate with a 2x2 kernel (anchor (1, 1)): the max over the pixel, its left,
            // upper and upper-left neighbours. Rows first (x with x − 1), then row y with y − 1.
            let mut prev: Vec<bool> = vec![false; w];
            for y in 0..h {
                let row = &mut mask[y * w..(y + 1) * w];
                for x in (1..w).rev() {
                    row[x] |= row[x - 1];
                }
                let here = row.to_vec();
                for (m, p) in row.iter_mut().zip(&prev) {
                    *m |= *p;
                }
                prev = here;
            }
        }
        let (iw, ih) = (image_w as f32, image_h as f32);
        let mut out = Vec::new();
        for mut pts in regions(&mask, w, h, self.max_candidates) {
            let Some(rect) = min_area_rect(&convex_hull(&mut pts)) else {
                continue;
            };
            if rect.size.min_element() < 3.0 {
                continue;
            }
            let score = box_score(prob, w, h, &rect.corners());
            if self.box_thresh > score {
                continue;
            }
            let area = rect.size.x * rect.size.y;
            let distance = area * self.unclip_ratio / (2.0 * (rect.size.x + rect.size.y));
            let grown = MinAreaRect {
                size: rect.size + Vec2::splat(2.0 * distance),
                ..rect
            };
            if grown.size.min_element() < 5.0 {
                continue;
            }
            let mapped = grown.corners().map(|p| {
                Vec2::new(
                    (p.x / w as f32 * iw).round().clamp(0.0, iw),
                    (p.y / h as f32 * ih).round().clamp(0.0, ih),
                )
            });
            let polygon = order_clockwise(mapped).map(|p| {
                Vec2::new(
                    p.x.clamp(0.0, iw - 1.0).trunc(),
                    p.y.clamp(0.0, ih - 1.0).trunc(),
                )
            });
            let side_w = (polygon[0] - polygon[1]).length().trunc();
            let side_h = (polygon[0] - polygon[3]).length().trunc();
            if side_w <= 3.0 || side_h <= 3.0 {
                continue;
            }
            out.push(TextBox { score, polygon });
        }
        Ok(out)
    }
}

/// Area of a simple polygon (shoelace, absolute).
pub fn polygon_area(p: &[Vec2]) -> f32 {
    let n = p.len();
    (0..n)
        .map(|i| p[i].perp_dot(p[(i + 1) % n]))
        .sum::<f32>()
        .abs()
        * 0.5
}

/// Intersection over union of two convex polygons (Sutherland–Hodgman clipping), 0 when either
/// is degenerate.
pub fn convex_polygon_iou(a: &[Vec2], b: &[Vec2]) -> f32 {
    let orient = |p: &[Vec2]| -> Vec<Vec2> {
        let s: f32 = (0..p.len())
            .map(|i| p[i].perp_dot(p[(i + 1) % p.len()]))
            .sum();
        if s < 0.0 {
            p.iter().rev().copied().collect()
        } else {
            p.to_vec()
        }
    };
    let (a, b) = (orient(a), orient(b));
    let mut inter = a.clone();
    for i in 0..b.len() {
        let (c0, c1) = (b[i], b[(i + 1) % b.len()]);
        let inside = |p: Vec2| (c1 - c0).perp_dot(p - c0) >= 0.0;
        let input = std::mem::take(&mut inter);
        for j in 0..input.len() {
            let (p, q) = (input[j], input[(j + 1) % input.len()]);
            let cut = |p: Vec2, q: Vec2| {
                let (dp, dq) = ((c1 - c0).perp_dot(p - c0), (c1 - c0).perp_dot(q - c0));
                p + (q - p) * (dp / (dp - dq))
            };
            match (inside(p), inside(q)) {
                (true, true) => inter.push(q),
                (true, false) => inter.push(cut(p, q)),
                (false, true) => {
                    inter.push(cut(p, q));
                    inter.push(q);
                }
                (false, false) => {}
            }
        }
        if inter.is_empty() {
            return 0.0;
        }
    }
    let i = polygon_area(&inter);
    let u = polygon_area(&a) + polygon_area(&b) - i;
    if u > 0.0 { i / u } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn det_resize_like_rapidocr() {
        let r = DetResize::default();
        // page.png 384x191: ratio 736/191; 384·3.853 = 1479.7 → 1479 → 46.2 → 1472; 736.
        assert_eq!(r.input_size(384, 191), Some((1472, 736)));
        // Large enough already: only rounded to multiples of 32 (ties to even: 784 = 24.5·32 → 768).
        assert_eq!(r.input_size(800, 784), Some((800, 768)));
        assert_eq!(r.input_size(3000, 800), None);
    }

    #[test]
    fn min_area_rect_and_unclip_by_hand() {
        // A 10x4 rectangle of pixels rotated by 0: hull of pixel centres is 9x3.
        let mut pts = Vec::new();
        for y in 0..4 {
            for x in 0..10 {
                pts.push(Vec2::new(x as f32, y as f32));
            }
        }
        let r = min_area_rect(&convex_hull(&mut pts)).unwrap();
        let s = if r.size.x > r.size.y {
            r.size
        } else {
            Vec2::new(r.size.y, r.size.x)
        };
        assert!((s - Vec2::new(9.0, 3.0)).length() < 1e-5, "{r:?}");
        assert!((r.center - Vec2::new(4.5, 1.5)).length() < 1e-5);
        // A diamond (45°): side √2·2.
        let mut d = vec![
            Vec2::new(2.0, 0.0),
            Vec2::new(4.0, 2.0),
            Vec2::new(2.0, 4.0),
            Vec2::new(0.0, 2.0),
        ];
        let r = min_area_rect(&convex_hull(&mut d)).unwrap();
        assert!((r.size.x * r.size.y - 8.0).abs() < 1e-4);
    }

    #[test]
    fn db_decode_by_hand() {
        // A 40x20 map with a 20x6 block of 0.9 at (10, 7): one box. Dilation grows it by one
        // pixel right and down (21x7 pixels, hull 20x6), score 0.9·(21·7 − 27)/(21·7) averaged
        // with the dilated border zeros... check the rectangle instead: grown by
        // 20·6·1.6/(2·26) = 3.69 px per side, then mapped 2x to a 80x40 image.
        let (w, h) = (40, 20);
        let mut prob = vec![0.0f32; w * h];
        for y in 7..13 {
            for x in 10..30 {
                prob[y * w + x] = 0.9;
            }
        }
        let boxes = DbPostProcess::default()
            .decode(&prob, (w, h), (80, 40))
            .unwrap();
        assert_eq!(boxes.len(), 1, "{boxes:?}");
        let b = &boxes[0];
        let d = 20.0 * 6.0 * 1.6 / 52.0;
        // Map x: 10 − d .. 30 + d; y: 7 − d .. 13 + d; times 2, rounded.
        let want_x0 = ((10.0 - d) * 2.0f32).round();
        let want_y1 = ((13.0 + d) * 2.0f32).round();
        assert_eq!(b.polygon[0].x, want_x0);
        assert_eq!(b.polygon[2].y, want_y1);
        assert!(b.score > 0.5 && b.score <= 0.9);
        assert!(
            DbPostProcess::default()
                .decode(&prob, (w, h + 1), (80, 40))
                .is_err()
        );
    }

    #[test]
    fn polygon_iou_by_hand() {
        let sq = |x: f32| {
            [
                Vec2::new(x, 0.0),
                Vec2::new(x + 2.0, 0.0),
                Vec2::new(x + 2.0, 2.0),
                Vec2::new(x, 2.0),
            ]
        };
        assert!((convex_polygon_iou(&sq(0.0), &sq(0.0)) - 1.0).abs() < 1e-6);
        assert!((convex_polygon_iou(&sq(0.0), &sq(1.0)) - 1.0 / 3.0).abs() < 1e-6);
        assert_eq!(convex_polygon_iou(&sq(0.0), &sq(5.0)), 0.0);
    }
}
