//! Drawing results onto an [`RgbaImage`] (`heimdall detect --out`): lines, boxes, polygons and
//! dots, one pixel wide, no antialiasing.

use glam::Vec2;

use super::rgba::RgbaImage;

/// Sets pixel `(x, y)` to `color` when it lies inside the image.
pub fn put(image: &mut RgbaImage, x: i64, y: i64, color: [u8; 4]) {
    if x >= 0
        && y >= 0
        && (x as u64) < u64::from(image.width)
        && (y as u64) < u64::from(image.height)
    {
        let at = (y as usize * image.width as usize + x as usize) * 4;
        image.data[at..at + 4].copy_from_slice(&color);
    }
}

/// A line between two points in pixels (both ends included).
pub fn line(image: &mut RgbaImage, a: Vec2, b: Vec2, color: [u8; 4]) {
    if !(a.is_finite() && b.is_finite()) {
        return;
    }
    let steps = (b - a).abs().max_element().ceil().clamp(1.0, 1e5) as usize;
    for i in 0..=steps {
        let p = a + (b - a) * (i as f32 / steps as f32);
        put(image, p.x.round() as i64, p.y.round() as i64, color);
    }
}

/// A closed polygon through `points` (pixels).
pub fn polygon(image: &mut RgbaImage, points: &[Vec2], color: [u8; 4]) {
    for (i, &p) in points.iter().enumerate() {
        line(image, p, points[(i + 1) % points.len()], color);
    }
}

/// An axis-aligned box from `min` to `max` (pixels).
pub fn rect(image: &mut RgbaImage, min: Vec2, max: Vec2, color: [u8; 4]) {
    polygon(
        image,
        &[min, Vec2::new(max.x, min.y), max, Vec2::new(min.x, max.y)],
        color,
    );
}

/// A filled square dot of `radius` pixels around `center`.
pub fn dot(image: &mut RgbaImage, center: Vec2, radius: i64, color: [u8; 4]) {
    let (cx, cy) = (center.x.round() as i64, center.y.round() as i64);
    for y in -radius..=radius {
        for x in -radius..=radius {
            put(image, cx + x, cy + y, color);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn box_and_clipping_by_hand() {
        let mut im = RgbaImage::new(4, 4).unwrap();
        rect(&mut im, Vec2::ZERO, Vec2::splat(3.0), [255; 4]);
        // The border is set, the inside is not; points outside are ignored.
        assert_eq!(im.pixel(0, 3), Some([255; 4]));
        assert_eq!(im.pixel(1, 1), Some([0, 0, 0, 255]));
        dot(&mut im, Vec2::splat(-5.0), 1, [9; 4]);
        line(&mut im, Vec2::splat(f32::NAN), Vec2::ZERO, [9; 4]);
    }
}
