//! Baselines for comparison: what multi-threaded engines and Unity Sentis do.

use super::interface::{Dispatch, JobView, Policy, PolicyContext};

/// Whole models in request order, no chunking, no coordination: every ready job enqueues its whole
/// GPU run at once, like one engine instance per thread sharing one GPU queue.
#[derive(Clone, Copy, Debug, Default)]
pub struct Fifo;

impl Policy for Fifo {
    fn name(&self) -> String {
        "fifo".into()
    }

    fn dispatch(&self) -> Dispatch {
        Dispatch::WholeRuns
    }

    fn coordinated(&self) -> bool {
        false
    }

    fn score(&self, _ctx: &PolicyContext, job: &JobView<'_>) -> f64 {
        -(job.seq as f64)
    }
}

/// `K` ops per rendered frame, models taken round-robin (Unity Sentis' `ScheduleIterable`).
#[derive(Clone, Copy, Debug)]
pub struct LayersPerFrame {
    k: usize,
    last_model: Option<usize>,
}

impl LayersPerFrame {
    /// `k` ops per frame.
    pub fn new(k: usize) -> Self {
        LayersPerFrame {
            k,
            last_model: None,
        }
    }
}

impl Policy for LayersPerFrame {
    fn name(&self) -> String {
        format!("layers:{}", self.k)
    }

    fn dispatch(&self) -> Dispatch {
        Dispatch::OpsPerFrame(self.k)
    }

    fn coordinated(&self) -> bool {
        false
    }

    fn score(&self, _ctx: &PolicyContext, job: &JobView<'_>) -> f64 {
        // Cyclic distance after the model served last: the next one in turn scores highest.
        const RING: i64 = 1 << 20;
        let m = job.model.0 as i64;
        let last = self.last_model.map_or(-1, |l| l as i64);
        -((m - last - 1).rem_euclid(RING) as f64)
    }

    fn on_dispatch(&mut self, job: &JobView<'_>) {
        self.last_model = Some(job.model.0);
    }
}
