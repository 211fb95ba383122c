//! GPU timestamps around the scene passes and each DNN chunk of a frame, read back a few frames
//! later without ever waiting on the GPU.
//!
//! Per frame: `begin` writes mark 0 (before the DNN work when it goes first, else before the
//! camera passes), `mark` writes one more at each boundary (start and end of the scene, end of
//! the preprocessing and of each chunk), `finish` resolves the written marks into a buffer and
//! copies them to a staging buffer, `after_submit` maps it, and `collect` returns the frames whose
//! marks arrived. The marks of one frame may span two submissions (the DNN work's, then the
//! frame's): they are in GPU order either way.
//! A ring of slots lets frames overlap; a frame whose slot is still busy is not timed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

/// What a mark closes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// Start of the frame (before its first GPU work).
    Begin,
    /// Start of the scene passes, when the DNN work went before them.
    SceneBegin,
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

    /// End of the last mark (from the frame's first GPU work to its last, gaps included).
    pub fn total_ms(&self) -> f64 {
        self.marks.last().map_or(0.0, |(_, t)| *t)
    }

    /// The scene passes' GPU time: from [`Mark::SceneBegin`] (or the frame's start) to
    /// [`Mark::SceneEnd`].
    pub fn scene_ms(&self) -> f64 {
        let begin = self.time_of(Mark::SceneBegin).unwrap_or(0.0);
        self.time_of(Mark::SceneEnd)
            .map_or(0.0, |end| (end - begin).max(0.0))
    }

    /// The frame's GPU busy time: the scene's plus the DNN work's, without the gap between the
    /// DNN work's submission and the scene's when the DNN work goes first.
    pub fn busy_ms(&self) -> f64 {
        let mut busy = 0.0;
        let mut prev = 0.0;
        for (m, t) in &self.marks {
            if *m != Mark::SceneBegin {
                busy += (t - prev).max(0.0);
            }
            prev = *t;
        }
        busy
    }

    /// Each chunk in GPU order, from the mark before it to its own: (work id, instance, start
    /// ms, end ms).
    pub fn chunks(&self) -> Vec<(u64, u32, f64, f64)> {
        let mut prev = 0.0;
        let mut out = Vec::new();
        for (m, t) in &self.marks {
            if let Mark::Chunk { work, instance } = m {
                out.push((*work, *instance, prev, *t));
            }
            prev = *t;
        }
        out
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
                    // A device lost since the mapping makes wgpu panic here: the frame's marks
                    // are given up (the plugin rebuilds on the new device).
                    let read = crate::faults::catch(|| {
                        let view = slot.staging.slice(0..n as u64 * 8).get_mapped_range();
                        view.chunks_exact(8)
                            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
                            .collect::<Vec<u64>>()
                    });
                    let Ok(ticks) = read else {
                        slot.state.store(IDLE, Ordering::Release);
                        continue;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(work: u64) -> Mark {
        Mark::Chunk { work, instance: 0 }
    }

    #[test]
    fn dnn_work_first_times_the_scene_and_the_chunks_apart() {
        // DNN work first: preprocessing 0.2 ms, chunks of 0.3 and 0.5 ms; the GPU then idles
        // until the scene starts at 2.0 ms and ends at 9.0 ms.
        let m = FrameMarks {
            frame: 3,
            marks: vec![
                (Mark::Preprocess, 0.2),
                (chunk(1), 0.5),
                (chunk(2), 1.0),
                (Mark::SceneBegin, 2.0),
                (Mark::SceneEnd, 9.0),
            ],
        };
        assert!((m.scene_ms() - 7.0).abs() < 1e-12);
        assert!((m.busy_ms() - 8.0).abs() < 1e-12, "{}", m.busy_ms());
        assert!((m.total_ms() - 9.0).abs() < 1e-12);
        let c = m.chunks();
        assert_eq!(c, vec![(1, 0, 0.2, 0.5), (2, 0, 0.5, 1.0)]);
    }

    #[test]
    fn dnn_work_after_the_scene_times_as_before() {
        let m = FrameMarks {
            frame: 3,
            marks: vec![(Mark::SceneEnd, 6.0), (chunk(7), 6.4), (chunk(8), 7.0)],
        };
        assert!((m.scene_ms() - 6.0).abs() < 1e-12);
        assert!((m.busy_ms() - 7.0).abs() < 1e-12);
        assert_eq!(m.chunks(), vec![(7, 0, 6.0, 6.4), (8, 0, 6.4, 7.0)]);
    }
}
