//! The apps' detections against their clip's ground truth (`heimdall_testkit::Clip::truth`),
//! summed up for `stats.json`: per kind (objects, hands, text), how many truth boxes were in
//! view in the frames results came from, how many a detection matched (IoU ≥
//! [`MATCH_IOU`], the same label for objects), how many detections matched nothing, and for
//! hands the landmark error against the clip's landmark points.

use std::collections::BTreeMap;

use bevy::prelude::*;
use heimdall_testkit::Clip;
use heimdall_testkit::clip::AnnotationKind;
use heimdall_vision::Rect;
use serde_json::{Value, json};

use crate::report::AppReport;

/// IoU at which a detection matches a truth box.
pub const MATCH_IOU: f32 = 0.5;

/// A detection in frame uv.
#[derive(Clone, Debug)]
pub struct Found {
    /// Its label (objects: the detector's class; others: the kind).
    pub label: String,
    /// Box in frame uv.
    pub rect: Rect,
    /// Score.
    pub score: f32,
}

impl Found {
    /// A detection.
    pub fn new(label: &str, rect: Rect, score: f32) -> Self {
        Found {
            label: label.to_string(),
            rect,
            score,
        }
    }
}

/// The bounding box `[x0, y0, x1, y1]` of points (none without points).
pub fn bounds(points: &[Vec2]) -> Option<[f32; 4]> {
    let first = points.first()?;
    let (lo, hi) = points
        .iter()
        .fold((*first, *first), |(lo, hi), p| (lo.min(*p), hi.max(*p)));
    Some([lo.x, lo.y, hi.x, hi.y])
}

/// Running counts of one kind.
#[derive(Clone, Debug, Default)]
struct KindLog {
    results: u64,
    truth_boxes: u64,
    matched: u64,
    found: u64,
    unmatched_found: u64,
    ious: Vec<f32>,
    /// Mean landmark distance over the truth box's diagonal, per matched hand.
    landmark_errors: Vec<f32>,
}

/// Detections against the truth, per kind.
#[derive(Debug, Default)]
pub struct DetectionLog {
    kinds: BTreeMap<&'static str, KindLog>,
    changed: bool,
}

impl DetectionLog {
    /// One object detector result (frame `frame_index` of the clip, looping).
    pub fn objects(&mut self, clip: &Clip, frame_index: u64, found: &[Found]) {
        self.result(clip, frame_index, AnnotationKind::Object, found, true);
    }

    /// One text detector result.
    pub fn text(&mut self, clip: &Clip, frame_index: u64, found: &[Found]) {
        self.result(clip, frame_index, AnnotationKind::Text, found, false);
    }

    /// One tracked hand's result: its landmarks' box, matched with the truth hands in view
    /// (each the box of its layer's landmark points in the frame when the clip has them: the
    /// box of a rotated layer's annotated box would be larger than the hand), and its landmarks
    /// (frame uv) compared with the matched hand's points.
    pub fn hand(&mut self, clip: &Clip, frame_index: u64, rect: Rect, points: &[Vec3]) {
        self.changed = true;
        let truth = clip.truth(frame_index as usize % clip.len().max(1));
        let log = self.kinds.entry(AnnotationKind::Hand.as_str()).or_default();
        log.results += 1;
        log.found += 1;
        let hands: Vec<(Option<usize>, Rect)> = truth
            .boxes_of(AnnotationKind::Hand)
            .filter_map(|t| {
                let r = t.rect?;
                let pts: Vec<Vec2> = truth
                    .points
                    .iter()
                    .filter(|p| Some(p.layer) == t.layer)
                    .filter_map(|p| p.pos)
                    .collect();
                let r = match bounds(&pts) {
                    Some([x0, y0, x1, y1]) if pts.len() >= 15 => {
                        Rect::new(x0, y0, x1 - x0, y1 - y0)
                    }
                    _ => r,
                };
                Some((t.layer, r))
            })
            .collect();
        log.truth_boxes += hands.len() as u64;
        let best = hands
            .iter()
            .map(|(layer, r)| (*layer, *r, iou(&rect, r)))
            .max_by(|a, b| a.2.total_cmp(&b.2));
        let Some((layer, r, v)) = best.filter(|b| b.2 >= MATCH_IOU) else {
            log.unmatched_found += 1;
            return;
        };
        log.matched += 1;
        log.ious.push(v);
        let diag = (r.w * r.w + r.h * r.h).sqrt();
        let want: Vec<Option<Vec2>> = truth
            .points
            .iter()
            .filter(|p| Some(p.layer) == layer)
            .map(|p| p.pos)
            .collect();
        if want.len() != 21 || points.len() != 21 || diag <= 0.0 {
            return;
        }
        let d: Vec<f32> = want
            .iter()
            .zip(points)
            .filter_map(|(w, p)| w.map(|w| w.distance(p.truncate())))
            .collect();
        if !d.is_empty() {
            log.landmark_errors
                .push(d.iter().sum::<f32>() / d.len() as f32 / diag);
        }
    }

    /// Matches `found` with the truth boxes of `kind` in view.
    fn result(
        &mut self,
        clip: &Clip,
        frame_index: u64,
        kind: AnnotationKind,
        found: &[Found],
        same_label: bool,
    ) {
        self.changed = true;
        let truth = clip.truth(frame_index as usize % clip.len().max(1));
        let log = self.kinds.entry(kind.as_str()).or_default();
        log.results += 1;
        log.found += found.len() as u64;
        if kind == AnnotationKind::Text {
            text_coverage(log, &truth, found);
            return;
        }
        let mut used = vec![false; found.len()];
        for t in truth.boxes_of(kind) {
            let Some(r) = t.rect else { continue };
            log.truth_boxes += 1;
            let best = found
                .iter()
                .enumerate()
                .filter(|(i, f)| {
                    !used[*i] && (!same_label || f.label.eq_ignore_ascii_case(&t.label))
                })
                .map(|(i, f)| (i, iou(&f.rect, &r)))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            if let Some((i, v)) = best
                && v >= MATCH_IOU
            {
                used[i] = true;
                log.matched += 1;
                log.ious.push(v);
            }
        }
        log.unmatched_found += used.iter().filter(|u| !**u).count() as u64;
    }

    /// The summary into the app's report (under `"detections"`), when something changed.
    pub fn write(&mut self, report: &mut AppReport) {
        if !self.changed {
            return;
        }
        self.changed = false;
        let mut out = serde_json::Map::new();
        for (kind, k) in &self.kinds {
            let ratio = |a: u64, b: u64| (b > 0).then(|| a as f64 / b as f64);
            out.insert(
                kind.to_string(),
                json!({
                    "results": k.results,
                    "truth_boxes_in_view": k.truth_boxes,
                    "matched": k.matched,
                    "recall": ratio(k.matched, k.truth_boxes),
                    "found": k.found,
                    "unmatched_found": k.unmatched_found,
                    "iou_p50": median(&k.ious),
                    "iou_definition": "text: the share of a found line the detections cover",
                    "landmark_error_p50": median(&k.landmark_errors),
                    "landmark_error_definition": "mean distance of the 21 landmarks to the \
                        clip's, over the diagonal of the truth hand box",
                }),
            );
        }
        report.0.insert("detections".into(), Value::Object(out));
    }
}

/// Text is matched by area, not box by box: the clip's truth has RapidOCR's line boxes on the
/// full-resolution stage, while a detector on a small frame may split or merge lines. A truth
/// line counts as found when detections cover at least [`TEXT_COVERAGE`] of it (sampled on a
/// 16 × 4 grid), and a detection as unmatched when its centre lies in no truth line.
fn text_coverage(log: &mut KindLog, truth: &heimdall_testkit::clip::FrameTruth, found: &[Found]) {
    let lines: Vec<Rect> = truth
        .boxes_of(AnnotationKind::Text)
        .filter_map(|t| t.rect)
        .collect();
    for r in &lines {
        log.truth_boxes += 1;
        let mut covered = 0;
        for i in 0..16 {
            for j in 0..4 {
                let p = Vec2::new(
                    r.x + r.w * (i as f32 + 0.5) / 16.0,
                    r.y + r.h * (j as f32 + 0.5) / 4.0,
                );
                covered += usize::from(found.iter().any(|f| contains(&f.rect, p)));
            }
        }
        let share = covered as f32 / 64.0;
        if share >= TEXT_COVERAGE {
            log.matched += 1;
            log.ious.push(share);
        }
    }
    log.unmatched_found += found
        .iter()
        .filter(|f| {
            let c = Vec2::new(f.rect.x + f.rect.w / 2.0, f.rect.y + f.rect.h / 2.0);
            !lines.iter().any(|r| contains(r, c))
        })
        .count() as u64;
}

/// Share of a truth text line detections must cover to find it.
pub const TEXT_COVERAGE: f32 = 0.5;

fn contains(r: &Rect, p: Vec2) -> bool {
    p.x >= r.x && p.x <= r.x + r.w && p.y >= r.y && p.y <= r.y + r.h
}

fn median(v: &[f32]) -> Option<f32> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f32::total_cmp);
    Some(s[s.len() / 2])
}

/// Intersection over union of two boxes.
pub fn iou(a: &Rect, b: &Rect) -> f32 {
    let inter = a.intersection(b).map_or(0.0, |r| r.area());
    let union = a.area() + b.area() - inter;
    if union > 0.0 { inter / union } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iou_of_hand_computed_boxes() {
        let a = Rect::new(0.0, 0.0, 0.2, 0.2);
        let b = Rect::new(0.1, 0.0, 0.2, 0.2);
        assert!((iou(&a, &b) - 0.02 / 0.06).abs() < 1e-6);
        assert_eq!(iou(&a, &Rect::new(0.5, 0.5, 0.1, 0.1)), 0.0);
        assert_eq!(
            bounds(&[Vec2::new(0.3, 0.1), Vec2::new(0.1, 0.4)]),
            Some([0.1, 0.1, 0.3, 0.4])
        );
        assert_eq!(bounds(&[]), None);
    }
}
