//! The headless harness's stand-in for a display's swap chain. Without one, nothing stops the
//! CPU from queueing frames faster than the GPU finishes them (a window's `present` blocks when
//! every image of the swap chain is in use). This emulates a swap chain of 3 images: after the
//! render world submits frame N, it waits until frame N − 2 has finished on the GPU, so at most
//! two frames are in flight while the next one is recorded. It waits for that one frame only,
//! as acquiring a swap-chain image does, not for all submitted work: waiting for everything
//! drained the queue every third frame once the GPU was the bottleneck, and showed a steady
//! 17 ms GPU frame as two short intervals and a 42 ms one. The plugin itself never waits on
//! the GPU.
//!
//! `HEIMDALL_SWAPCHAIN_WAIT=all` restores the earlier wait for all submitted work, to compare
//! the two (docs/emoji.md).
//!
//! The waits are logged (`stats.json`'s `swapchain`): a frame that waited long was held up by
//! the GPU, not by the CPU.
//!
//! **The display's vertical blank.** A display refreshing at the frame rate shows a frame at its
//! next vertical blank (a FIFO swap chain, Bevy's default `AutoVsync`, and every phone), so how
//! long a frame's CPU work took within its period does not show on screen; a frame not
//! submitted by its blank shows the previous one twice. The emulation keeps that book without
//! changing what the app does (no extra wait, no added latency): a frame submitted at `t` is
//! shown at the first blank at or after `t` that is at least a period after the frame before
//! it was shown (a FIFO queue), and it tells the plugin so (`heimdall_bevy::render::
//! PresentationTime`), whose stats' frame interval is then the one on screen. The blanks are the
//! headless pacer's slots (`pacer::VblankClock`): a frame whose update started at one blank is
//! shown at the next when the main world's update and the render world's work fit in a period.
//! The GPU's side is the wait above and the GPU-timestamp proxy: a frame is taken as shown even
//! if its GPU work ends after the blank. A second book counts it ([`crate::gpu_shown`],
//! `swapchain.after_gpu`): each frame shown at the first blank after its GPU completion too. The interval between submissions, what an
//! immediate-mode display would show, is reported beside it (`swapchain.submit_interval_ms`,
//! `submit_on_time_rate`); `--display immediate` turns the blank off.
//!
//! **A full queue blocks the producer.** wgpu's default maximum frame latency is 2 (3 images:
//! one on screen, two queued), so acquiring the image for frame N + 1 waits until the image of
//! frame N − 2 leaves the screen, at the blank that shows frame N − 1. The emulation waits for
//! that blank after submitting frame N (`swapchain.queue_full_wait_ms`), so a burst of frames
//! after a late one cannot queue more than two frames, and the app's next updates are held back
//! as a window's would be.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bevy::prelude::*;
use bevy::render::RenderApp;
use bevy::render::renderer::{RenderDevice, RenderGraph, RenderGraphSystems, RenderQueue};
use heimdall_bevy::render::PresentationTime;

use crate::gpu_shown::{AfterGpuLog, GpuShown};
use crate::latency::LatencyLog;
use crate::pacer::VblankClock;

/// Swap-chain images emulated: frames in flight, plus the one being recorded.
const IMAGES: usize = 3;
/// The longest a frame waits for the GPU before going on (a hung GPU must not hang the app).
const MAX_WAIT: Duration = Duration::from_secs(5);

/// The render world's waits for the GPU, shared with the main world for the report.
#[derive(Resource, Clone, Default)]
pub struct SwapchainWaits(Arc<Mutex<WaitLog>>);

/// What [`SwapchainWaits`] holds.
#[derive(Debug, Default)]
struct WaitLog {
    recording: bool,
    wait_ms: LatencyLog,
    /// Frames that waited longer than a millisecond.
    waited: usize,
    /// Intervals between submissions (before the blank), ms.
    submit_ms: LatencyLog,
    /// Submissions within 1.25 periods of the one before.
    submit_on_time: usize,
    last_submit: Option<Instant>,
    /// From submission to the blank the frame is shown at, ms (vsync): grows when frames
    /// queue up behind a late one.
    shown_after_ms: LatencyLog,
    /// Whether frames are shown at the display's blanks.
    vsync: bool,
    /// How long the render thread waited for a queued frame to reach the screen (vsync), ms.
    queue_wait_ms: LatencyLog,
    /// Frames that found the queue full.
    queue_full: usize,
    /// The display counting each frame's GPU completion too (vsync).
    after_gpu: AfterGpuLog,
}

impl SwapchainWaits {
    /// Starts recording (the statistics' window: after the warm-up).
    pub fn start(&self) {
        if let Ok(mut log) = self.0.lock() {
            log.recording = true;
            log.wait_ms = LatencyLog::preallocated();
            log.submit_ms = LatencyLog::preallocated();
            log.shown_after_ms = LatencyLog::preallocated();
            log.queue_wait_ms = LatencyLog::preallocated();
            log.queue_full = 0;
            log.after_gpu = AfterGpuLog::preallocated();
        }
    }

    fn record_queue_wait(&self, wait: Duration) {
        if let Ok(mut log) = self.0.lock()
            && log.recording
        {
            log.queue_wait_ms.push(wait.as_secs_f64() * 1e3);
            log.queue_full += usize::from(!wait.is_zero());
        }
    }

    fn record(&self, wait: Duration, submitted: Instant, shown: Option<Instant>, period: Duration) {
        if let Ok(mut log) = self.0.lock() {
            let last = log.last_submit.replace(submitted);
            if !log.recording {
                return;
            }
            if let Some(shown) = shown {
                let after = shown.saturating_duration_since(submitted);
                log.shown_after_ms.push(after.as_secs_f64() * 1e3);
            }
            let ms = wait.as_secs_f64() * 1e3;
            log.wait_ms.push(ms);
            log.waited += usize::from(ms > 1.0);
            if let Some(last) = last {
                let interval = submitted.saturating_duration_since(last);
                log.submit_ms.push(interval.as_secs_f64() * 1e3);
                log.submit_on_time +=
                    usize::from(interval.as_secs_f64() <= 1.25 * period.as_secs_f64());
            }
        }
    }

    /// As JSON for `stats.json`: the wait's summary (ms) and the frames that waited > 1 ms.
    pub fn to_json(&self) -> serde_json::Value {
        let Ok(log) = self.0.lock() else {
            return serde_json::Value::Null;
        };
        let submits = log.submit_ms.summary();
        let count = submits.get("count").and_then(|c| c.as_u64()).unwrap_or(0);
        serde_json::json!({
            "images": IMAGES,
            "display": if log.vsync { "vsync" } else { "immediate" },
            "wait_ms": log.wait_ms.summary(),
            "frames_that_waited": log.waited,
            "submit_interval_ms": submits,
            "shown_after_submit_ms": log.shown_after_ms.summary(),
            "queue_full_wait_ms": log.queue_wait_ms.summary(),
            "frames_that_found_the_queue_full": log.queue_full,
            "submit_on_time_rate": if count == 0 { serde_json::Value::Null } else {
                serde_json::json!(log.submit_on_time as f64 / count as f64)
            },
            "after_gpu": if log.vsync { log.after_gpu.to_json() } else { serde_json::Value::Null },
        })
    }
}

/// The emulated display (render world).
#[derive(Resource)]
struct Display {
    clock: VblankClock,
    vsync: bool,
    /// When the frame before was shown.
    last_shown: Option<Instant>,
    /// When the frame before that one was shown.
    before_last_shown: Option<Instant>,
    /// The same frames, shown after their GPU work.
    gpu: GpuShown,
}

/// The submissions of the frames in flight (render world). With `HEIMDALL_SWAPCHAIN_WAIT=all`,
/// `all` counts submitted and finished frames instead, and a wait is for all submitted work.
#[derive(Resource)]
struct InFlight {
    frames: VecDeque<wgpu::SubmissionIndex>,
    all: Option<(u64, Arc<AtomicU64>)>,
}

impl Default for InFlight {
    fn default() -> Self {
        let all = std::env::var("HEIMDALL_SWAPCHAIN_WAIT").is_ok_and(|v| v == "all");
        InFlight {
            frames: VecDeque::with_capacity(IMAGES),
            all: all.then(|| (0, Arc::new(AtomicU64::new(0)))),
        }
    }
}

/// Adds the emulation to a headless app: the wait after each frame's submission in the render
/// world and, with `vsync`, the blank of the pacer's [`VblankClock`] each frame is shown at
/// (given to the plugin as its presentation time); [`SwapchainWaits`] in both worlds.
pub fn add(app: &mut App, vsync: bool) {
    let clock = app.world().get_resource::<VblankClock>().cloned();
    let clock = clock.unwrap_or_else(|| VblankClock::new(Duration::ZERO));
    let waits = SwapchainWaits::default();
    if let Ok(mut log) = waits.0.lock() {
        log.vsync = vsync;
    }
    app.insert_resource(waits.clone());
    if let Some(render_app) = app.get_sub_app_mut(RenderApp) {
        render_app
            .insert_resource(waits)
            .insert_resource(Display {
                clock,
                vsync,
                last_shown: None,
                before_last_shown: None,
                gpu: GpuShown::default(),
            })
            .init_resource::<InFlight>()
            .add_systems(
                RenderGraph,
                // After the plugin's readback requests, so that the render thread's phases
                // count the wait in presentation, as a display's swap chain would.
                wait_for_an_image
                    .in_set(RenderGraphSystems::Finish)
                    .after(heimdall_bevy::render::HeimdallRenderSystems::Readback),
            );
    }
}

fn wait_for_an_image(
    queue: Res<RenderQueue>,
    device: Res<RenderDevice>,
    mut in_flight: ResMut<InFlight>,
    waits: Res<SwapchainWaits>,
    mut display: ResMut<Display>,
    mut shown: ResMut<PresentationTime>,
) {
    let start = Instant::now();
    let period = display.clock.period();
    if let Some((submitted, done)) = &mut in_flight.all {
        // The earlier emulation: while 3 frames are unfinished, wait for all submitted work.
        *submitted += 1;
        let finished = done.clone();
        queue.on_submitted_work_done(move || {
            finished.fetch_add(1, Ordering::AcqRel);
        });
        while submitted.saturating_sub(done.load(Ordering::Acquire)) >= IMAGES as u64
            && start.elapsed() < MAX_WAIT
        {
            let _ = device.poll(wgpu::PollType::Wait {
                submission_index: None,
                timeout: Some(Duration::from_millis(100)),
            });
        }
        let submitted = Instant::now();
        shown.0 = display.show(submitted);
        waits.record(start.elapsed(), submitted, shown.0, period);
        return;
    }
    // An empty submission right after the frame's: its index is reached when the frame is done.
    let index = queue.submit(std::iter::empty::<wgpu::CommandBuffer>());
    in_flight.frames.push_back(index);
    while in_flight.frames.len() >= IMAGES {
        let Some(oldest) = in_flight.frames.pop_front() else {
            break;
        };
        let left = MAX_WAIT.saturating_sub(start.elapsed());
        let _ = device.poll(wgpu::PollType::Wait {
            submission_index: Some(oldest),
            timeout: Some(left),
        });
    }
    let submitted = Instant::now();
    shown.0 = display.show(submitted);
    waits.record(start.elapsed(), submitted, shown.0, period);
    if let Some(at) = shown.0 {
        let display = &mut *display;
        let q: &wgpu::Queue = &queue;
        display
            .gpu
            .submitted(device.wgpu_device(), q, submitted, at);
        if let Ok(mut log) = waits.0.lock() {
            let recording = log.recording;
            display
                .gpu
                .collect(&display.clock, &mut log.after_gpu, recording);
        }
    }
    if let Some(free) = display.image_free_at() {
        let wait = free.saturating_duration_since(Instant::now()).min(MAX_WAIT);
        if !wait.is_zero() {
            crate::pacer::wait_until(Instant::now() + wait);
        }
        waits.record_queue_wait(wait);
    }
}

impl Display {
    /// When a frame submitted at `submitted` is shown (with vsync; `None`: at once).
    fn show(&mut self, submitted: Instant) -> Option<Instant> {
        if !self.vsync {
            return None;
        }
        let period = self.clock.period();
        let mut at = self.clock.next_blank(submitted);
        if let Some(last) = self.last_shown {
            // One frame per blank: a second frame ready before the next blank waits for it.
            at = at.max(last + period);
        }
        self.before_last_shown = self.last_shown.replace(at);
        Some(at)
    }

    /// When the next frame can have a swap-chain image (vsync): the blank that shows the frame
    /// before the one just submitted, which takes the image of the frame before it off the
    /// screen. `None` without vsync or before two frames were shown.
    fn image_free_at(&self) -> Option<Instant> {
        if self.vsync {
            self.before_last_shown
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_shown_at_blanks_one_per_blank() {
        let clock = VblankClock::new(Duration::from_millis(10));
        let t0 = Instant::now();
        clock.re_anchor(t0);
        let ms = |m: u64| t0 + Duration::from_millis(m);
        let mut d = Display {
            clock,
            vsync: true,
            last_shown: None,
            before_last_shown: None,
            gpu: GpuShown::default(),
        };
        // Submitted mid-period: shown at the next blank, whatever the jitter within it.
        assert_eq!(d.show(ms(4)), Some(ms(10)));
        assert_eq!(d.show(ms(19)), Some(ms(20)));
        // Not submitted by its blank: shown a period later (the frame before shows twice).
        assert_eq!(d.show(ms(31)), Some(ms(40)));
        // Two frames before one blank: the second waits for the next one.
        assert_eq!(d.show(ms(42)), Some(ms(50)));
        assert_eq!(d.show(ms(45)), Some(ms(60)));
        // Frame 60 is queued behind frame 50: the next image is free when 50 is shown.
        assert_eq!(d.image_free_at(), Some(ms(50)));
        let mut immediate = Display { vsync: false, ..d };
        assert_eq!(immediate.image_free_at(), None);
        assert_eq!(immediate.show(ms(70)), None);
    }
}
