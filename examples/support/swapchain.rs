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

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bevy::prelude::*;
use bevy::render::RenderApp;
use bevy::render::renderer::{RenderDevice, RenderGraph, RenderGraphSystems, RenderQueue};

use crate::latency::LatencyLog;

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
}

impl SwapchainWaits {
    /// Starts recording (the statistics' window: after the warm-up).
    pub fn start(&self) {
        if let Ok(mut log) = self.0.lock() {
            log.recording = true;
            log.wait_ms = LatencyLog::preallocated();
        }
    }

    fn record(&self, wait: Duration) {
        if let Ok(mut log) = self.0.lock()
            && log.recording
        {
            let ms = wait.as_secs_f64() * 1e3;
            log.wait_ms.push(ms);
            log.waited += usize::from(ms > 1.0);
        }
    }

    /// As JSON for `stats.json`: the wait's summary (ms) and the frames that waited > 1 ms.
    pub fn to_json(&self) -> serde_json::Value {
        let Ok(log) = self.0.lock() else {
            return serde_json::Value::Null;
        };
        serde_json::json!({
            "images": IMAGES,
            "wait_ms": log.wait_ms.summary(),
            "frames_that_waited": log.waited,
        })
    }
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
/// world, and [`SwapchainWaits`] in both worlds.
pub fn add(app: &mut App) {
    let waits = SwapchainWaits::default();
    app.insert_resource(waits.clone());
    if let Some(render_app) = app.get_sub_app_mut(RenderApp) {
        render_app
            .insert_resource(waits)
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
) {
    let start = Instant::now();
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
        waits.record(start.elapsed());
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
    waits.record(start.elapsed());
}
