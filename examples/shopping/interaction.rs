//! How the room and the hands move the couch. The object detector's furniture (chairs, tables,
//! desks) anchors it: the couch goes on the floor a metre in front of the best one, until a hand
//! takes over. A pinching hand ([`heimdall_examples::gestures::pinch`]) drags it
//! over the floor; two pinching hands turn it by the change of the angle between them.

use bevy::prelude::*;
use heimdall_bevy::prelude::*;
use heimdall_examples::ar_view::ArView;
use heimdall_examples::gestures::pinch;
use heimdall_vision::hands::HAND_CONNECTIONS;

use crate::couch::{Couch, Placement};

/// Labels of the detector (OIDv4) the couch may be placed in front of.
pub const FURNITURE: [&str; 3] = ["Chair", "Table", "Desk"];

/// The DNN entities the interaction reads.
#[derive(Resource, Clone, Copy, Debug)]
pub struct Sensors {
    /// The object detector.
    pub objects: Entity,
    /// The palm detector (its [`HandTracking`] lists the hands).
    pub palms: Entity,
}

/// What the hands are doing to the couch.
#[derive(Resource, Default, Debug)]
pub struct Gesture {
    /// One hand dragging: the offset from its floor point to the couch.
    drag: Option<(Entity, Vec3)>,
    /// Two hands turning: the angle between them and the couch's yaw when it started.
    turn: Option<(f32, f32)>,
    /// Drags started so far.
    pub drags: u64,
    /// Turns started so far.
    pub turns: u64,
    /// Frames in which some hand pinched.
    pub pinch_frames: u64,
}

/// On every object result: the couch in front of the best-scoring furniture, unless a hand
/// placed it.
pub fn place_from_objects(
    sensors: Res<Sensors>,
    view: Res<ArView>,
    objects: Query<&DetectedObjects, Changed<DetectedObjects>>,
    mut couch: ResMut<Couch>,
) {
    if couch.placed_by == Placement::Hand {
        return;
    }
    let Ok(found) = objects.get(sensors.objects) else {
        return;
    };
    let Some(best) = found
        .objects
        .iter()
        .filter(|o| FURNITURE.contains(&o.label.as_str()))
        .max_by(|a, b| a.score.total_cmp(&b.score))
    else {
        return;
    };
    let b = best.bbox;
    let foot = Vec2::new(b.x + b.w / 2.0, b.y + b.h);
    let Some(p) = view.floor_point(foot) else {
        return;
    };
    let eye = view.camera_transform().translation;
    let towards = (Vec3::new(eye.x, 0.0, eye.z) - p).normalize_or_zero();
    let mut target = p + towards * 1.0;
    // Keep it where the user can see it: 1.8 to 6 m away.
    let flat = Vec3::new(target.x - eye.x, 0.0, target.z - eye.z);
    let d = flat.length().clamp(1.8, 6.0);
    target = Vec3::new(eye.x, 0.0, eye.z) + flat.normalize_or(Vec3::NEG_Z) * d;
    couch.target = target;
    couch.placed_by = Placement::Furniture(best.label.clone());
}

/// Pinch and drag with one hand, turn with two.
pub fn drag_with_hands(
    sensors: Res<Sensors>,
    view: Res<ArView>,
    tracking: Query<&HandTracking>,
    hands: Query<&TrackedHand>,
    mut couch: ResMut<Couch>,
    mut gesture: ResMut<Gesture>,
) {
    let Ok(tracking) = tracking.get(sensors.palms) else {
        return;
    };
    let pinching: Vec<(Entity, Vec2)> = tracking
        .hands
        .iter()
        .filter_map(|&e| {
            let h = hands.get(e).ok()?;
            (h.hand.presence > 0.5).then_some(())?;
            pinch(&h.hand).map(|p| (e, p.center))
        })
        .collect();
    if !pinching.is_empty() {
        gesture.pinch_frames += 1;
    }
    match pinching.as_slice() {
        [(_, a), (_, b)] => {
            gesture.drag = None;
            let angle = (b.y - a.y).atan2(b.x - a.x);
            match gesture.turn {
                None => {
                    gesture.turn = Some((angle, couch.yaw));
                    gesture.turns += 1;
                }
                // Screen y points down: a clockwise turn of the hands turns the couch clockwise
                // seen from above.
                Some((a0, yaw0)) => couch.yaw = yaw0 - (angle - a0),
            }
            couch.placed_by = Placement::Hand;
        }
        [(e, uv)] => {
            gesture.turn = None;
            let Some(p) = view.floor_point(*uv) else {
                return;
            };
            match gesture.drag {
                Some((held, offset)) if held == *e => couch.target = p + offset,
                _ => {
                    gesture.drag = Some((*e, couch.position - p));
                    gesture.drags += 1;
                }
            }
            couch.placed_by = Placement::Hand;
        }
        _ => {
            gesture.drag = None;
            gesture.turn = None;
        }
    }
}

/// The tracked hands as lines over the picture (drawn half a metre in front of the camera, so
/// they land on the hands in the picture); a pinching hand in yellow.
pub fn draw_hands(
    sensors: Res<Sensors>,
    view: Res<ArView>,
    tracking: Query<&HandTracking>,
    hands: Query<&TrackedHand>,
    mut gizmos: Gizmos,
) {
    let Ok(tracking) = tracking.get(sensors.palms) else {
        return;
    };
    for h in tracking.hands.iter().filter_map(|&e| hands.get(e).ok()) {
        let color = if pinch(&h.hand).is_some() {
            Color::srgb(1.0, 0.85, 0.1)
        } else {
            Color::srgb(0.2, 0.9, 1.0)
        };
        let at = |i: usize| view.frame_ray(h.hand.points[i].truncate()).get_point(0.5);
        if h.hand.points.len() < 21 {
            continue;
        }
        for (a, b) in HAND_CONNECTIONS {
            gizmos.line(at(a), at(b), color);
        }
    }
}
