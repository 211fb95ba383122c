//! The event-driven DNN: a tap (a key, a click, or a scripted event in headless runs) asks for
//! one style transfer of the current camera view; its picture becomes the couch's fabric.
//! Each event's latency runs from the event to the end of the update that puts the new fabric
//! on the couch (the frame extracted then, and rendered right after, shows it), the paper's
//! "response" of an event-driven DNN; events that come while one is being answered wait their
//! turn.

use std::collections::VecDeque;
use std::time::Instant;

use bevy::input::ButtonInput;
use bevy::prelude::*;
use heimdall_bevy::prelude::*;
use heimdall_examples::harness::ScriptedEvent;
use heimdall_examples::latency::LatencyLog;
use heimdall_examples::report::AppReport;
use serde_json::json;

use crate::couch::Couch;

/// The style DNN and its events.
#[derive(Resource, Debug)]
pub struct Styling {
    /// The style transfer DNN (on demand).
    pub dnn: Entity,
    /// Events not answered yet, oldest first: (sequence number, when).
    waiting: VecDeque<(u64, Instant)>,
    /// Whether an inference is in flight.
    in_flight: bool,
    /// The event answered in this update (its time), counted at the update's end.
    answered: Option<Instant>,
    /// Events so far.
    pub events: u64,
    /// Answered events' latency (ms).
    pub latency: LatencyLog,
}

impl Styling {
    /// No events yet.
    pub fn new(dnn: Entity) -> Self {
        Styling {
            dnn,
            waiting: VecDeque::new(),
            in_flight: false,
            answered: None,
            events: 0,
            latency: LatencyLog::default(),
        }
    }
}

/// Registers the style systems.
pub fn build(app: &mut App) {
    app.add_systems(Update, (take_events, report_style).chain())
        .add_systems(Last, count_answered);
}

/// A scripted event, `S`, the space bar or a left click: one style transfer.
fn take_events(
    mut scripted: MessageReader<ScriptedEvent>,
    keys: Option<Res<ButtonInput<KeyCode>>>,
    mouse: Option<Res<ButtonInput<MouseButton>>>,
    dnns: Query<&Dnn>,
    frames: Query<&CameraFrame>,
    mut styling: ResMut<Styling>,
    mut requests: MessageWriter<RequestInference>,
) {
    let mut n = scripted.read().count();
    if keys.is_some_and(|k| k.any_just_pressed([KeyCode::KeyS, KeyCode::Space])) {
        n += 1;
    }
    if mouse.is_some_and(|m| m.just_pressed(MouseButton::Left)) {
        n += 1;
    }
    for _ in 0..n {
        let id = styling.events;
        styling.events += 1;
        styling.waiting.push_back((id, Instant::now()));
    }
    // A request needs a camera frame to work on (before the first one it would be dropped).
    let has_frame = dnns
        .get(styling.dnn)
        .is_ok_and(|d| frames.get(d.source).is_ok());
    if has_frame && !styling.in_flight && !styling.waiting.is_empty() {
        styling.in_flight = true;
        requests.write(RequestInference(styling.dnn));
    }
}

/// A style result: the fabric takes it, the oldest waiting event is answered, and the next
/// waiting one (if any) is asked for.
pub fn on_style(
    result: On<DnnResult>,
    styled: Query<&StylizedImage>,
    couch: Option<Res<Couch>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    mut styling: ResMut<Styling>,
    mut requests: MessageWriter<RequestInference>,
) {
    let (Ok(img), Some(couch)) = (styled.get(result.entity), couch) else {
        return;
    };
    if let Some(mut fabric) = materials.get_mut(&couch.fabric) {
        fabric.base_color = Color::WHITE;
        fabric.base_color_texture = Some(img.image.clone());
    }
    styling.in_flight = false;
    if let Some((_, at)) = styling.waiting.pop_front() {
        styling.answered = Some(at);
    }
    if !styling.waiting.is_empty() {
        styling.in_flight = true;
        requests.write(RequestInference(styling.dnn));
    }
}

/// `Last`: the event answered in this update is counted (the frame extracted next shows it).
fn count_answered(mut styling: ResMut<Styling>) {
    // Read first: a mutable borrow would mark the resource changed every update.
    if styling.answered.is_none() {
        return;
    }
    if let Some(at) = styling.answered.take() {
        styling.latency.push(at.elapsed().as_secs_f64() * 1e3);
    }
}

fn report_style(styling: Res<Styling>, mut report: ResMut<AppReport>) {
    if !styling.is_changed() {
        return;
    }
    report.0.insert(
        "style_events".into(),
        json!({
            "events": styling.events,
            "answered": styling.latency.len(),
            "event_to_visible_ms": styling.latency.summary(),
            "definition": "from the event to the end of the update that puts the styled \
                fabric on the couch (results arrive in PreUpdate or, late, in PostUpdate); the \
                frame extracted then, rendered right after, shows it",
        }),
    );
}
