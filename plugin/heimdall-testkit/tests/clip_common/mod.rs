//! Helpers of the clip tests: a tiny synthetic clip with a stage, an RGBA layer with a marker
//! pixel, its spec, and the hand-computed transforms to check it against.
#![allow(dead_code)]

use std::path::PathBuf;

use glam::Vec2;
use heimdall_image::{Rect, RgbaImage};
use heimdall_testkit::clip::{
    Annotation, AnnotationKind, ClipSpec, Keyframe, LayerKeyframe, LayerPoint, LayerSpec,
};

/// The stage colour (uniform, opaque).
pub const STAGE: [u8; 4] = [40, 80, 120, 255];
/// The marker: one opaque pixel of layer 0 at (10, 7).
pub const MARKER: [u8; 4] = [255, 0, 255, 255];
pub const MARKER_PX: (u32, u32) = (10, 7);
/// A half-transparent block of layer 0: x 24..36, y 10..22.
pub const BLOCK: [u8; 4] = [0, 200, 0, 128];

pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A fresh scratch directory under the system temp dir.
pub fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("heimdall-cliplayers-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn solid(w: u32, h: u32, c: [u8; 4]) -> RgbaImage {
    RgbaImage::from_raw(w, h, c.repeat((w * h) as usize)).unwrap()
}

pub fn set(img: &mut RgbaImage, x: u32, y: u32, c: [u8; 4]) {
    let i = ((y * img.width + x) * 4) as usize;
    img.data[i..i + 4].copy_from_slice(&c);
}

/// Layer 0: 40x30, transparent but for the marker pixel and the half-transparent block.
pub fn layer_image() -> RgbaImage {
    let mut img = solid(40, 30, [0, 0, 0, 0]);
    set(&mut img, MARKER_PX.0, MARKER_PX.1, MARKER);
    for y in 10..22 {
        for x in 24..36 {
            set(&mut img, x, y, BLOCK);
        }
    }
    img
}

pub fn ann(label: &str, kind: AnnotationKind, box_px: [f32; 4]) -> Annotation {
    Annotation {
        label: label.into(),
        kind,
        box_px,
    }
}

pub fn lkey(frame: u32, center: [f32; 2], scale: f32, rotation_deg: f32) -> LayerKeyframe {
    LayerKeyframe {
        frame,
        center,
        scale,
        rotation_deg,
    }
}

/// The synthetic clip: stage 200x160, frame 100x80, camera centre (100, 80) and zoom 2 (no roll)
/// in frames 0..=21: stage p lands at frame px (p − (100, 80)) · 2 + (50, 40).
/// Layer 0 (40x30, centre (20, 15)) at frame 0: centre (90, 75), scale 1, no rotation, so layer
/// q lands on the stage at q + (70, 60); frame 10: centre (60, 75) (moved 30 px left); frame 20:
/// centre (50, 75); frame 30: rotated 90° and scaled 1.5 at (95, 80), camera rolled −30°.
pub fn spec() -> ClipSpec {
    ClipSpec {
        source: "stage.png".into(),
        width: 100,
        height: 80,
        fps: 30.0,
        frames: 40,
        face_box_px: None,
        keyframes: vec![
            Keyframe {
                frame: 0,
                center: [100.0, 80.0],
                zoom: 2.0,
                rotation_deg: 0.0,
            },
            Keyframe {
                frame: 20,
                center: [100.0, 80.0],
                zoom: 2.0,
                rotation_deg: 0.0,
            },
            // Held until frame 21, so that frames 0..=20 see no roll (Catmull-Rom looks one
            // keyframe ahead).
            Keyframe {
                frame: 21,
                center: [100.0, 80.0],
                zoom: 2.0,
                rotation_deg: 0.0,
            },
            Keyframe {
                frame: 30,
                center: [100.0, 80.0],
                zoom: 1.25,
                rotation_deg: -30.0,
            },
        ],
        annotations: vec![
            ann("couch", AnnotationKind::Object, [90.0, 70.0, 20.0, 10.0]),
            ann("sign", AnnotationKind::Text, [120.0, 60.0, 20.0, 10.0]),
        ],
        layers: vec![LayerSpec {
            source: "hand.png".into(),
            keyframes: vec![
                lkey(0, [90.0, 75.0], 1.0, 0.0),
                lkey(10, [60.0, 75.0], 1.0, 0.0),
                lkey(20, [50.0, 75.0], 1.0, 0.0),
                lkey(30, [95.0, 80.0], 1.5, 90.0),
            ],
            // The marker's pixel, and the block.
            annotations: vec![
                ann("hand", AnnotationKind::Hand, [10.0, 7.0, 1.0, 1.0]),
                ann("block", AnnotationKind::Object, [24.0, 10.0, 12.0, 12.0]),
            ],
            points: vec![
                LayerPoint {
                    label: "index_tip".into(),
                    px: [10.5, 7.5],
                },
                LayerPoint {
                    label: "wrist".into(),
                    px: [0.0, 29.0],
                },
            ],
        }],
    }
}

/// Writes the synthetic clip (clip.json, stage.png, hand.png) into a fresh directory.
pub fn write_clip(name: &str) -> PathBuf {
    let dir = scratch(name);
    std::fs::write(
        dir.join("clip.json"),
        serde_json::to_string_pretty(&spec()).unwrap(),
    )
    .unwrap();
    solid(200, 160, STAGE)
        .save_png(dir.join("stage.png"))
        .unwrap();
    layer_image().save_png(dir.join("hand.png")).unwrap();
    dir
}

/// Where layer pixel `q` lands in frame pixels, by the documented model (independent of the
/// crate's code): layer → stage `c + s · R(φ) · (q − size / 2)`; stage → frame
/// `R(−θ) · (p − camera centre) · zoom + frame / 2`.
pub fn predict(
    q: Vec2,
    (lc, ls, lphi): (Vec2, f32, f32),
    (cc, zoom, theta): (Vec2, f32, f32),
) -> Vec2 {
    let rot = |a: f32, v: Vec2| {
        let (s, c) = a.to_radians().sin_cos();
        Vec2::new(c * v.x - s * v.y, s * v.x + c * v.y)
    };
    let p = lc + ls * rot(lphi, q - Vec2::new(20.0, 15.0));
    rot(-theta, p - cc) * zoom + Vec2::new(50.0, 40.0)
}

/// Weighted centre (frame pixels) of the marker's colour in a frame over the uniform stage.
pub fn marker_centre(f: &RgbaImage) -> Vec2 {
    let (mut sum, mut total) = (Vec2::ZERO, 0.0);
    for y in 0..f.height {
        for x in 0..f.width {
            let p = f.pixel(x, y).unwrap();
            // Red above the stage's and no green: only the marker (the block lowers red).
            let w = (f32::from(p[0]) - f32::from(STAGE[0])).max(0.0);
            sum += w * Vec2::new(x as f32 + 0.5, y as f32 + 0.5);
            total += w;
        }
    }
    assert!(total > 0.0, "marker not found");
    sum / total
}

pub fn assert_rect(got: Rect, want: Rect, tol: f32) {
    let d = [
        got.x - want.x,
        got.y - want.y,
        got.w - want.w,
        got.h - want.h,
    ];
    assert!(d.iter().all(|v| v.abs() < tol), "{got:?} vs {want:?}");
}
