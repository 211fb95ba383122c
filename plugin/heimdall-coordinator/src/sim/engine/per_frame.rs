//! The per-frame decision mode (`"decisions": "per_frame"`): how the Bevy plugin orders a
//! frame's work, its submissions and its readbacks.

use super::{Event, GpuItem, GpuWindow, Kind, ModelId, SAME_INSTANT_MS, Sim};

impl Sim<'_> {
    /// The per-frame decision at a frame's start, as the plugin's `plan_frame`: what the GPU
    /// finished is reported (with `results_at_frame_start`), the held requests of idle DNNs are
    /// submitted (admitted now), then the coordinator decides for the window from now plus its
    /// render estimate to the next frame start. The chunks follow the frame's render, already
    /// queued, or with `dnn_work_first` go before it.
    pub(super) fn decide_frame(&mut self, now: f64) {
        self.report_gpu_at_frame_start(now);
        for i in 0..self.held.len() {
            if self.held[i].is_some() && !self.coord.busy(ModelId(i)) {
                let req = self.held[i].take().expect("checked");
                self.coord.submit(ModelId(i), req, now);
            }
        }
        let window = GpuWindow {
            start_ms: now + self.coord.config().budget.render_ms,
            end_ms: now + self.period,
        };
        self.dispatch(now, Event::FrameRendered, window);
        if let Some((k, render)) = self.render_due.take() {
            self.queue_render(now, k, render);
        }
    }

    /// Per frame with `cpu_dispatch_on_completion`: whether the plugin's coordinator is lent to
    /// the CPU workers at `now`, so that a worker that finished gets its next work at once. With
    /// the scenario's `cpu_lend_ms` it is lent from that long before the next frame's decision
    /// (the end of the render world's frame) to the decision; earlier in the frame a worker that
    /// finished waits, and the lend is queued (its free slots are filled then, or at the
    /// decision). Without it, always.
    pub(super) fn lent(&mut self, now: f64) -> bool {
        let Some(lend) = self.sc.cpu_lend_ms else {
            return true;
        };
        let k = self.next_vsync;
        let at = self.vsync_at(k) - lend;
        if now >= at - SAME_INSTANT_MS {
            return true;
        }
        if self.lend_queued != Some(k) {
            self.lend_queued = Some(k);
            self.push(at, Kind::Lend(k));
        }
        false
    }

    /// Queues frame `k`'s render (`render` ms) on the GPU after what is queued.
    pub(super) fn queue_render(&mut self, now: f64, k: usize, render: f64) {
        self.add_work(k, render);
        let start = now.max(self.gpu_end).max(now + self.submit_delays(k).1);
        let end = start + render;
        self.gpu_end = end;
        self.last_render_end = end;
        self.push(end, Kind::GpuDone(GpuItem::Render { frame: k, start }));
    }

    /// With `results_at_frame_start`, at a frame start: the GPU chunks that ended since the last
    /// one reach the coordinator, as the plugin learns of them. An inference whose last chunk
    /// ended completes now, its outputs read (`gpu_outputs_read`); the chunks' measured times
    /// follow (`gpu_done`), as the frame's timestamps do.
    pub(super) fn report_gpu_at_frame_start(&mut self, now: f64) {
        let done = std::mem::take(&mut self.unreported);
        for &(_, model, _, _, last) in &done {
            if last && let Some(c) = self.coord.gpu_outputs_read(model, now) {
                self.completed(c);
            }
        }
        for (id, _, start, end, _) in done {
            if let Some(c) = self.coord.gpu_done(id, start, end) {
                self.completed(c);
            }
        }
    }

    /// The replayed frame starts (per frame with a replay that has them), else none.
    fn replayed_starts(&self) -> &[f64] {
        match &self.opts.replay {
            Some(r) if self.per_frame => &r.frame_start_ms,
            _ => &[],
        }
    }

    /// The grid index of the first frame past the replayed ones: the first grid point at least
    /// a period after the last replayed start (0 without any).
    fn first_grid_frame(&self) -> usize {
        let starts = self.replayed_starts();
        starts.last().map_or(0, |&last| {
            let next = ((last + self.period) / self.period - 1e-6).ceil().max(0.0) as usize;
            starts.len().max(next)
        })
    }

    /// When frame `k` starts: per frame its replayed start; past those (or without), on the
    /// grid of periods, from the first grid point a period after the last replayed start.
    pub(super) fn vsync_at(&self, k: usize) -> f64 {
        let starts = self.replayed_starts();
        match starts.get(k) {
            Some(&t) => t,
            None => (self.first_grid_frame() + k - starts.len()) as f64 * self.period,
        }
    }

    /// The frames of the window: the replayed ones, then those of the grid up to the window's
    /// end (without a replay of frame starts: the scenario's duration in periods).
    pub(super) fn frames(&self) -> usize {
        let n = self.replayed_starts().len();
        let grid_end = (self.end_ms / self.period).round() as usize;
        n + grid_end.saturating_sub(self.first_grid_frame())
    }

    /// Where the display's blanks fall in the period, ms (the replay's; 0: on the frame grid).
    pub(super) fn vsync_phase(&self) -> f64 {
        self.opts.replay.as_ref().map_or(0.0, |r| r.vsync_phase())
    }

    /// The blank (counted from the first at or after time 0) at which the display model shows
    /// frame `k`, whose render ended at `end`: the first at or after `end`. Where the replay has
    /// the frame's presentation time (per frame), also at or after that blank (the one nearest
    /// to it: the recorded time is a blank) and after the blank of the frame before, one frame
    /// per blank, as a FIFO swap chain shows them.
    pub(super) fn display_blank(&self, k: usize, end: f64) -> u64 {
        let phase = self.vsync_phase();
        let mut blank = ((end - phase) / self.period - 1e-9).ceil().max(0.0) as u64;
        let given = match &self.opts.replay {
            Some(r) if self.per_frame => r.present(k),
            _ => None,
        };
        if let Some(p) = given {
            let at = ((self.vsync_at(k) + p - phase) / self.period)
                .round()
                .max(0.0) as u64;
            blank = blank.max(at);
            if let Some(&last) = self.presented.last() {
                blank = blank.max(last.saturating_add(1));
            }
        }
        blank
    }

    /// The readback of model `m`'s outputs read with frame `k`'s submission, ms: the replay's
    /// (the model's own in that frame, else the frame's mean), else the scenario's.
    pub(super) fn readback(&self, k: usize, m: ModelId) -> f64 {
        let name = &self.sc.dnns[m.0].name;
        self.opts
            .replay
            .as_ref()
            .and_then(|r| r.readback(k, name))
            .unwrap_or(self.sc.readback_ms)
    }

    /// Per frame, the replayed delays of frame `k`'s submissions after its start (DNN work,
    /// scene); none per event.
    pub(super) fn submit_delays(&self, k: usize) -> (f64, f64) {
        match &self.opts.replay {
            Some(r) if self.per_frame => r.submits(k),
            _ => (0.0, 0.0),
        }
    }

    /// Counts `ms` of GPU work issued in frame `k`'s period.
    pub(super) fn add_work(&mut self, k: usize, ms: f64) {
        if self.work_ms.len() <= k {
            self.work_ms.resize(k + 1, 0.0);
        }
        self.work_ms[k] += ms;
    }
}
