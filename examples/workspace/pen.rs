//! Handwriting: while a tracked hand pinches (thumb tip to index tip closer than a third of its
//! palm), its index fingertip is a pen on the main page. Each new fingertip position on the page
//! extends the stroke, drawn into the page's texture at once (the ink shows in the next frame);
//! a stroke ends when the pinch does. Strokes go into `stats.json` (page uv) and, headless,
//! `page_ink.png` beside it; the latency from the fingertip's camera capture to the ink being
//! on the page is measured per stroke point.

use bevy::prelude::*;
use heimdall_bevy::prelude::*;
use heimdall_examples::ar_view::ArView;
use heimdall_examples::args::AppArgs;
use heimdall_examples::gestures::pinch;
use heimdall_examples::latency::LatencyLog;
use heimdall_examples::report::AppReport;
use serde_json::json;

use crate::pages::{PAGE_PX, Pages};

/// Ink radius in page pixels.
const INK_RADIUS: f32 = 2.2;

/// The strokes so far.
#[derive(Resource, Default, Debug)]
pub struct Strokes {
    /// Finished and current strokes: page uv points.
    pub strokes: Vec<Vec<Vec2>>,
    /// Whether the last stroke is still being drawn, and by which hand.
    pen: Option<Entity>,
    /// The last camera frame a point came from, per hand (one point per hand result).
    last_frame: Vec<(Entity, u64)>,
    /// Capture to ink on the page (ms).
    pub latency: LatencyLog,
    /// Whether the ink changed since `page_ink.png` was written.
    dirty: bool,
}

/// New hand results extend the stroke of the pinching hand.
pub fn write(
    tracking: Query<&HandTracking>,
    hands: Query<(Entity, &TrackedHand)>,
    view: Res<ArView>,
    clock: Res<HeimdallClock>,
    pages: Res<Pages>,
    mut strokes: ResMut<Strokes>,
    mut images: ResMut<Assets<Image>>,
) {
    let Some(tracking) = tracking.iter().next() else {
        return;
    };
    let mut writing = None;
    for &e in &tracking.hands {
        let Ok((e, h)) = hands.get(e) else { continue };
        let seen = strokes
            .last_frame
            .iter()
            .any(|&(x, f)| x == e && f == h.frame_index);
        if seen || h.hand.presence < 0.5 {
            continue;
        }
        strokes.last_frame.retain(|&(x, _)| x != e);
        strokes.last_frame.push((e, h.frame_index));
        let point = pinch(&h.hand)
            .and_then(|p| view.floor_point(p.index_tip))
            .and_then(|p| pages.page_uv(p));
        if let Some(uv) = point
            && strokes.pen.is_none_or(|p| p == e)
        {
            writing = Some((e, uv, h.capture_time));
            break;
        }
    }
    let Some((hand, uv, captured)) = writing else {
        return;
    };
    if strokes.pen != Some(hand) {
        strokes.pen = Some(hand);
        strokes.strokes.push(Vec::new());
    }
    let from = strokes.strokes.last().and_then(|s| s.last().copied());
    if let Some(s) = strokes.strokes.last_mut() {
        s.push(uv);
    }
    if let Some(mut img) = images.get_mut(&pages.texture)
        && let Some(data) = img.data.as_mut()
    {
        ink_line(data, from.unwrap_or(uv), uv);
    }
    strokes.dirty = true;
    let now = clock.elapsed();
    strokes
        .latency
        .push(now.saturating_sub(captured).as_secs_f64() * 1e3);
}

/// Lifts the pen when the writing hand's latest result does not pinch.
pub fn lift(hands: Query<&TrackedHand>, mut strokes: ResMut<Strokes>) {
    if let Some(pen) = strokes.pen {
        let pinching = hands
            .get(pen)
            .is_ok_and(|h| h.hand.presence >= 0.5 && pinch(&h.hand).is_some());
        if !pinching {
            strokes.pen = None;
        }
    }
}

/// A line of ink from `a` to `b` (page uv) into RGBA8 page pixels: discs every half pixel.
pub fn ink_line(px: &mut [u8], a: Vec2, b: Vec2) {
    let size = PAGE_PX.as_vec2();
    let (pa, pb) = (a * size, b * size);
    let steps = ((pb - pa).length() * 2.0).ceil().max(1.0) as usize;
    for i in 0..=steps {
        let c = pa.lerp(pb, i as f32 / steps as f32);
        let r = INK_RADIUS;
        for y in (c.y - r).floor() as i32..=(c.y + r).ceil() as i32 {
            for x in (c.x - r).floor() as i32..=(c.x + r).ceil() as i32 {
                if x < 0 || y < 0 || x >= PAGE_PX.x as i32 || y >= PAGE_PX.y as i32 {
                    continue;
                }
                if Vec2::new(x as f32 + 0.5, y as f32 + 0.5).distance(c) > r {
                    continue;
                }
                let i = ((y as u32 * PAGE_PX.x + x as u32) * 4) as usize;
                if let Some(p) = px.get_mut(i..i + 4) {
                    p.copy_from_slice(&[20, 40, 140, 255]);
                }
            }
        }
    }
}

/// The strokes into `stats.json`; headless, the inked page into `page_ink.png` when it changed
/// (at most twice a second).
pub fn report(
    args: Res<AppArgs>,
    pages: Res<Pages>,
    images: Res<Assets<Image>>,
    time: Res<Time>,
    mut strokes: ResMut<Strokes>,
    mut report: ResMut<AppReport>,
    mut last_write: Local<f64>,
) {
    if !strokes.is_changed() {
        return;
    }
    let points: usize = strokes.strokes.iter().map(Vec::len).sum();
    report.0.insert(
        "strokes".into(),
        json!({
            "count": strokes.strokes.len(),
            "points": points,
            "page_uv": strokes.strokes.iter()
                .map(|s| s.iter().map(|p| [p.x, p.y]).collect::<Vec<_>>())
                .collect::<Vec<_>>(),
            "capture_to_ink_ms": strokes.latency.summary(),
        }),
    );
    let now = time.elapsed_secs_f64();
    if let (true, Some(out)) = (strokes.dirty && now - *last_write > 0.5, &args.out)
        && let Some(img) = images.get(&pages.texture)
        && let Some(data) = &img.data
    {
        let path = out.join("page_ink.png");
        if let Err(e) = image::save_buffer(
            &path,
            data,
            PAGE_PX.x,
            PAGE_PX.y,
            image::ExtendedColorType::Rgba8,
        ) {
            warn!("writing {}: {e}", path.display());
        }
        strokes.dirty = false;
        *last_write = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_of_ink_covers_its_path_and_nothing_far_from_it() {
        let mut px = vec![255u8; (PAGE_PX.x * PAGE_PX.y * 4) as usize];
        ink_line(&mut px, Vec2::new(0.1, 0.5), Vec2::new(0.9, 0.5));
        let at = |x: u32, y: u32| px[((y * PAGE_PX.x + x) * 4) as usize];
        let y = PAGE_PX.y / 2;
        for x in [PAGE_PX.x / 10 + 1, PAGE_PX.x / 2, PAGE_PX.x * 9 / 10 - 1] {
            assert_eq!(at(x, y), 20, "ink at ({x}, {y})");
        }
        assert_eq!(at(PAGE_PX.x / 2, y + 5), 255, "no ink 5 px off the line");
        assert_eq!(at(2, y), 255, "no ink before the start");
    }
}
