//! An overlay an app can add ([`OverlayPlugin`]): frame time over the last seconds, each
//! model's latency and rate, where it runs (GPU, or CPU with its threads) and, while the
//! coordinator grants it less than its requested rate, how much and why; and a strip showing, per frame, the scene's GPU time and the DNN
//! chunks run after it (from timestamps), against the frame period. A key (default F12) writes
//! the coordinator's Chrome trace (`chrome://tracing`, Perfetto).

use std::path::PathBuf;

use bevy::prelude::*;

use crate::asset::DnnModel;
use crate::dnn::{Backend, Dnn, DnnPlacement, DnnStatus};
use crate::results::{HeimdallBackend, HeimdallTrace};
use crate::settings::HeimdallSettings;
use crate::stats::HeimdallStats;

/// Frames shown in the strip.
const COLUMNS: usize = 90;
/// Coloured segments per column: the scene, then up to this many chunks minus one.
const SEGMENTS: usize = 5;
/// Height of the strip in pixels; the frame period is drawn at 3/4 of it.
const STRIP_PX: f32 = 64.0;

/// The overlay plugin: opt-in twice, behind the crate's `overlay` feature (off by default: it
/// pulls Bevy UI and text) and added by the app, after [`crate::HeimdallPlugin`]:
/// `app.add_plugins(OverlayPlugin::default())`.
pub struct OverlayPlugin {
    /// Key that writes the Chrome trace.
    pub trace_key: KeyCode,
    /// Where the trace goes (the settings' `trace_path`, else `heimdall_trace.json`).
    pub trace_path: Option<PathBuf>,
}

impl Default for OverlayPlugin {
    fn default() -> Self {
        OverlayPlugin {
            trace_key: KeyCode::F12,
            trace_path: None,
        }
    }
}

#[derive(Resource)]
struct OverlayConfig {
    trace_key: KeyCode,
    trace_path: Option<PathBuf>,
}

#[derive(Component)]
struct OverlayText;

#[derive(Component)]
struct StripSegment {
    column: usize,
    segment: usize,
}

impl Plugin for OverlayPlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(OverlayConfig {
            trace_key: self.trace_key,
            trace_path: self.trace_path.clone(),
        })
        .add_systems(Startup, spawn_overlay)
        .add_systems(Update, (update_text, update_strip, trace_on_key));
    }
}

/// Colour of chunk bars by DNN instance.
fn chunk_color(instance: u32) -> Color {
    const PALETTE: [Color; 6] = [
        Color::srgb(0.95, 0.55, 0.15),
        Color::srgb(0.25, 0.75, 0.95),
        Color::srgb(0.55, 0.85, 0.3),
        Color::srgb(0.9, 0.35, 0.7),
        Color::srgb(0.95, 0.9, 0.3),
        Color::srgb(0.6, 0.5, 0.95),
    ];
    PALETTE[instance as usize % PALETTE.len()]
}

fn spawn_overlay(mut commands: Commands) {
    commands.spawn((
        OverlayText,
        Text::new("heimdall"),
        TextFont {
            font_size: FontSize::Px(11.0),
            ..default()
        },
        TextColor(Color::WHITE),
        BackgroundColor(Color::srgba(0.0, 0.0, 0.0, 0.55)),
        Node {
            position_type: PositionType::Absolute,
            left: Val::Px(4.0),
            top: Val::Px(4.0),
            padding: UiRect::all(Val::Px(4.0)),
            ..default()
        },
    ));
    commands
        .spawn((
            Node {
                position_type: PositionType::Absolute,
                left: Val::Px(4.0),
                bottom: Val::Px(4.0),
                height: Val::Px(STRIP_PX),
                flex_direction: FlexDirection::Row,
                align_items: AlignItems::FlexEnd,
                column_gap: Val::Px(1.0),
                ..default()
            },
            BackgroundColor(Color::srgba(0.0, 0.0, 0.0, 0.45)),
        ))
        .with_children(|strip| {
            // The frame-period line.
            strip.spawn((
                Node {
                    position_type: PositionType::Absolute,
                    left: Val::Px(0.0),
                    right: Val::Px(0.0),
                    bottom: Val::Px(STRIP_PX * 0.75),
                    height: Val::Px(1.0),
                    ..default()
                },
                BackgroundColor(Color::srgba(1.0, 0.2, 0.2, 0.9)),
            ));
            for column in 0..COLUMNS {
                strip
                    .spawn(Node {
                        width: Val::Px(3.0),
                        flex_direction: FlexDirection::ColumnReverse,
                        ..default()
                    })
                    .with_children(|col| {
                        for segment in 0..SEGMENTS {
                            col.spawn((
                                StripSegment { column, segment },
                                Node {
                                    width: Val::Px(3.0),
                                    height: Val::Px(0.0),
                                    ..default()
                                },
                                BackgroundColor(Color::NONE),
                            ));
                        }
                    });
            }
        });
}

fn update_text(
    stats: Res<HeimdallStats>,
    settings: Res<HeimdallSettings>,
    backend: Res<HeimdallBackend>,
    dnns: Query<(&Dnn, &DnnStatus, &DnnPlacement)>,
    models: Res<Assets<DnnModel>>,
    mut text: Query<&mut Text, With<OverlayText>>,
) {
    let Ok(mut text) = text.single_mut() else {
        return;
    };
    let hz = stats.target_hz(&settings);
    let recent = &stats.frame_ms[stats.frame_ms.len().saturating_sub(hz as usize * 3)..];
    let frames = if recent.is_empty() {
        "frame: no frames yet".to_string()
    } else {
        let mean = recent.iter().sum::<f64>() / recent.len() as f64;
        let worst = recent.iter().copied().fold(0.0, f64::max);
        format!("frame {mean:.1} ms avg, {worst:.1} ms worst (3 s)")
    };
    let mut s = format!(
        "{} | {} | target {hz:.0} fps\n{frames}\n",
        settings.mode.name(),
        backend.name(),
    );
    for (name, m) in &stats.models {
        let n = m.latencies_ms.len();
        let last: Vec<f64> = m.latencies_ms[n.saturating_sub(30)..].to_vec();
        let lat = last.iter().sum::<f64>() / last.len().max(1) as f64;
        let k = m.arrivals_ms.len();
        let rate = if k >= 2 {
            let a = m.arrivals_ms[k.saturating_sub(30)];
            let b = m.arrivals_ms[k - 1];
            (k.min(30) - 1) as f64 / ((b - a) / 1e3).max(1e-9)
        } else {
            0.0
        };
        let cache = if m.cache_runs > 0 {
            format!(", cache {:.0}%", m.cache_hit_rate_mean * 100.0)
        } else {
            String::new()
        };
        let on = match m.placement.backend {
            Some(Backend::Gpu) => " [gpu]".to_string(),
            Some(Backend::Cpu) => format!(" [cpu x{}]", m.placement.cpu_threads.max(1)),
            None => String::new(),
        };
        s.push_str(&format!(
            "{name}: {lat:.1} ms, {rate:.1} Hz ({n}){cache}{on}\n"
        ));
    }
    for (dnn, status, placement) in &dnns {
        let name = dnn
            .model
            .path()
            .map(|p| p.to_string())
            .or_else(|| models.get(&dnn.model).map(|m| m.name.clone()))
            .unwrap_or_default();
        match status {
            DnnStatus::Ready(_) => {
                if let Some(short) = &placement.shortfall {
                    s.push_str(&format!(
                        "{name}: {:.1} of {:.1} Hz: {}\n",
                        short.granted_hz, short.requested_hz, short.reason
                    ));
                }
            }
            DnnStatus::Failed(e) => s.push_str(&format!("{name}: FAILED: {e}\n")),
            other => s.push_str(&format!("{name}: {other:?}\n")),
        }
    }
    **text = s;
}

fn update_strip(
    stats: Res<HeimdallStats>,
    settings: Res<HeimdallSettings>,
    mut segments: Query<(&StripSegment, &mut Node, &mut BackgroundColor)>,
) {
    let period = 1000.0 / stats.target_hz(&settings);
    let px_per_ms = (STRIP_PX * 0.75) as f64 / period;
    let frames = &stats.gpu_frames[stats.gpu_frames.len().saturating_sub(COLUMNS)..];
    for (seg, mut node, mut color) in &mut segments {
        let Some(f) = frames.get(seg.column) else {
            node.height = Val::Px(0.0);
            continue;
        };
        let (ms, c) = if seg.segment == 0 {
            (f.scene_ms, Color::srgb(0.75, 0.75, 0.75))
        } else if let Some((inst, ms)) = f.chunks.get(seg.segment - 1) {
            (*ms, chunk_color(*inst))
        } else {
            (0.0, Color::NONE)
        };
        node.height = Val::Px((ms * px_per_ms).min(STRIP_PX as f64) as f32);
        color.0 = c;
    }
}

fn trace_on_key(
    keys: Option<Res<ButtonInput<KeyCode>>>,
    config: Res<OverlayConfig>,
    settings: Res<HeimdallSettings>,
    mut trace: ResMut<HeimdallTrace>,
    mut pending: Local<bool>,
) {
    if keys.is_some_and(|k| k.just_pressed(config.trace_key)) {
        trace.request();
        *pending = true;
    }
    // Only a trace this overlay asked for (the app may ask for its own).
    if !*pending {
        return;
    }
    if let Some(trace) = trace.take() {
        *pending = false;
        let path = config
            .trace_path
            .clone()
            .or_else(|| settings.trace_path.clone())
            .unwrap_or_else(|| PathBuf::from("heimdall_trace.json"));
        match std::fs::write(&path, trace) {
            Ok(()) => info!(
                "heimdall: wrote the coordinator's trace to {}",
                path.display()
            ),
            Err(e) => warn!("heimdall: writing {}: {e}", path.display()),
        }
    }
}
