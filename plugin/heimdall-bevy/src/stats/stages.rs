//! Where a result's latency went, stage by stage, from the camera capture to the main world:
//! waiting to start (the main world's update, extraction and the render world's decision),
//! its chunks (one frame or several), the GPU and the readback, the decoder, and the wait for the
//! main world's next update. `stats.json` reports each stage per model (`latency_stages_ms`)
//! beside the whole latency; a deadline miss shows which stage took the time.

use serde_json::{Value, json};

use crate::stats::history::{summary, trim_to};

/// When an inference passed each stage (ms on the plugin's clock, [`crate::clock::HeimdallClock`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StageTimes {
    /// The render world started it (its frame's coordinator decision).
    pub started_ms: f64,
    /// Its last GPU work was submitted (GPU runs; `None` on the CPU).
    pub submitted_ms: Option<f64>,
    /// Its outputs were read back (GPU) or computed (CPU), set when they are handed to the
    /// decoder.
    pub ready_ms: f64,
    /// Decoded and sent to the main world.
    pub sent_ms: f64,
}

/// Results whose stages are kept per model (the latest ones: a stage's quantiles need far fewer
/// than the whole latency's history).
pub const STAGE_HISTORY: usize = 4096;

/// Results past their deadline whose stage times are kept whole (the latest ones).
pub const LATE_RESULTS: usize = 256;

/// One model's stage durations, ms, over its latest [`STAGE_HISTORY`] results.
#[derive(Clone, Debug)]
pub struct LatencyStages {
    /// Capture → started.
    pub to_start: Vec<f64>,
    /// Started → last chunk submitted (GPU runs).
    pub chunks: Vec<f64>,
    /// Last submission → outputs read back (GPU runs), or started → computed (CPU runs).
    pub compute: Vec<f64>,
    /// Outputs → decoded and sent.
    pub decode: Vec<f64>,
    /// Sent → received by the main world (its next update).
    pub delivery: Vec<f64>,
    /// The latest [`LATE_RESULTS`] results past their deadline, whole: capture, start, last
    /// submission (NaN on the CPU), outputs, sent, received (ms on the plugin's clock).
    pub late: Vec<[f64; 6]>,
}

impl Default for LatencyStages {
    fn default() -> Self {
        let room = || Vec::with_capacity(STAGE_HISTORY + STAGE_HISTORY / 8);
        LatencyStages {
            to_start: room(),
            chunks: room(),
            compute: room(),
            decode: room(),
            delivery: room(),
            late: Vec::with_capacity(LATE_RESULTS + LATE_RESULTS / 8),
        }
    }
}

impl LatencyStages {
    /// Forgets every result, keeping the room (no allocation).
    pub fn clear(&mut self) {
        for v in [
            &mut self.to_start,
            &mut self.chunks,
            &mut self.compute,
            &mut self.decode,
            &mut self.delivery,
        ] {
            v.clear();
        }
        self.late.clear();
    }

    /// Records a result captured at `capture_ms` that reached the main world at `arrived_ms`
    /// (kept whole when that is past `deadline_ms`).
    pub fn record(
        &mut self,
        capture_ms: f64,
        t: &StageTimes,
        arrived_ms: f64,
        deadline_ms: Option<f64>,
    ) {
        if deadline_ms.is_some_and(|d| arrived_ms - capture_ms > d) {
            let submitted = t.submitted_ms.unwrap_or(f64::NAN);
            self.late.push([
                capture_ms,
                t.started_ms,
                submitted,
                t.ready_ms,
                t.sent_ms,
                arrived_ms,
            ]);
            trim_to(&mut self.late, LATE_RESULTS);
        }
        let d = |a: f64, b: f64| (b - a).max(0.0);
        let compute_from = t.submitted_ms.unwrap_or(t.started_ms);
        for (v, x) in [
            (&mut self.to_start, d(capture_ms, t.started_ms)),
            (&mut self.compute, d(compute_from, t.ready_ms)),
            (&mut self.decode, d(t.ready_ms, t.sent_ms)),
            (&mut self.delivery, d(t.sent_ms, arrived_ms)),
        ] {
            v.push(x);
            trim_to(v, STAGE_HISTORY);
        }
        if let Some(s) = t.submitted_ms {
            self.chunks.push(d(t.started_ms, s));
            trim_to(&mut self.chunks, STAGE_HISTORY);
        }
    }

    /// As JSON: each stage's summary (count, mean, p50, p99, max).
    pub fn to_json(&self) -> Value {
        json!({
            "capture_to_start": summary(&self.to_start),
            "start_to_last_submission": summary(&self.chunks),
            "gpu_and_readback_or_cpu": summary(&self.compute),
            "decode": summary(&self.decode),
            "to_the_main_world": summary(&self.delivery),
            "late_results_definition": "results past the deadline: [capture, start, last \
                submission (null on the CPU), outputs, sent, received], ms on the plugin's clock",
            "late_results": self.late.iter().map(|r| {
                r.iter().map(|&v| if v.is_finite() { json!(v) } else { Value::Null }).collect::<Vec<_>>()
            }).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each stage is the difference of its two times; a CPU run has no submission and its
    /// compute stage counts from the start.
    #[test]
    fn stages_split_the_latency() {
        let mut s = LatencyStages::default();
        let gpu = StageTimes {
            started_ms: 112.0,
            submitted_ms: Some(114.5),
            ready_ms: 116.0,
            sent_ms: 116.25,
        };
        s.record(100.0, &gpu, 133.5, Some(50.0));
        let cpu = StageTimes {
            started_ms: 120.0,
            submitted_ms: None,
            ready_ms: 130.0,
            sent_ms: 131.0,
        };
        s.record(110.0, &cpu, 140.0, Some(25.0));
        assert_eq!(s.to_start, vec![12.0, 10.0]);
        assert_eq!(s.chunks, vec![2.5]);
        assert_eq!(s.compute, vec![1.5, 10.0]);
        assert_eq!(s.decode, vec![0.25, 1.0]);
        assert_eq!(s.delivery, vec![17.25, 9.0]);
        // The stages add up to the whole latency.
        let total: f64 = [12.0, 2.5, 1.5, 0.25, 17.25].iter().sum();
        assert_eq!(total, 133.5 - 100.0);
        // Only the CPU result (30 ms) is past its deadline (25 ms): kept whole.
        assert_eq!(s.late.len(), 1);
        let j = s.to_json();
        assert_eq!(j["late_results"][0][0], 110.0);
        assert_eq!(j["late_results"][0][2], Value::Null);
        assert_eq!(j["late_results"][0][5], 140.0);
        assert_eq!(j["to_the_main_world"]["count"], 2);
        assert_eq!(j["start_to_last_submission"]["max"], 2.5);
    }
}
