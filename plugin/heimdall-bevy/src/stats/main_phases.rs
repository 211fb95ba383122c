//! How long the main world's schedule runs per update and how much of it is the plugin's own
//! systems (the camera, results and requests sets), for `stats.json`'s `main_world_ms`: a late
//! frame after a long update is the app's or Bevy's doing when the plugin's share stays small.

use std::time::Instant;

use bevy::prelude::*;

/// The main world's stamps for the update in progress.
#[derive(Resource, Debug, Default)]
pub(crate) struct MainClock {
    update_start: Option<Instant>,
    ours_start: Option<Instant>,
    /// The plugin's systems so far this update, seconds.
    ours_s: f64,
}

impl MainClock {
    /// The update and the plugin's share of it, ms, at its end (`None` before a first stamp);
    /// the clock is then ready for the next update.
    pub fn end(&mut self, now: Instant) -> Option<(f64, f64)> {
        let start = self.update_start.take()?;
        let ours = std::mem::take(&mut self.ours_s) * 1e3;
        self.ours_start = None;
        Some(((now - start).as_secs_f64() * 1e3, ours))
    }
}

/// `First`: the update starts.
pub(crate) fn update_started(mut c: ResMut<MainClock>) {
    c.update_start = Some(Instant::now());
}

/// Before one of the plugin's sets.
pub(crate) fn ours_begin(mut c: ResMut<MainClock>) {
    c.ours_start = Some(Instant::now());
}

/// After one of the plugin's sets.
pub(crate) fn ours_end(mut c: ResMut<MainClock>) {
    if let Some(s) = c.ours_start.take() {
        c.ours_s += s.elapsed().as_secs_f64();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_plugins_share_is_summed_over_its_sets() {
        let mut c = MainClock::default();
        assert_eq!(c.end(Instant::now()), None);
        let t0 = Instant::now();
        c.update_start = Some(t0);
        c.ours_s = 0.002;
        c.ours_s += 0.001;
        let (update, ours) = c.end(t0 + Duration::from_millis(10)).unwrap();
        assert!((update - 10.0).abs() < 1e-9 && (ours - 3.0).abs() < 1e-9);
        assert_eq!(c.end(t0), None, "stamps are used once");
    }
}
