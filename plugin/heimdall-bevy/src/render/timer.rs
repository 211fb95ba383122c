//! GPU timestamps around the scene passes and each DNN chunk of a frame, read back a few frames
//! later without ever waiting on the GPU.
//!
//! Per frame: `begin` (before the camera passes) writes mark 0, `mark` writes one more after the
//! scene and after each chunk, `finish` resolves the written marks into a buffer and copies them to
//! a staging buffer, `after_submit` maps it, and `collect` returns the frames whose marks arrived.
//! A ring of slots lets frames overlap; a frame whose slot is still busy is not timed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

/// What a mark closes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// Start of the frame (before the scene).
    Begin,
    /// End of the scene passes.
    SceneEnd,
    /// End of the preprocessing of the inputs requested this frame.
    Preprocess,
    /// End of a chunk: the coordinator's work id and the instance's index.
    Chunk {
        /// Work id.
        work: u64,
        /// Index of the DNN instance.
        instance: u32,
    },
}

const IDLE: u8 = 0;
const ENCODED: u8 = 1;
const MAPPING: u8 = 2;
const MAPPED: u8 = 3;
const FAILED: u8 = 4;

struct Slot {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    staging: wgpu::Buffer,
    marks: Vec<Mark>,
    frame: u64,
    state: Arc<AtomicU8>,
}

/// The measured marks of one frame, in ms since [`Mark::Begin`].
#[derive(Clone, Debug, PartialEq)]
pub struct FrameMarks {
    /// The render-world frame number.
    pub frame: u64,
    /// Every mark after `Begin`, with its time since `Begin` (ms).
    pub marks: Vec<(Mark, f64)>,
}

impl FrameMarks {
    /// Time of the first `mark` equal to `m`.
    pub fn time_of(&self, m: Mark) -> Option<f64> {
        self.marks.iter().find(|(k, _)| *k == m).map(|(_, t)| *t)
    }

    /// End of the last mark (the frame's GPU time).
    pub fn total_ms(&self) -> f64 {
        self.marks.last().map_or(0.0, |(_, t)| *t)
    }
}

/// Timestamp ring for frames.
pub struct FrameTimer {
    slots: Vec<Slot>,
    current: Option<usize>,
    next: usize,
    period_ns: f64,
    capacity: u32,
}

impl FrameTimer {
    /// A timer if the device can write timestamps inside encoders, else `None`.
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue) -> Option<Self> {
        let needed =
            wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS;
        if !device.features().contains(needed) {
            return None;
        }
        let capacity = 128u32;
        let slots = (0..4)
            .map(|i| {
                let (set, resolve, staging) = heimdall_gpu::profile::timestamp_buffers(
                    device,
                    capacity,
                    "heimdall frame timestamps",
                );
                Slot {
                    set,
                    resolve,
                    staging,
                    marks: Vec::new(),
                    frame: i,
                    state: Arc::new(AtomicU8::new(IDLE)),
                }
            })
            .collect();
        Some(FrameTimer {
            slots,
            current: None,
            next: 0,
            period_ns: f64::from(queue.get_timestamp_period()),
            capacity,
        })
    }

    /// Starts timing frame `frame`: writes [`Mark::Begin`] (skipped if every slot is busy).
    pub fn begin(&mut self, encoder: &mut wgpu::CommandEncoder, frame: u64) {
        self.current = None;
        let i = self.next;
        let n = self.slots.len();
        let slot = &mut self.slots[i];
        if slot.state.load(Ordering::Acquire) != IDLE {
            return;
        }
        self.next = (i + 1) % n;
        slot.marks.clear();
        slot.frame = frame;
        encoder.write_timestamp(&slot.set, 0);
        slot.marks.push(Mark::Begin);
        self.current = Some(i);
    }

    /// Whether this frame is being timed.
    pub fn active(&self) -> bool {
        self.current.is_some()
    }

    /// Writes `mark` now (no-op when the frame is not timed or the slot is full).
    pub fn mark(&mut self, encoder: &mut wgpu::CommandEncoder, mark: Mark) {
        let Some(i) = self.current else { return };
        let slot = &mut self.slots[i];
        let n = slot.marks.len() as u32;
        if n >= self.capacity {
            return;
        }
        encoder.write_timestamp(&slot.set, n);
        slot.marks.push(mark);
    }

    /// Resolves this frame's marks (only the written ones) into its staging buffer.
    pub fn finish(&mut self, encoder: &mut wgpu::CommandEncoder) {
        let Some(i) = self.current else { return };
        let slot = &mut self.slots[i];
        let n = slot.marks.len() as u32;
        encoder.resolve_query_set(&slot.set, 0..n, &slot.resolve, 0);
        encoder.copy_buffer_to_buffer(&slot.resolve, 0, &slot.staging, 0, u64::from(n) * 8);
        slot.state.store(ENCODED, Ordering::Release);
    }

    /// Maps the staging buffer of the frame just submitted.
    pub fn after_submit(&mut self) {
        let Some(i) = self.current.take() else { return };
        let slot = &self.slots[i];
        if slot.state.load(Ordering::Acquire) != ENCODED {
            return;
        }
        slot.state.store(MAPPING, Ordering::Release);
        let state = slot.state.clone();
        let bytes = slot.marks.len() as u64 * 8;
        slot.staging
            .slice(0..bytes)
            .map_async(wgpu::MapMode::Read, move |r| {
                state.store(if r.is_ok() { MAPPED } else { FAILED }, Ordering::Release);
            });
    }

    /// Frames whose marks have arrived (never waits).
    pub fn collect(&mut self) -> Vec<FrameMarks> {
        let mut out = Vec::new();
        for slot in &mut self.slots {
            match slot.state.load(Ordering::Acquire) {
                MAPPED => {
                    let n = slot.marks.len();
                    let ticks: Vec<u64> = {
                        let view = slot.staging.slice(0..n as u64 * 8).get_mapped_range();
                        view.chunks_exact(8)
                            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
                            .collect()
                    };
                    slot.staging.unmap();
                    let t0 = ticks.first().copied().unwrap_or(0);
                    let marks = slot
                        .marks
                        .iter()
                        .zip(&ticks)
                        .skip(1)
                        .map(|(m, &t)| (*m, t.saturating_sub(t0) as f64 * self.period_ns * 1e-6))
                        .collect();
                    out.push(FrameMarks {
                        frame: slot.frame,
                        marks,
                    });
                    slot.state.store(IDLE, Ordering::Release);
                }
                FAILED => slot.state.store(IDLE, Ordering::Release),
                _ => {}
            }
        }
        out.sort_by_key(|f| f.frame);
        out
    }
}
