//! What a recorded DNN was declared as to its coordinator beyond its profile (resumable steps,
//! CPU threads, on demand, convolution cache) and the hit rates its runs reported.

use super::{InferenceRec, ModelId, RunRecorder};
use crate::analyzer::CacheSpec;

impl RunRecorder {
    /// The boundaries at which an offloaded inference of DNN `id` continues on the CPU from the
    /// GPU's activations, as given to its coordinator (`Coordinator::set_resumable_steps`; call
    /// it after [`RunRecorder::add_model`]), exported as the DNN's `resumable_steps` (sorted,
    /// without repeats or boundaries past its last step). `None` forgets them: the export leaves
    /// the field out, so the simulation resumes as its configuration's
    /// `offload_resumes_from_gpu` says. A later call replaces an earlier one. Unknown DNNs are
    /// ignored ([`RunRecorder::ignored`]).
    pub fn set_resumable_steps(&mut self, id: ModelId, steps: Option<&[usize]>) {
        match self.models.iter_mut().find(|m| m.id == id) {
            Some(m) => m.resumable_steps = steps.map(<[usize]>::to_vec),
            None => self.ignored += 1,
        }
    }

    /// DNN `id`'s CPU backend runs on `threads` threads and is `speedup` times faster there than
    /// on one (as given to its coordinator, `Coordinator::set_cpu_parallelism`; call it after
    /// [`RunRecorder::add_model`]): exported as the DNN's `cpu_threads` and `cpu_speedup`, and
    /// its measured CPU times go into the replay as one-thread times (times `speedup`, as the
    /// scenario's `cpu_op_ms`). A `threads` of 0 counts as 1, a `speedup` that is not finite and
    /// > 0 as 1. Unknown DNNs are ignored ([`RunRecorder::ignored`]).
    pub fn set_cpu_parallelism(&mut self, id: ModelId, threads: usize, speedup: f64) {
        match self.models.iter_mut().find(|m| m.id == id) {
            Some(m) => {
                m.cpu_threads = threads.max(1);
                m.cpu_speedup = if speedup.is_finite() && speedup > 0.0 {
                    speedup
                } else {
                    1.0
                };
            }
            None => self.ignored += 1,
        }
    }

    /// Whether DNN `id` is requested on demand, as given to its coordinator
    /// (`Coordinator::set_on_demand`; call it after [`RunRecorder::add_model`]): exported as the
    /// DNN's `on_demand` (every recorded DNN is requested by `events_ms`, so the field says what
    /// the app's were). Unknown DNNs are ignored ([`RunRecorder::ignored`]).
    pub fn set_on_demand(&mut self, id: ModelId, on_demand: bool) {
        match self.models.iter_mut().find(|m| m.id == id) {
            Some(m) => m.on_demand = Some(on_demand),
            None => self.ignored += 1,
        }
    }

    /// DNN `id` runs the steps of `spec` with the convolution cache (`None`: no cache), as given
    /// to its coordinator (`Coordinator::set_conv_cache`; call it after
    /// [`RunRecorder::add_model`]): exported as the DNN's `conv_cache`, with the mean of the hit
    /// rates its inferences in the window reported ([`RunRecorder::cache_hit`]) as the rate a
    /// simulated GPU run reports where the replay has none. The cache changes the coordinator's
    /// predicted costs, so a recording without it simulates other decisions. Unknown DNNs are
    /// ignored ([`RunRecorder::ignored`]).
    pub fn set_conv_cache(&mut self, id: ModelId, spec: Option<&CacheSpec>) {
        match self.models.iter_mut().find(|m| m.id == id) {
            Some(m) => m.conv_cache = spec.cloned(),
            None => self.ignored += 1,
        }
    }

    /// `id`'s current inference reported its convolution cache's hit rate `hit` to the
    /// coordinator (`Coordinator::report_cache_hits`): call it before the inference's
    /// [`RunRecorder::finished`]; exported in the replay's `cache_hit`. Rates that are NaN are
    /// ignored ([`RunRecorder::ignored`]), others clamped to `[0, 1]` (as the coordinator does).
    pub fn cache_hit(&mut self, id: ModelId, hit: f64) {
        let since = self.frames_seen;
        let Some(m) = self.models.iter_mut().find(|m| m.id == id) else {
            self.ignored += 1;
            return;
        };
        if hit.is_nan() {
            self.ignored += 1;
            return;
        }
        let inf = m.current.get_or_insert_with(|| InferenceRec {
            model: id,
            since,
            chunks: Vec::new(),
            cache_hit: None,
        });
        inf.cache_hit = Some(hit.clamp(0.0, 1.0));
    }

    /// Forgets DNN `id` (e.g. its model was replaced by another registration: the app's DNN now
    /// runs under a new id); unknown ids are ignored.
    pub fn remove_model(&mut self, id: ModelId) {
        self.models.retain(|m| m.id != id);
    }
}
