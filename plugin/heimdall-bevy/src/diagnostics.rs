//! Each DNN's latency and rate in Bevy's [`DiagnosticsStore`], so they show where the app's
//! other diagnostics do (`LogDiagnosticsPlugin`, an on-screen diagnostics overlay, an editor).
//!
//! Per DNN, named by its key in [`HeimdallStats::models`] (the model's name, `#2`, `#3`... for
//! further entities running the same model; a `/` in a name becomes `_`):
//! - `heimdall/<dnn>/latency_ms`: capture of the camera frame to the result in the main world,
//!   one measurement per result (the same latency as [`crate::DnnOutput::latency`]);
//! - `heimdall/<dnn>/rate_hz`: results per second, one measurement per result (the inverse of
//!   the interval since the DNN's previous result).
//!
//! The diagnostics are added to the store when a DNN's first result arrives (the store needs
//! Bevy's `DiagnosticsPlugin`, part of `DefaultPlugins`; without it nothing is published).
//!
//! ```no_run
//! use bevy::diagnostic::{DiagnosticsStore, LogDiagnosticsPlugin};
//! use bevy::prelude::*;
//! use heimdall_bevy::prelude::*;
//!
//! fn show(store: Res<DiagnosticsStore>) {
//!     let path = heimdall_bevy::diagnostics::latency_path("face_detection_short_range");
//!     if let Some(ms) = store.get(&path).and_then(|d| d.smoothed()) {
//!         info!("faces answer in {ms:.1} ms");
//!     }
//! }
//!
//! App::new()
//!     .add_plugins((DefaultPlugins, HeimdallPlugin::default(), LogDiagnosticsPlugin::default()))
//!     .add_systems(Update, show)
//!     .run();
//! ```

use std::collections::HashMap;

use bevy::diagnostic::{Diagnostic, DiagnosticMeasurement, DiagnosticPath, DiagnosticsStore};
use bevy::platform::time::Instant;
use bevy::prelude::*;

use crate::stats::HeimdallStats;

/// The first component of every path the plugin publishes.
pub const PREFIX: &str = "heimdall";

/// `heimdall/<dnn>/latency_ms`: a DNN's capture-to-result latency, ms.
pub fn latency_path(dnn: &str) -> DiagnosticPath {
    DiagnosticPath::from_components([PREFIX, &component(dnn), "latency_ms"])
}

/// `heimdall/<dnn>/rate_hz`: a DNN's results per second.
pub fn rate_path(dnn: &str) -> DiagnosticPath {
    DiagnosticPath::from_components([PREFIX, &component(dnn), "rate_hz"])
}

/// A DNN's key as one path component: no `/`, no spaces, never empty.
fn component(dnn: &str) -> String {
    let c: String = dnn
        .chars()
        .map(|ch| {
            if ch == '/' || ch.is_whitespace() {
                '_'
            } else {
                ch
            }
        })
        .collect();
    if c.is_empty() { "dnn".into() } else { c }
}

/// `PreUpdate`, after the results arrived: the measurements of this update's results.
pub(crate) fn publish(
    stats: Res<HeimdallStats>,
    store: Option<ResMut<DiagnosticsStore>>,
    mut seen: Local<HashMap<String, usize>>,
) {
    let Some(mut store) = store else {
        return;
    };
    let now = Instant::now();
    for (key, m) in &stats.models {
        let before = seen.get(key).copied().unwrap_or(0);
        // The stats were reset: count again from there.
        let before = if m.results < before { 0 } else { before };
        let new = m.results - before;
        seen.insert(key.clone(), m.results);
        if new == 0 {
            continue;
        }
        let (latency, rate) = (latency_path(key), rate_path(key));
        if store.get(&latency).is_none() {
            store.add(Diagnostic::new(latency.clone()).with_suffix(" ms"));
            store.add(Diagnostic::new(rate.clone()).with_suffix(" Hz"));
        }
        let lat = &m.latencies_ms[m.latencies_ms.len().saturating_sub(new)..];
        if let Some(d) = store.get_mut(&latency) {
            for &value in lat {
                d.add_measurement(DiagnosticMeasurement { time: now, value });
            }
        }
        // Each new result's interval since the one before it (the first result has none).
        let arrivals = &m.arrivals_ms;
        let from = arrivals.len().saturating_sub(new).max(1);
        if let Some(d) = store.get_mut(&rate) {
            for i in from..arrivals.len() {
                let interval = arrivals[i] - arrivals[i - 1];
                if interval > 0.0 {
                    d.add_measurement(DiagnosticMeasurement {
                        time: now,
                        value: 1e3 / interval,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_the_dnn() {
        assert_eq!(latency_path("face").as_str(), "heimdall/face/latency_ms");
        assert_eq!(rate_path("face#2").as_str(), "heimdall/face#2/rate_hz");
        assert_eq!(rate_path("a/b c").as_str(), "heimdall/a_b_c/rate_hz");
        assert_eq!(rate_path("").as_str(), "heimdall/dnn/rate_hz");
    }
}
