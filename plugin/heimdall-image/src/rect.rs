//! Axis-aligned rectangles (boxes of detections and ground truth).

use glam::Vec2;

/// An axis-aligned rectangle: top-left corner `(x, y)` and size `(w, h)`, in whatever frame the
/// owner documents (normalised uv for detections and ground truth, pixels for annotations).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Rect {
    /// Left edge.
    pub x: f32,
    /// Top edge.
    pub y: f32,
    /// Width (≥ 0 for a valid rectangle).
    pub w: f32,
    /// Height (≥ 0 for a valid rectangle).
    pub h: f32,
}

impl Rect {
    /// A rectangle from its top-left corner and size.
    pub const fn new(x: f32, y: f32, w: f32, h: f32) -> Rect {
        Rect { x, y, w, h }
    }

    /// The rectangle spanned by two corners (in any order).
    pub fn from_corners(a: Vec2, b: Vec2) -> Rect {
        let min = a.min(b);
        let max = a.max(b);
        Rect::new(min.x, min.y, max.x - min.x, max.y - min.y)
    }

    /// The smallest rectangle holding all `points` (`None` for no points or any non-finite one).
    pub fn bounding(points: impl IntoIterator<Item = Vec2>) -> Option<Rect> {
        let mut min = Vec2::splat(f32::INFINITY);
        let mut max = Vec2::splat(f32::NEG_INFINITY);
        let mut any = false;
        for p in points {
            if !p.is_finite() {
                return None;
            }
            min = min.min(p);
            max = max.max(p);
            any = true;
        }
        any.then(|| Rect::from_corners(min, max))
    }

    /// Top-left corner.
    pub fn min(&self) -> Vec2 {
        Vec2::new(self.x, self.y)
    }

    /// Bottom-right corner.
    pub fn max(&self) -> Vec2 {
        Vec2::new(self.x + self.w, self.y + self.h)
    }

    /// Centre.
    pub fn center(&self) -> Vec2 {
        Vec2::new(self.x + 0.5 * self.w, self.y + 0.5 * self.h)
    }

    /// The four corners: top-left, top-right, bottom-right, bottom-left.
    pub fn corners(&self) -> [Vec2; 4] {
        let (a, b) = (self.min(), self.max());
        [a, Vec2::new(b.x, a.y), b, Vec2::new(a.x, b.y)]
    }

    /// Area (0 for an empty or inverted rectangle).
    pub fn area(&self) -> f32 {
        self.w.max(0.0) * self.h.max(0.0)
    }

    /// The intersection (`None` when the rectangles do not overlap with positive area).
    pub fn intersection(&self, other: &Rect) -> Option<Rect> {
        let min = self.min().max(other.min());
        let max = self.max().min(other.max());
        (max.x > min.x && max.y > min.y).then(|| Rect::from_corners(min, max))
    }

    /// Intersection over union, in `[0, 1]` (0 when either is empty).
    pub fn iou(&self, other: &Rect) -> f32 {
        let inter = self.intersection(other).map_or(0.0, |r| r.area());
        let union = self.area() + other.area() - inter;
        if union > 0.0 { inter / union } else { 0.0 }
    }

    /// The rectangle scaled component-wise (e.g. uv to pixels with `(width, height)`).
    pub fn scaled(&self, s: Vec2) -> Rect {
        Rect::from_corners(self.min() * s, self.max() * s)
    }
}
