//! A finished inference: the hit rate of its DNN's convolution cache reported to the coordinator
//! (as the plugin reports it with a GPU inference's outputs), counted and recorded.

use super::{Completion, Sim};

impl Sim<'_> {
    /// A finished inference: its convolution cache's hit rate reported (one that ended on the
    /// GPU, as the plugin reports it with the outputs read), counted (the replay's index of the
    /// next one), kept and recorded.
    pub(super) fn completed(&mut self, c: Completion) {
        let hit = if c.offloaded {
            None
        } else {
            self.cache_hit(c.model.0)
        };
        if let Some(hit) = hit {
            self.coord.report_cache_hits(c.model, hit);
        }
        self.finished[c.model.0] += 1;
        if let Some(r) = self.recorder.as_mut() {
            if let Some(hit) = hit {
                r.cache_hit(c.model, hit);
            }
            r.finished(c.model);
        }
        self.completions.push(c);
    }

    /// The hit rate DNN `m`'s running inference reports if it ends on the GPU: the replay's for
    /// it, else the scenario's `conv_cache.hit_rate`; none without a cache.
    fn cache_hit(&self, m: usize) -> Option<f64> {
        let d = &self.sc.dnns[m];
        let cache = d.conv_cache.as_ref()?;
        self.opts
            .replay
            .as_ref()
            .and_then(|r| r.cache_hit(&d.name, self.finished[m]))
            .or(cache.hit_rate)
    }
}
