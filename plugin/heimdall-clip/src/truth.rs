//! Ground truth: every annotated box and point of a frame, in frame uv, and `ground_truth.json`.

use glam::Vec2;

use heimdall_image::CropTransform;
use heimdall_image::Rect;

use super::Clip;
use super::spec::AnnotationKind;

/// The ground truth of one annotated box in one frame.
#[derive(Clone, Debug, PartialEq)]
pub struct TruthBox {
    /// The annotation's label (`"face"` for `face_box_px`).
    pub label: String,
    /// What it is.
    pub kind: AnnotationKind,
    /// The layer it belongs to (index into the spec's `layers`), `None` for the stage.
    pub layer: Option<usize>,
    /// The box in frame uv (top-left origin, y down): the bounding box of its four corners
    /// mapped into the frame, clipped to the frame; `None` when less than half of it is in view.
    pub rect: Option<Rect>,
}

/// The ground truth of one annotated layer point in one frame.
#[derive(Clone, Debug, PartialEq)]
pub struct TruthPoint {
    /// The point's label.
    pub label: String,
    /// The layer it belongs to.
    pub layer: usize,
    /// Its position in frame uv; `None` when outside the frame.
    pub pos: Option<Vec2>,
}

/// Everything annotated in one frame, in the clip's order (see [`Clip::truth`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameTruth {
    /// One per annotated box.
    pub boxes: Vec<TruthBox>,
    /// One per layer point.
    pub points: Vec<TruthPoint>,
}

impl FrameTruth {
    /// The first box with this label (and layer, for a layer's).
    pub fn find_box(&self, label: &str, layer: Option<usize>) -> Option<&TruthBox> {
        self.boxes
            .iter()
            .find(|b| b.label == label && b.layer == layer)
    }

    /// The boxes of one kind, in order.
    pub fn boxes_of(&self, kind: AnnotationKind) -> impl Iterator<Item = &TruthBox> {
        self.boxes.iter().filter(move |b| b.kind == kind)
    }

    /// The point with this label on this layer.
    pub fn find_point(&self, label: &str, layer: usize) -> Option<&TruthPoint> {
        self.points
            .iter()
            .find(|p| p.label == label && p.layer == layer)
    }
}

/// The rule for every box: clipped to the frame, `None` when less than half of it is in view.
fn visible_part(full: Rect) -> Option<Rect> {
    let visible = full.intersection(&Rect::new(0.0, 0.0, 1.0, 1.0))?;
    (full.area() > 0.0 && visible.area() >= 0.5 * full.area()).then_some(visible)
}

fn in_frame(uv: Vec2) -> bool {
    (0.0..=1.0).contains(&uv.x) && (0.0..=1.0).contains(&uv.y)
}

impl Clip {
    /// The face box in stage pixels: `face_box_px`, else the first stage annotation of kind
    /// `face`; `None` for a clip without a face.
    pub fn face_box(&self) -> Option<Rect> {
        let b = self.spec.face_box_px.or_else(|| {
            self.spec
                .annotations
                .iter()
                .find(|a| a.kind == AnnotationKind::Face)
                .map(|a| a.box_px)
        })?;
        Some(Rect::new(b[0], b[1], b[2], b[3]))
    }

    /// The annotated face box in stage pixels (see [`Clip::face_box`]); an empty rect at the
    /// origin for a clip without a face.
    pub fn face_box_px(&self) -> Rect {
        self.face_box().unwrap_or_default()
    }

    /// A stage box (pixels) mapped into the frame whose uv → stage uv map inverts to `inv`.
    fn stage_box_in_frame(&self, inv: &CropTransform, corners_px: [Vec2; 4]) -> Option<Rect> {
        let src = self.source.size();
        Rect::bounding(corners_px.map(|c| inv.apply(c / src)))
    }

    /// The annotated face box mapped into frame `i`, unclipped, in frame uv (`None` if the clip
    /// has no face, or the camera map is degenerate).
    pub fn face_box_unclipped(&self, i: usize) -> Option<Rect> {
        let face = self.face_box()?;
        let inv = self.frame_to_source(i).inverse()?;
        self.stage_box_in_frame(&inv, face.corners())
    }

    /// Ground truth of the face in frame `i` (modulo the length): the face box in frame uv,
    /// clipped to the frame; `None` when less than half of it is in view (or no face).
    pub fn ground_truth(&self, i: usize) -> Option<Rect> {
        visible_part(self.face_box_unclipped(i)?)
    }

    /// Whether the whole face box is inside frame `i`.
    pub fn face_fully_visible(&self, i: usize) -> bool {
        self.face_box_unclipped(i).is_some_and(|r| {
            let eps = 1e-6;
            r.x >= -eps && r.y >= -eps && r.x + r.w <= 1.0 + eps && r.y + r.h <= 1.0 + eps
        })
    }

    /// Everything annotated, in frame `i` (modulo the length). Boxes in this order: the face of
    /// `face_box_px` (if given), the stage's `annotations`, then each layer's `annotations`
    /// (layers in order); points: each layer's `points`, layers in order. The order and labels
    /// are the same for every frame. Boxes and points do not know about occlusion (a hand
    /// layer over an object leaves the object's box as it is).
    pub fn truth(&self, i: usize) -> FrameTruth {
        let inv = self.frame_to_source(i).inverse();
        let src = self.source.size();
        let mut out = FrameTruth::default();
        let mut push_box = |label: &str, kind, layer, rect: Option<Rect>| {
            out.boxes.push(TruthBox {
                label: label.to_string(),
                kind,
                layer,
                rect: rect.and_then(visible_part),
            });
        };
        let stage_box = |b: &[f32; 4]| {
            let r = Rect::new(b[0], b[1], b[2], b[3]);
            inv.and_then(|inv| self.stage_box_in_frame(&inv, r.corners()))
        };
        if let Some(face) = &self.spec.face_box_px {
            push_box("face", AnnotationKind::Face, None, stage_box(face));
        }
        for a in &self.spec.annotations {
            push_box(&a.label, a.kind, None, stage_box(&a.box_px));
        }
        for (l, layer) in self.spec.layers.iter().enumerate() {
            let to_stage = self.layer_to_stage(l, i);
            for a in &layer.annotations {
                let [x, y, w, h] = a.box_px;
                let corners = Rect::new(x, y, w, h)
                    .corners()
                    .map(|c| to_stage.transform_point2(c));
                let rect = inv.and_then(|inv| self.stage_box_in_frame(&inv, corners));
                push_box(&a.label, a.kind, Some(l), rect);
            }
        }
        for (l, layer) in self.spec.layers.iter().enumerate() {
            let to_stage = self.layer_to_stage(l, i);
            for p in &layer.points {
                let stage = to_stage.transform_point2(Vec2::from(p.px));
                let pos = inv
                    .map(|inv| inv.apply(stage / src))
                    .filter(|uv| uv.is_finite() && in_frame(*uv));
                out.points.push(TruthPoint {
                    label: p.label.clone(),
                    layer: l,
                    pos,
                });
            }
        }
        out
    }

    /// Whether `ground_truth.json` has the first clip's format (a face and nothing else).
    fn face_only(&self) -> bool {
        self.spec.annotations.is_empty() && self.spec.layers.is_empty()
    }

    /// The per-frame ground truth as JSON, for tools without Rust (the content of the clip's
    /// `ground_truth.json`; both formats are described in `assets/clips/README.md`). A clip
    /// with only `face_box_px` (no `annotations`, no `layers`) gets the first clip's format:
    /// frame size, fps, and `boxes`, one face `[x, y, w, h]` (frame uv, 4 decimals) or `null`
    /// per frame. Any other clip gets the general one: the list of boxes and points once, then
    /// per frame one line `{"boxes": [...], "points": [...]}` in that order.
    pub fn ground_truth_json(&self) -> String {
        let mut s = String::new();
        s.push_str("{\n");
        if self.face_only() {
            s.push_str("  \"format\": \"per frame: face box [x, y, w, h] normalised to the frame (top-left origin, y down), clipped to the frame; null when less than half of it is in view\",\n");
        } else {
            s.push_str("  \"format\": \"annotations: the boxes (label, kind, layer: index or null for the stage); points: the layer points (label, layer); truth: per frame, boxes in the order of annotations, [x, y, w, h] normalised to the frame (top-left origin, y down), clipped to the frame, null when less than half of it is in view; points in the order of points, [x, y] normalised to the frame, null when outside\",\n");
        }
        s.push_str(&format!(
            "  \"width\": {},\n  \"height\": {},\n  \"fps\": {},\n  \"frames\": {},\n",
            self.spec.width, self.spec.height, self.spec.fps, self.spec.frames
        ));
        if self.face_only() {
            s.push_str("  \"boxes\": [\n");
            for i in 0..self.len() {
                let sep = if i + 1 < self.len() { "," } else { "" };
                match self.ground_truth(i) {
                    Some(r) => s.push_str(&format!(
                        "    [{:.4}, {:.4}, {:.4}, {:.4}]{sep}\n",
                        r.x, r.y, r.w, r.h
                    )),
                    None => s.push_str(&format!("    null{sep}\n")),
                }
            }
            s.push_str("  ]\n}\n");
            return s;
        }
        let json_str = |v: &str| serde_json::Value::from(v).to_string();
        let layer = |l: Option<usize>| l.map_or("null".to_string(), |l| l.to_string());
        let first = self.truth(0);
        let list = |items: Vec<String>| {
            items
                .iter()
                .map(|x| format!("    {x}"))
                .collect::<Vec<_>>()
                .join(",\n")
        };
        let boxes = first.boxes.iter().map(|b| {
            format!(
                "{{\"label\": {}, \"kind\": \"{}\", \"layer\": {}}}",
                json_str(&b.label),
                b.kind.as_str(),
                layer(b.layer)
            )
        });
        s.push_str(&format!(
            "  \"annotations\": [\n{}\n  ],\n",
            list(boxes.collect())
        ));
        let points = first.points.iter().map(|p| {
            format!(
                "{{\"label\": {}, \"layer\": {}}}",
                json_str(&p.label),
                p.layer
            )
        });
        s.push_str(&format!(
            "  \"points\": [\n{}\n  ],\n",
            list(points.collect())
        ));
        let frames = (0..self.len()).map(|i| {
            let t = self.truth(i);
            let boxes: Vec<String> = t
                .boxes
                .iter()
                .map(|b| match b.rect {
                    Some(r) => format!("[{:.4},{:.4},{:.4},{:.4}]", r.x, r.y, r.w, r.h),
                    None => "null".into(),
                })
                .collect();
            let points: Vec<String> = t
                .points
                .iter()
                .map(|p| match p.pos {
                    Some(v) => format!("[{:.4},{:.4}]", v.x, v.y),
                    None => "null".into(),
                })
                .collect();
            format!(
                "{{\"boxes\": [{}], \"points\": [{}]}}",
                boxes.join(","),
                points.join(",")
            )
        });
        s.push_str(&format!(
            "  \"truth\": [\n{}\n  ]\n}}\n",
            list(frames.collect())
        ));
        s
    }
}
