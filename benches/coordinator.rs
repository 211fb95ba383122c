//! Decision time of the coordinator with 8 and 16 DNNs of 200 steps each, in the configuration
//! the Bevy plugin uses (targets: mean <= 5 µs for 8 DNNs, <= 10 µs for 16): 60 Hz, 1 ms margin,
//! 0.5 ms relaxation, 2 CPU workers, offload on, the timeline recording (a ring of the default
//! capacity, so that hours of frames cost bounded memory). `max_total_utility` is the plugin's
//! policy; the others and a run with the timeline off are there for comparison.
//!
//! Every iteration is one scheduling event of a steady-state render loop: after a render, the
//! coordinator picks GPU chunks for the frame and CPU work for idle workers. Only `schedule` is
//! timed; completing the dispatched work (which also records its timeline spans) and
//! re-submitting finished models happens outside the timed region.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use heimdall_coordinator::{
    Coordinator, CoordinatorConfig, Event, FrameBudget, GpuWindow, ModelId, ModelSpec, Request,
    StepCost, UtilityParams, policy_by_name,
};

const STEPS: usize = 200;
const HZ: f64 = 60.0;

fn setup(policy: &str, models: usize, timeline: bool) -> Coordinator {
    // The plugin's settings: HeimdallSettings::default() (margin 1 ms, relaxation 0.5 ms,
    // 2 workers, offload on) at 60 Hz, the render measured at about 4 ms.
    let mut budget = FrameBudget::new(HZ, 4.0, 1.0, 0.5);
    budget.chunk_overhead_ms = 0.05;
    let mut cfg = CoordinatorConfig::new(budget);
    cfg.cpu_workers = 2;
    cfg.record_timeline = timeline;
    let mut c = Coordinator::new(cfg, policy_by_name(policy).unwrap());
    for m in 0..models {
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

fn bench_policy(cr: &mut Criterion, policy: &str, models: usize, timeline: bool) {
    let label = if timeline { "" } else { "/timeline_off" };
    cr.bench_function(&format!("schedule/{policy}/{models}x{STEPS}{label}"), |b| {
        b.iter_custom(|iters| {
            let mut c = setup(policy, models, timeline);
            let period = 1000.0 / HZ;
            let mut total = Duration::ZERO;
            for k in 0..iters {
                let now = k as f64 * period + 4.0;
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
                for m in 0..models {
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
    for models in [8, 16] {
        for p in ["max_total_utility", "max_min_utility", "least_slack_time"] {
            bench_policy(cr, p, models, true);
        }
        bench_policy(cr, "max_total_utility", models, false);
    }
}

criterion_group!(coordinator, benches);
criterion_main!(coordinator);
