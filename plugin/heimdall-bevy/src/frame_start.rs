//! Late frame start: the camera frame is taken as late as the frame allows
//! ([`HeimdallPacingPlugin`], opt-in: add it after [`crate::HeimdallPlugin`]).
//!
//! With Bevy's pipelined rendering, the main world hands its frame to the render thread at the
//! end of its update, and waits there while the render thread is still busy with the frame
//! before. When the display paces the app (a FIFO swap chain with frames queued, the usual case
//! for a light CPU), that wait fills most of the period: the camera frame is taken at the start
//! of the update, then sits for ~12 ms before its DNN work can even be recorded, and its result
//! reaches the world an update later than the GPU alone would allow (`stats.json`'s
//! `latency_stages_ms.capture_to_start`). A display-locked game engine's answer, which
//! `bevy_framepace` and Android's frame-pacing library give, is to start the update later: sleep
//! at the start of the frame for the time the update would have waited at its end, so input
//! (here, the camera) is read just in time.
//!
//! [`StartDelay`] learns that time from two measurements, whatever runs the app loop (winit, a
//! headless pacer):
//! - `gap`: from the end of one update (`Last`) to the start of the next (`First`): the
//!   hand-over wait, plus whatever the loop itself sleeps;
//! - `render_wait`: how long the render thread waited for the main world before its latest frame
//!   (`wait_main_world` of the render phases): a render thread that waits means the main world
//!   is the late one.
//!
//! The delay moves a quarter of the way each update to `delay + gap − margin − render_wait`
//! (the margin: 30 % of the period, at least 3 ms),
//! which settles at the hand-over wait less the margin when the display paces the loop, and
//! near zero when the render thread is idle (it then waits for the main world, which leaves no
//! room). A render thread that waited longer than [`BACK_OFF_MS`] takes that wait off the
//! delay at once. The delay never exceeds [`MAX_SHARE`] of the period, and fades out while the
//! gaps are longer than two periods (no display paces such a loop: a slow GPU, an app that
//! updates on input only).
//!
//! **Camera phase lock** ([`CameraPhaseLock`], on by default with the plugin): a camera runs on
//! its own clock, so its frames fall anywhere in the app's frame. One that arrives just after
//! the update took the previous frame waits a whole frame period for the next update, while one
//! that arrives just before is taken at once; which of the two an app gets depends on the phase
//! of the two clocks, and the period lost shows in `stats.json`'s `capture_to_start` and in the
//! deadlines the results miss (issue 34). When a source with a clock (a [`crate::camera::FramePacing::Rate`]
//! source, or one whose [`crate::camera::FrameSource::clock`] says when its frames arrive)
//! expects its next frame shortly after the point where the update would start, the update
//! waits for it, within the room the delay leaves before the hand-over: never more than the
//! free time seen lately less the delay and half its margin, nor a quarter of the period, and not
//! at all without a delay, after the render thread waited for the main world, or for a camera
//! whose next frame is overdue (stopped, failing). The delay is learnt as if the wait had not
//! been slept ([`StartDelay::update_after_wait`]). The controller is
//! [`crate::camera_phase::CameraPhase`] (pure); `LateFrameStart::camera_waits` counts the
//! waits.

use std::time::{Duration, Instant};

use bevy::prelude::*;

use crate::bridge::phases::PHASES;
use crate::camera::CameraSource;
use crate::camera_phase::CameraPhase;
use crate::clock::HeimdallClock;
use crate::settings::HeimdallSettings;
use crate::stats::HeimdallStats;

pub use crate::start_delay::{
    BACK_OFF_MS, MARGIN_SHARE, MAX_SHARE, MIN_MARGIN_MS, StartDelay, margin_ms,
};

/// Frame pacing for a display-locked app: each update starts late by the time it would
/// otherwise wait for the render thread at its end, so the camera frame is taken just in time
/// (see the [module documentation](self)). Off unless added; add it after
/// [`crate::HeimdallPlugin`]:
///
/// ```no_run
/// use bevy::prelude::*;
/// use heimdall_bevy::prelude::*;
///
/// App::new()
///     .add_plugins((DefaultPlugins, HeimdallPlugin::default(), HeimdallPacingPlugin))
///     .run();
/// ```
///
/// It sleeps on the main thread in `First` (at most [`MAX_SHARE`] of the frame period); where
/// the display does not pace the loop (a headless app, a slow GPU) the delay fades to zero.
/// [`LateFrameStart`] shows the current delay.
#[derive(Clone, Copy, Debug, Default)]
pub struct HeimdallPacingPlugin;

impl Plugin for HeimdallPacingPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<LateFrameStart>()
            .init_resource::<CameraPhaseLock>()
            .add_systems(
                First,
                start_frame.before(crate::stats::main_phases::update_started),
            )
            .add_systems(Last, end_frame.after(crate::stats::record_frame));
    }
}

/// Whether the late frame start also waits for a camera frame due just after the update would
/// start ([`crate::camera_phase`]); on by default with [`HeimdallPacingPlugin`]. Insert
/// `CameraPhaseLock { enabled: false }` to turn it off (an ablation; the examples'
/// `--no-camera-phase`).
#[derive(Resource, Clone, Copy, Debug, PartialEq, Eq, Reflect)]
#[reflect(Resource, Debug, Default, PartialEq, Clone)]
pub struct CameraPhaseLock {
    /// Wait for the camera (within the room the delay leaves).
    pub enabled: bool,
}

impl Default for CameraPhaseLock {
    fn default() -> Self {
        CameraPhaseLock { enabled: true }
    }
}

/// The main world's state of the late frame start ([`HeimdallPacingPlugin`]).
#[derive(Resource, Clone, Debug, Default, Reflect)]
#[reflect(Resource, Debug, Default, Clone)]
pub struct LateFrameStart {
    controller: StartDelay,
    #[reflect(ignore)]
    phase: CameraPhase,
    /// When the previous update's `Last` ended.
    #[reflect(ignore)]
    last_end: Option<Instant>,
    /// The presented frames seen so far (the latest one's phases are new when this grows).
    frames_seen: usize,
    /// Updates delayed so far.
    delayed: u64,
    /// What the latest update slept: its delay and its camera wait, ms.
    slept_ms: f64,
    camera_wait_ms: f64,
    /// Updates that waited for a camera frame so far, and their waits' sum (ms).
    camera_waits: u64,
    camera_waited_ms: f64,
}

impl LateFrameStart {
    /// The delay the latest update started with, ms.
    pub fn delay_ms(&self) -> f64 {
        self.controller.delay_ms
    }

    /// How many updates were delayed (slept in `First`) so far.
    pub fn delayed_updates(&self) -> u64 {
        self.delayed
    }

    /// How many updates waited past their delay for a camera frame ([`CameraPhaseLock`]) so
    /// far, and those waits' sum, ms.
    pub fn camera_waits(&self) -> (u64, f64) {
        (self.camera_waits, self.camera_waited_ms)
    }

    /// The latest update's wait for a camera frame past its delay, ms (0: none).
    pub fn camera_wait_ms(&self) -> f64 {
        self.camera_wait_ms
    }
}

/// `First`, before everything else of the update: updates the delay, adds the camera phase
/// lock's wait, and sleeps both.
pub(crate) fn start_frame(
    mut start: ResMut<LateFrameStart>,
    (stats, settings): (Option<Res<HeimdallStats>>, Option<Res<HeimdallSettings>>),
    (lock, clock): (Option<Res<CameraPhaseLock>>, Option<Res<HeimdallClock>>),
    cameras: Query<&CameraSource>,
) {
    let (Some(stats), Some(settings)) = (stats, settings) else {
        return;
    };
    let Some(last_end) = start.last_end else {
        return;
    };
    let gap_ms = last_end.elapsed().as_secs_f64() * 1e3;
    let wait = PHASES.iter().position(|p| *p == "wait_main_world");
    let frames = stats.frame_phases.len();
    // Only a frame presented since the last update tells something new about the render thread.
    let render_wait_ms = match (frames > start.frames_seen, stats.frame_phases.last(), wait) {
        (true, Some(p), Some(i)) => f64::from(p.ms[i]),
        _ => 0.0,
    };
    start.frames_seen = frames;
    let period_ms = 1e3 / stats.target_hz(&settings);
    let extra = start.camera_wait_ms;
    let delay = start
        .controller
        .update_after_wait(gap_ms, render_wait_ms, period_ms, extra);
    let slept = start.slept_ms;
    start.phase.observe(gap_ms, slept, period_ms);
    let camera_wait = match (lock, clock) {
        (Some(lock), Some(clock)) if lock.enabled => {
            let room = start.phase.room_ms(delay, render_wait_ms, period_ms);
            let dues = cameras.iter().filter_map(|c| c.due(&clock));
            CameraPhase::wait_ms(clock.now_ms() + delay, dues, room)
        }
        _ => 0.0,
    };
    start.camera_wait_ms = camera_wait;
    if camera_wait > 0.0 {
        start.camera_waits += 1;
        start.camera_waited_ms += camera_wait;
    }
    start.slept_ms = delay + camera_wait;
    sleep_start(&mut start, delay, camera_wait);
}

/// Sleeps the update's delay and camera wait (ms).
fn sleep_start(start: &mut LateFrameStart, delay: f64, camera_wait: f64) {
    let total = delay + camera_wait;
    if total > 0.0
        && let Ok(d) = Duration::try_from_secs_f64(total / 1e3)
    {
        let _span = info_span!(
            "heimdall::late_frame_start",
            delay_ms = delay,
            camera_wait_ms = camera_wait
        )
        .entered();
        std::thread::sleep(d);
        if delay > 0.0 {
            start.delayed += 1;
        }
    }
}

/// `Last`, after everything else: the update ends.
pub(crate) fn end_frame(mut start: ResMut<LateFrameStart>) {
    start.last_end = Some(Instant::now());
}

#[cfg(test)]
mod tests {
    use super::*;
    /// An app whose loop leaves 40 ms between updates at 20 Hz (what a display-paced loop's
    /// hand-over wait looks like to the controller): with [`HeimdallPacingPlugin`] its updates
    /// start late (the delay reaches its cap, 60 % of 50 ms, and each update sleeps it); the same
    /// app without the plugin never sleeps.
    #[test]
    fn the_pacing_plugin_sleeps_and_nothing_else_does() {
        let run = |pacing: bool| {
            let mut app = App::new();
            app.insert_resource(HeimdallStats::default())
                .insert_resource(HeimdallSettings {
                    frame_rate: crate::settings::FrameRateTarget::Fixed(20.0),
                    ..Default::default()
                });
            if pacing {
                app.add_plugins(HeimdallPacingPlugin);
            }
            let mut updates = Vec::new();
            for _ in 0..30 {
                std::thread::sleep(Duration::from_millis(40));
                let t = Instant::now();
                app.update();
                updates.push(t.elapsed().as_secs_f64() * 1e3);
            }
            let state = app.world().get_resource::<LateFrameStart>().cloned();
            (updates, state)
        };
        let (paced, state) = run(true);
        let state = state.expect("the plugin's state");
        assert!((state.delay_ms() - 30.0).abs() < 1.0, "{state:?}");
        assert!(state.delayed_updates() >= 25, "{state:?}");
        let last: f64 = paced[20..].iter().sum::<f64>() / 10.0;
        assert!(last >= 25.0, "paced updates took {last} ms on average");
        let (plain, state) = run(false);
        assert!(state.is_none());
        assert!(plain.iter().all(|&ms| ms < 20.0), "{plain:?}");
    }

    /// A synthetic camera of 2x2 frames (or one whose every frame fails).
    struct Synthetic(bool);

    impl crate::camera::FrameSource for Synthetic {
        fn name(&self) -> String {
            "synthetic".into()
        }
        fn size(&self) -> UVec2 {
            UVec2::splat(2)
        }
        fn next_frame(
            &mut self,
        ) -> Result<Option<crate::camera::RgbaFrame>, crate::camera::SourceError> {
            if self.0 {
                return Err(crate::camera::SourceError::Frame {
                    what: self.name(),
                    message: "unplugged".into(),
                });
            }
            Ok(Some(crate::camera::RgbaFrame {
                width: 2,
                height: 2,
                data: vec![128; 16],
            }))
        }
    }

    /// How long each new camera frame waited for the update that took it (ms, after the delay
    /// settled).
    #[derive(Resource, Default)]
    struct Lags(Vec<f64>, Option<u64>);

    fn record_lags(
        mut lags: ResMut<Lags>,
        clock: Res<HeimdallClock>,
        frames: Query<&crate::camera::CameraFrame>,
    ) {
        for f in &frames {
            if lags.1 != Some(f.index) && clock.now_ms() > 1200.0 {
                lags.0
                    .push(clock.now_ms() - HeimdallClock::ms(f.capture_time));
            }
            lags.1 = Some(f.index);
        }
    }

    /// A display-paced 20 Hz loop (the loop wakes at fixed 50 ms slots; the delay settles at its
    /// cap, 30 ms) with a 10 Hz camera on the plugin's clock whose frames are due 5 ms after the
    /// update would start: with the camera phase lock each frame is taken as it arrives, without
    /// it a whole loop period later. A camera whose every frame fails is never waited for.
    #[test]
    fn the_pacing_plugin_waits_for_a_camera_due_just_after_the_start() {
        let run = |lock: bool, failing: bool| {
            let clock = HeimdallClock::default();
            let mut app = App::new();
            app.insert_resource(HeimdallStats::default())
                .insert_resource(HeimdallSettings {
                    frame_rate: crate::settings::FrameRateTarget::Fixed(20.0),
                    ..Default::default()
                })
                .insert_resource(clock)
                .insert_resource(Assets::<Image>::default())
                .init_resource::<Lags>()
                .insert_resource(CameraPhaseLock { enabled: lock })
                .add_plugins(HeimdallPacingPlugin)
                .add_systems(PreUpdate, crate::camera::advance_sources)
                .add_systems(Update, record_lags);
            let pacing = crate::camera::FramePacing::Rate(10.0);
            let source = CameraSource::new(Synthetic(failing), pacing);
            app.world_mut().spawn(source);
            let mut updates = Vec::new();
            for k in 1..=60u32 {
                let slot =
                    clock.start() + Duration::from_millis(15) + k * Duration::from_millis(50);
                std::thread::sleep(slot.saturating_duration_since(Instant::now()));
                let t = Instant::now();
                app.update();
                if k > 20 {
                    updates.push(t.elapsed().as_secs_f64() * 1e3);
                }
            }
            let state = app.world().resource::<LateFrameStart>().clone();
            (
                app.world_mut().remove_resource::<Lags>().unwrap().0,
                state,
                updates,
            )
        };
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (locked, state, _) = run(true, false);
        assert!(state.camera_waits().0 >= 10, "{state:?}");
        assert!(locked.len() >= 15, "{locked:?}");
        assert!(median(locked.clone()) < 10.0, "{locked:?}");
        let (plain, state, _) = run(false, false);
        assert_eq!(state.camera_waits().0, 0);
        assert!(median(plain.clone()) > 30.0, "{plain:?}");
        // The failing camera: no wait is decided or slept (the counters are exact); the typical
        // update stays within the late start's cap (30 ms) plus a wait's worth of slack. A median,
        // not the slowest update: one update of a loaded machine (CI's 2 cores run the test
        // binaries' threads beside it) can be descheduled for longer than the whole slack.
        let (_, state, updates) = run(true, true);
        assert_eq!(state.camera_waits(), (0, 0.0), "{state:?}");
        let typical = median(updates.clone());
        assert!(
            typical < 42.0,
            "a typical update took {typical} ms: {updates:?}"
        );
    }
}
