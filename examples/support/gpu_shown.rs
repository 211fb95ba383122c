//! The GPU's side of the emulated display ([`crate::swapchain`]). A real swap chain shows a frame
//! at the first vertical blank after its rendering has finished on the GPU, not after its
//! submission; the emulation's presentation time counts the submission only (it must be known
//! while the frame is recorded). This keeps a second book that counts the GPU too: each frame's
//! GPU completion is stamped by a `Queue::on_submitted_work_done` callback registered right after
//! its submission, and the frame is taken as shown at the first blank at or after both its
//! emulated presentation and that completion (one frame per blank). What it reports
//! (`stats.json`'s `swapchain.after_gpu`) is the frame interval a FIFO display would show with
//! this GPU: the headline's bound (1.25 periods) applied to those times.
//!
//! Callbacks run when the device is polled, so a thread polls it every 0.5 ms
//! ([`POLL_INTERVAL`]): a completion is stamped up to that late. It is a measurement beside the
//! headline, not a change to what the app does.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::latency::LatencyLog;
use crate::pacer::VblankClock;

/// How often the poller thread polls the device.
pub const POLL_INTERVAL: Duration = Duration::from_micros(500);

/// Frames whose GPU completion has not been seen yet (render world).
#[derive(Default)]
pub struct GpuShown {
    /// (submitted, shown by the emulation, GPU completion once seen), oldest first.
    pending: VecDeque<(Instant, Instant, Arc<OnceLock<Instant>>)>,
    /// When the last frame counted was shown, counting its GPU.
    last_shown: Option<Instant>,
    /// Tells the poller thread to stop (set when this is dropped), once it runs.
    poller: Option<Arc<AtomicBool>>,
}

impl Drop for GpuShown {
    fn drop(&mut self) {
        if let Some(stop) = &self.poller {
            stop.store(true, Ordering::Release);
        }
    }
}

/// What the book says (shared with the main world through the swap chain's log).
#[derive(Debug, Default)]
pub struct AfterGpuLog {
    /// Intervals between frames shown after their GPU work, ms.
    pub interval_ms: LatencyLog,
    /// Of those, within 1.25 periods.
    pub on_time: usize,
    /// Frames whose GPU work ended after the blank the emulation shows them at.
    pub late_gpu: usize,
    /// From a frame's submission to its GPU completion, ms.
    pub gpu_after_submit_ms: LatencyLog,
}

impl AfterGpuLog {
    /// A log with its room allocated (the statistics' window).
    pub fn preallocated() -> Self {
        AfterGpuLog {
            interval_ms: LatencyLog::preallocated(),
            gpu_after_submit_ms: LatencyLog::preallocated(),
            ..Default::default()
        }
    }

    /// As JSON: the on-time rate by the headline's bound, the intervals, the frames the GPU made
    /// late, and the submission-to-completion times.
    pub fn to_json(&self) -> serde_json::Value {
        let intervals = self.interval_ms.summary();
        let count = intervals.get("count").and_then(|c| c.as_u64()).unwrap_or(0);
        serde_json::json!({
            "definition": "each frame shown at the first blank at or after both its emulated presentation and its GPU completion (a Queue::on_submitted_work_done callback, stamped within 0.5 ms), one per blank",
            "on_time_rate": if count == 0 { serde_json::Value::Null } else {
                serde_json::json!(self.on_time as f64 / count as f64)
            },
            "interval_ms": intervals,
            "frames_whose_gpu_work_ended_after_their_blank": self.late_gpu,
            "gpu_done_after_submit_ms": self.gpu_after_submit_ms.summary(),
        })
    }
}

impl GpuShown {
    /// The frame just submitted at `submitted` (everything on `queue` so far), shown by the
    /// emulation at `shown`. Starts the poller thread on the first call.
    pub fn submitted(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        submitted: Instant,
        shown: Instant,
    ) {
        if self.poller.is_none() {
            let device = device.clone();
            let stop = Arc::new(AtomicBool::new(false));
            let stopped = stop.clone();
            let spawned = std::thread::Builder::new()
                .name("gpu-shown-poller".into())
                .spawn(move || {
                    while !stopped.load(Ordering::Acquire) {
                        let _ = device.poll(wgpu::PollType::Poll);
                        std::thread::sleep(POLL_INTERVAL);
                    }
                });
            self.poller = spawned.ok().map(|_| stop);
        }
        let done = Arc::new(OnceLock::new());
        let slot = done.clone();
        queue.on_submitted_work_done(move || {
            let _ = slot.set(Instant::now());
        });
        self.pending.push_back((submitted, shown, done));
    }

    /// Counts the frames whose GPU completion was seen, in order, into `log` (when `recording`).
    pub fn collect(&mut self, clock: &VblankClock, log: &mut AfterGpuLog, recording: bool) {
        let period = clock.period();
        while let Some(&done) = self.pending.front().and_then(|(_, _, d)| d.get()) {
            let Some((submitted, shown, _)) = self.pending.pop_front() else {
                break;
            };
            let mut at = shown.max(clock.next_blank(done));
            if let Some(last) = self.last_shown {
                at = at.max(last + period);
            }
            let last = self.last_shown.replace(at);
            if !recording {
                continue;
            }
            log.late_gpu += usize::from(done > shown);
            let after = done.saturating_duration_since(submitted);
            log.gpu_after_submit_ms.push(after.as_secs_f64() * 1e3);
            if let Some(last) = last {
                let interval = at.saturating_duration_since(last);
                log.interval_ms.push(interval.as_secs_f64() * 1e3);
                log.on_time += usize::from(interval.as_secs_f64() <= 1.25 * period.as_secs_f64());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A period of 10 ms from `t0`: frames shown by submission at 10, 20, 30 ms; the second's
    /// GPU work ends at 21 ms, after its blank: shown at 30 ms, the third at 40 ms. Intervals 20
    /// and 10 ms: one of two on time, one frame late by its GPU.
    #[test]
    fn a_frame_whose_gpu_ends_after_its_blank_shows_at_the_next() {
        let t0 = Instant::now();
        let ms = |v: u64| t0 + Duration::from_millis(v);
        let clock = VblankClock::new(Duration::from_millis(10));
        clock.re_anchor(t0);
        let mut book = GpuShown::default();
        for (shown, done) in [(10, 8), (20, 21), (30, 29)] {
            let slot = Arc::new(OnceLock::new());
            slot.set(ms(done)).unwrap();
            book.pending.push_back((ms(shown - 5), ms(shown), slot));
        }
        let mut log = AfterGpuLog::preallocated();
        book.collect(&clock, &mut log, true);
        assert_eq!(log.late_gpu, 1);
        assert_eq!(log.on_time, 1);
        let j = log.to_json();
        assert_eq!(j["interval_ms"]["count"], 2);
        assert_eq!(j["interval_ms"]["max"], 20.0);
        assert_eq!(j["on_time_rate"], 0.5);
        assert!(book.pending.is_empty());
    }
}
