//! The convolution cache: which steps of a model run with it, and the hit rates the app reports
//! after each run, which make the predicted costs of those steps (and so the chunks and every
//! decision) follow the scene (see [`crate::analyzer::cache`]).

use super::Coordinator;
use crate::analyzer::{CacheSpec, ProfileError, StepCost};
use crate::model::ModelId;

impl Coordinator {
    /// Declares that `model` runs the steps of `spec` with the convolution cache (`None`: no
    /// cache). Until the first [`Coordinator::report_cache_hits`], its runs are predicted at
    /// their uncached cost. An error (and no change) when a step does not exist or a factor is
    /// out of range.
    pub fn set_conv_cache(
        &mut self,
        model: ModelId,
        spec: Option<CacheSpec>,
    ) -> Result<(), ProfileError> {
        let budget = self.cfg.budget;
        let a = &mut self.models[model.0].analysis;
        a.set_cache(spec.as_ref()).map_err(ProfileError::Invalid)?;
        a.maybe_repartition(&budget, 0.0, true);
        Ok(())
    }

    /// Declares at which boundaries `model`'s caller can continue an inference on the CPU from
    /// the GPU's activations (`steps`: the `k` after ops `0..k`, e.g. the GPU model's
    /// `resumable_steps()`; steps past the model's end are ignored). An offloaded inference the
    /// GPU ran to a listed boundary continues there (`Resume::FromGpu`); at another it starts
    /// again from its input, and the switch weighs that whole CPU run against finishing on the
    /// GPU. `None` goes back to `CoordinatorConfig::offload_resumes_from_gpu` for every
    /// boundary.
    pub fn set_resumable_steps(&mut self, model: ModelId, steps: Option<&[usize]>) {
        let m = &mut self.models[model.0];
        m.resumable = steps.map(|steps| {
            let mut r = vec![false; m.analysis.len() + 1];
            for &k in steps {
                if let Some(slot) = r.get_mut(k) {
                    *slot = true;
                }
            }
            r
        });
    }

    /// Reports the convolution cache's hit rate (`CacheCounts::hit_rate`, in `[0, 1]`) of the
    /// run of `model` that just completed: call it once per run, after the
    /// [`Coordinator::gpu_done`] / [`Coordinator::cpu_done`] that completed it. The measured
    /// times of its cached steps go into the uncached profile at this hit rate, the expected hit
    /// rate moves (up slowly, down at once), and the model is re-partitioned if its predicted
    /// GPU time drifted past the threshold. Nothing for a model without a cache.
    pub fn report_cache_hits(&mut self, model: ModelId, hit_rate: f64) {
        let budget = self.cfg.budget;
        let drift = self.cfg.repartition_drift;
        let a = &mut self.models[model.0].analysis;
        if a.cache.is_none() {
            return;
        }
        a.report_hit(hit_rate);
        a.maybe_repartition(&budget, drift, false);
    }

    /// The expected hit rate of `model`'s convolution cache (`None` without a cache or before
    /// the first report).
    pub fn expected_cache_hit(&self, model: ModelId) -> Option<f64> {
        self.models[model.0]
            .analysis
            .cache
            .as_ref()
            .and_then(|c| c.expected_hit())
    }

    /// What every step of `model` is expected to cost now: its profile (the uncached costs,
    /// [`Coordinator::profile`]) with the cached steps scaled by the expected hit rate.
    pub fn predicted_steps(&self, model: ModelId) -> &[StepCost] {
        &self.models[model.0].analysis.predicted
    }
}

#[cfg(test)]
mod tests {
    use crate::analyzer::{CacheSpec, FrameBudget, StepCost};
    use crate::coordinator::{Coordinator, CoordinatorConfig, Decision, Event, GpuWindow, Request};
    use crate::model::{ModelId, ModelSpec};
    use crate::policy::policy_by_name;
    use crate::processor::Processor;
    use crate::utility::UtilityParams;

    /// 30 Hz with 13.33 ms of render and 2 ms of margin: a budget of 18 ms, no relaxation.
    fn coordinator() -> Coordinator {
        let budget = FrameBudget::new(30.0, 1000.0 / 30.0 - 20.0, 2.0, 0.0);
        assert!((budget.budget_ms() - 18.0).abs() < 1e-9);
        let policy = policy_by_name("max_min_utility").expect("policy");
        Coordinator::new(CoordinatorConfig::new(budget), policy)
    }

    /// 20 steps of 4 ms on the GPU, the first 10 cached: 80 ms uncached.
    fn register(c: &mut Coordinator) -> ModelId {
        let id = c.register(ModelSpec {
            name: "detector".into(),
            steps: vec![StepCost::gpu_and_cpu(4.0, 12.0); 20],
            utility: UtilityParams::default(),
            deadline_ms: None,
        });
        c.set_conv_cache(id, Some(CacheSpec::new(0..10)))
            .expect("spec");
        id
    }

    /// The decision of a frame rendered at `now` that leaves the GPU `window_ms`, with
    /// `idle_slots` CPU slots free.
    fn frame(c: &mut Coordinator, now: f64, window_ms: f64, idle_slots: usize) -> Decision {
        let window = GpuWindow {
            start_ms: now,
            end_ms: now + window_ms,
        };
        c.schedule(now, Event::FrameRendered, window, idle_slots)
    }

    fn gpu_total(c: &Coordinator, m: ModelId) -> f64 {
        c.predicted_steps(m).iter().map(|s| s.gpu_ms).sum()
    }

    fn chunk_lengths(c: &Coordinator, m: ModelId) -> Vec<usize> {
        c.partition(m).chunks.iter().map(|k| k.ops.len()).collect()
    }

    #[test]
    fn a_high_hit_rate_makes_runs_cheaper_and_chunks_longer() {
        let mut c = coordinator();
        let m = register(&mut c);
        // Before any report: the uncached cost, 4 steps (16 ms) per 18 ms chunk.
        assert_eq!(gpu_total(&c, m), 80.0);
        assert_eq!(chunk_lengths(&c, m), vec![4, 4, 4, 4, 4]);
        c.report_cache_hits(m, 0.9);
        assert_eq!(c.expected_cache_hit(m), Some(0.9));
        // Cached steps cost 4 * (1 - 0.9 * 0.9) = 0.76 ms: 10 * 0.76 + 10 * 4 = 47.6 ms.
        assert!((gpu_total(&c, m) - 47.6).abs() < 1e-9);
        // The profile keeps the uncached costs.
        assert!(c.profile(m).steps.iter().all(|s| s.gpu_ms == 4.0));
        // The ten cached steps and two more (7.6 + 8 = 15.6 ms) fit the first chunk.
        let lengths = chunk_lengths(&c, m);
        assert_eq!(lengths[0], 12);
        assert_eq!(lengths.len(), 3);
        assert!(
            c.partition(m)
                .chunks
                .iter()
                .all(|k| k.est_ms <= 18.0 + 1e-9)
        );
        // The scheduler hands out the longer chunk.
        c.submit(m, Request::default(), 0.0);
        let d = frame(&mut c, 0.0, 20.0, 0);
        assert_eq!(d.gpu.len(), 1);
        assert_eq!(d.gpu[0].ops, 0..12);
        assert!((d.gpu[0].est_ms - 15.6).abs() < 1e-9);
    }

    #[test]
    fn a_scene_change_restores_the_uncached_cost_at_the_first_report() {
        let mut c = coordinator();
        let m = register(&mut c);
        for _ in 0..5 {
            c.report_cache_hits(m, 0.9);
        }
        assert!(gpu_total(&c, m) < 50.0);
        c.report_cache_hits(m, 0.0);
        assert_eq!(c.expected_cache_hit(m), Some(0.0));
        assert_eq!(gpu_total(&c, m), 80.0);
        assert_eq!(chunk_lengths(&c, m), vec![4, 4, 4, 4, 4]);
        // Back to a still scene: the expectation climbs again, 0.3 of the way per report.
        c.report_cache_hits(m, 0.9);
        assert!((c.expected_cache_hit(m).unwrap() - 0.27).abs() < 1e-9);
        c.report_cache_hits(m, 0.9);
        assert!((c.expected_cache_hit(m).unwrap() - 0.459).abs() < 1e-9);
    }

    /// Measured chunks of cached runs leave the uncached profile where it is, and a scene
    /// change measured at full cost does not inflate it either: shares of cached steps are
    /// folded in at their run's reported hit rate.
    #[test]
    fn measurements_of_cached_runs_keep_the_uncached_profile() {
        let mut c = coordinator();
        let m = register(&mut c);
        c.report_cache_hits(m, 0.9);
        let run = |c: &mut Coordinator, t0: f64, cost: &dyn Fn(usize) -> f64, hit: f64| {
            c.submit(m, Request::default(), t0);
            let mut now = t0;
            let mut done = false;
            while !done {
                let d = frame(c, now, 20.0, 0);
                for w in d.gpu {
                    let t: f64 = w.ops.clone().map(cost).sum();
                    done |= c.gpu_done(w.id, now, now + t).is_some();
                    now += t;
                }
                now += 40.0;
            }
            c.report_cache_hits(m, hit);
            now
        };
        // Still scene: cached steps really cost 0.76 ms.
        let still = |op: usize| if op < 10 { 0.76 } else { 4.0 };
        let mut t = 0.0;
        for _ in 0..10 {
            t = run(&mut c, t, &still, 0.9);
        }
        for s in &c.profile(m).steps {
            assert!((s.gpu_ms - 4.0).abs() < 1e-6, "{s:?}");
        }
        // A scene change: everything recomputed at 4 ms, hit rate 0.
        let full = |_: usize| 4.0;
        run(&mut c, t, &full, 0.0);
        for s in &c.profile(m).steps {
            assert!((s.gpu_ms - 4.0).abs() < 1e-6, "{s:?}");
        }
        assert!((gpu_total(&c, m) - 80.0).abs() < 1e-6);
        let first = c.predicted_steps(m)[0].on(Processor::Gpu).unwrap();
        assert!((first - 4.0).abs() < 1e-6);
    }

    /// The cache is the GPU's: a high hit rate leaves the CPU cost as profiled, and an
    /// inference on the CPU (which reports no hit rate) feeds its measured time to the profile
    /// at once instead of waiting for a report that never comes.
    #[test]
    fn the_cache_never_makes_the_cpu_cheaper_and_cpu_times_count_at_once() {
        // A scene that fills the frame: no GPU budget, one CPU slot.
        let budget = FrameBudget::new(30.0, 1000.0 / 30.0, 2.0, 0.0);
        let mut cfg = CoordinatorConfig::new(budget);
        cfg.cpu_workers = 1;
        let mut c = Coordinator::new(cfg, policy_by_name("max_min_utility").expect("policy"));
        let m = register(&mut c);
        for _ in 0..5 {
            c.report_cache_hits(m, 0.9);
        }
        let cpu_total: f64 = c.predicted_steps(m).iter().map(|s| s.cpu_ms).sum();
        assert_eq!(cpu_total, 240.0);
        assert!(gpu_total(&c, m) < 50.0);
        // No GPU budget: the inference goes to the CPU's slot.
        c.submit(m, Request::default(), 0.0);
        let d = frame(&mut c, 0.0, 0.0, 1);
        assert!(d.gpu.is_empty());
        assert_eq!(d.cpu.len(), 1);
        let w = &d.cpu[0];
        assert_eq!(w.threads, 1);
        assert!(w.ops.clone().any(|op| op < 10), "{:?}", w.ops);
        // It ran at twice its profiled cost, and no hit rate is reported.
        let measured: f64 = 2.0 * 12.0 * w.ops.len() as f64;
        c.cpu_done(w.id, 0, 0.0, measured);
        let first = c.profile(m).steps[w.ops.start].cpu_ms;
        assert!(first > 12.0 + 1e-9, "CPU time held back: {first}");
        let predicted = c.predicted_steps(m)[w.ops.start].cpu_ms;
        assert_eq!(predicted, first);
    }

    #[test]
    fn models_without_a_cache_ignore_reports_and_bad_specs_are_refused() {
        let mut c = coordinator();
        let m = c.register(ModelSpec {
            name: "plain".into(),
            steps: vec![StepCost::gpu_and_cpu(4.0, 12.0); 5],
            utility: UtilityParams::default(),
            deadline_ms: None,
        });
        c.report_cache_hits(m, 1.0);
        assert_eq!(c.expected_cache_hit(m), None);
        assert_eq!(gpu_total(&c, m), 20.0);
        assert!(c.set_conv_cache(m, Some(CacheSpec::new([7]))).is_err());
        c.set_conv_cache(m, Some(CacheSpec::new([0]))).unwrap();
        c.report_cache_hits(m, 1.0);
        assert!((gpu_total(&c, m) - 16.4).abs() < 1e-9);
        c.set_conv_cache(m, None).unwrap();
        assert_eq!(gpu_total(&c, m), 20.0);
    }
}
