//! Decision time of the coordinator with 8 DNNs of 200 steps each (target: mean <= 20 µs).
//!
//! Every iteration is one scheduling event of a steady-state render loop: after a render, the
//! coordinator picks GPU chunks for the frame and CPU work for idle workers. Only `schedule` is
//! timed; completing the dispatched work and re-submitting finished models happens outside the
//! timed region.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use heimdall_coordinator::{
    Coordinator, CoordinatorConfig, Event, FrameBudget, GpuWindow, ModelId, ModelSpec, Request,
    StepCost, UtilityParams, policy_by_name,
};

const MODELS: usize = 8;
const STEPS: usize = 200;

fn setup(policy: &str) -> Coordinator {
    let mut budget = FrameBudget::new(30.0, 2.7, 1.0, 5.0);
    budget.chunk_overhead_ms = 0.05;
    let mut cfg = CoordinatorConfig::new(budget);
    cfg.record_timeline = false;
    let mut c = Coordinator::new(cfg, policy_by_name(policy).unwrap());
    for m in 0..MODELS {
        let steps = (0..STEPS)
            .map(|i| {
                if i % 37 == 36 {
                    StepCost::cpu_only(0.5)
                } else {
                    // 0.2 .. 3.0 ms, deterministic.
                    let g = 0.2 + ((i * 7 + m * 13) % 29) as f64 * 0.1;
                    StepCost::gpu_and_cpu(g, 4.0 * g)
                }
            })
            .collect();
        let id = c.register(ModelSpec {
            name: format!("dnn{m}"),
            steps,
            utility: UtilityParams {
                l0: 5.0 + m as f64,
                beta: 1.0 + m as f64 * 0.5,
                gamma: 1.0 + (m % 3) as f64 * 0.5,
            },
            deadline_ms: Some(500.0 + 100.0 * m as f64),
        });
        c.submit(id, Request::default(), 0.0);
    }
    c
}

fn bench_policy(cr: &mut Criterion, policy: &str) {
    cr.bench_function(&format!("schedule/{policy}/8x200"), |b| {
        b.iter_custom(|iters| {
            let mut c = setup(policy);
            let period = 1000.0 / 30.0;
            let mut total = Duration::ZERO;
            for k in 0..iters {
                let now = k as f64 * period + 2.7;
                let window = GpuWindow {
                    start_ms: now,
                    end_ms: (k + 1) as f64 * period,
                };
                let t0 = Instant::now();
                let d = black_box(c.schedule(now, Event::FrameRendered, window, 2));
                total += t0.elapsed();
                // Untimed: everything dispatched finishes as planned; finished models resubmit.
                let mut t = now;
                for g in &d.gpu {
                    t += g.est_ms;
                    if let Some(done) = c.gpu_done(g.id, t - g.est_ms, t) {
                        c.submit(done.model, Request::default(), t);
                    }
                }
                for w in &d.cpu {
                    if let Some(done) = c.cpu_done(w.id, 0, now, now + w.est_ms) {
                        c.submit(done.model, Request::default(), now + w.est_ms);
                    }
                }
                for m in 0..MODELS {
                    if !c.busy(ModelId(m)) {
                        c.submit(ModelId(m), Request::default(), t);
                    }
                }
            }
            total
        })
    });
}

fn benches(cr: &mut Criterion) {
    for p in ["max_total_utility", "max_min_utility", "least_slack_time"] {
        bench_policy(cr, p);
    }
}

criterion_group!(coordinator, benches);
criterion_main!(coordinator);
