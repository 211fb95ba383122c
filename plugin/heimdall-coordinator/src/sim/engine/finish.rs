//! The end of a run: frame, DNN and scheduler statistics from what the simulation recorded.

use super::{DnnStats, FrameStats, LatencyStats, ModelId, Report, SchedulerStats, Sim, SimOutput};

/// Share of intervals between consecutive presented frames that are at most 1.25 periods (the
/// apps' `wall_on_time_rate`), and the longest interval in periods. A vsync whose render was
/// still pending leaves a two-period interval.
pub(super) fn presentation_intervals(presented: &[u64]) -> (f64, f64) {
    let gaps: Vec<u64> = presented
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .collect();
    if gaps.is_empty() {
        return (1.0, 0.0);
    }
    let ok = gaps.iter().filter(|&&g| g as f64 <= 1.25).count();
    let max = gaps.iter().copied().max().unwrap_or(0) as f64;
    (ok as f64 / gaps.len() as f64, max)
}

impl Sim<'_> {
    /// The frames' statistics: on time, rendered, fitting, rates per window and presented.
    fn frame_stats(&self) -> FrameStats {
        let sc = self.sc;
        let frames = self.frames();
        let dur = self.end_ms / 1000.0;
        // Frame rate per 1/3 s window, as in the paper; only whole windows count.
        let windows = (dur * 3.0 + 1e-9).floor() as usize;
        let mut per_window = vec![0usize; windows.max(1)];
        for &t in &self.render_ends {
            let w = (t / (1000.0 / 3.0)).floor() as usize;
            if w < windows {
                per_window[w] += 1;
            }
        }
        let fps_min_window = if windows == 0 {
            self.render_ends.len() as f64 / dur
        } else {
            per_window.iter().copied().min().unwrap_or(0) as f64 * 3.0
        };
        let (wall_on_time_rate, max_interval_periods) = presentation_intervals(&self.presented);
        let rendered = self.render_ends.len();
        let fits = self
            .work_ms
            .iter()
            .filter(|&&w| w > 0.0 && w <= self.period + 1e-9)
            .count();
        FrameStats {
            target_fps: sc.frame_rate,
            frames: frames as u64,
            rendered: self.render_ends.len() as u64,
            on_time_rate: if frames == 0 {
                1.0
            } else {
                self.frames_on_time as f64 / frames as f64
            },
            work_fits_rate: if rendered == 0 {
                1.0
            } else {
                fits.min(rendered) as f64 / rendered as f64
            },
            fps_mean: self.render_ends.len() as f64 / dur,
            fps_min_window,
            wall_on_time_rate,
            max_interval_periods,
        }
    }

    /// DNN `i`'s statistics: completions, latencies, misses, busy times, offload and rates.
    fn dnn_stats(&self, i: usize) -> DnnStats {
        let d = &self.sc.dnns[i];
        let dur = self.sc.duration_s;
        let lats: Vec<f64> = self
            .completions
            .iter()
            .filter(|c| c.model.0 == i)
            .map(|c| c.latency_ms())
            .collect();
        let misses = self
            .completions
            .iter()
            .filter(|c| c.model.0 == i && c.deadline_met == Some(false))
            .count();
        let status = self.coord.status(ModelId(i), self.end_ms);
        let on_cpu = self
            .completions
            .iter()
            .filter(|c| c.model.0 == i && c.offloaded)
            .count();
        DnnStats {
            name: d.name.clone(),
            completed: lats.len() as u64,
            latency_ms: LatencyStats::of(&lats),
            deadline_miss_rate: if lats.is_empty() {
                0.0
            } else {
                misses as f64 / lats.len() as f64
            },
            gpu_busy_ms: self.gpu_busy[i],
            cpu_busy_ms: self.cpu_busy[i],
            offloaded_ms: status.offloaded_ms,
            offload_switches: status.mode_switches,
            resumed_from_gpu: status.resumed_from_gpu,
            deadline_overrides: status.deadline_overrides,
            oversized_steps: status.oversized_steps.len() as u64,
            rate_hz: lats.len() as f64 / dur,
            cpu_share: if lats.is_empty() {
                0.0
            } else {
                on_cpu as f64 / lats.len() as f64
            },
            cpu_threads: status.cpu_threads,
            requested_rate_hz: status.requested_rate_hz,
            granted_rate_hz: status.granted_rate_hz,
            shortfall: status.shortfall.map(|s| s.to_string()),
        }
    }

    /// The run's report, timeline, completions and recording.
    pub(super) fn finish(self) -> SimOutput {
        let frame_stats = self.frame_stats();
        let dnns = (0..self.sc.dnns.len()).map(|i| self.dnn_stats(i)).collect();
        let n = self.decision_us.len().max(1) as f64;
        let scheduler = SchedulerStats {
            decisions: self.decision_us.len() as u64,
            decision_us_mean: self.decision_us.iter().sum::<f64>() / n,
            decision_us_max: self.decision_us.iter().copied().fold(0.0, f64::max),
        };
        SimOutput {
            report: Report {
                policy: self.coord.policy_name(),
                frames: frame_stats,
                dnns,
                scheduler,
            },
            timeline: self.coord.timeline().clone(),
            completions: self.completions,
            recorded: self.recorder.map(|r| r.export()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frames shown at vsyncs 1, 2, 3, 5, 6: intervals 1, 1, 2, 1 periods; 3 of 4 are at most
    /// 1.25 periods, the longest is 2.
    #[test]
    fn presentation_intervals_by_hand() {
        assert_eq!(presentation_intervals(&[1, 2, 3, 5, 6]), (0.75, 2.0));
        assert_eq!(presentation_intervals(&[4]), (1.0, 0.0));
    }
}
