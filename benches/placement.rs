//! The placement planner's decision (`heimdall_coordinator::placement::plan`, issue 34) for 8
//! DNNs (target: <= 20 µs), in three situations: everything fits on the GPU (no move to make),
//! the GPU is overloaded (the planner searches repair moves and water-fills both processors),
//! and the scene leaves no GPU budget (everything goes to the CPU, whose slots are then full).
//! The coordinator re-plans every 250 ms and when something changes, not per decision.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use heimdall_coordinator::placement::{DnnDemand, Machine, PlacementConfig, plan};
use heimdall_coordinator::{ModelId, Processor};

/// Eight DNNs of the shopping and workspace apps' sizes: hands, palm, objects, mask, text, face,
/// pose and style (on demand), GPU times scaled by `gpu_scale`.
fn demands(gpu_scale: f64) -> Vec<DnnDemand> {
    // (gpu ms, cpu ms one thread, threads, speedup, period ms, deadline ms, value, on demand)
    let table = [
        (0.5, 5.0, 1, 1.0, 16.7, 50.0, 1.0, false),
        (0.5, 5.0, 1, 1.0, 16.7, 50.0, 1.0, false),
        (1.0, 9.0, 1, 1.0, 50.0, 100.0, 1.0, false),
        (2.0, 26.0, 2, 1.8, 100.0, 200.0, 1.0, false),
        (0.6, 3.0, 1, 1.0, 66.0, 150.0, 1.0, false),
        (4.0, 40.0, 4, 3.0, 100.0, 200.0, 2.0, false),
        (3.0, 20.0, 2, 1.8, 33.3, 100.0, 1.5, false),
        (4.0, 46.0, 6, 4.0, 2000.0, 100.0, 10.0, true),
    ];
    table
        .iter()
        .enumerate()
        .map(|(i, &(g, c, t, s, p, d, v, od))| DnnDemand {
            model: ModelId(i),
            gpu_ms: g * gpu_scale,
            fallback_ms: 0.0,
            cpu_ms: c,
            cpu_threads: t,
            cpu_threaded_ms: c / s,
            period_ms: Some(p),
            deadline_ms: Some(d),
            value: v,
            on_demand: od,
            current: Processor::Gpu,
            since_ms: 0.0,
            gpu_capable: true,
            cpu_capable: true,
        })
        .collect()
}

fn machine(budget_ms: f64, slots: usize) -> Machine {
    Machine {
        frame_period_ms: 1000.0 / 60.0,
        gpu_budget_ms: budget_ms,
        chunk_overhead_ms: 0.05,
        cpu_slots: slots,
    }
}

fn benches(cr: &mut Criterion) {
    let cfg = PlacementConfig::default();
    let cases = [
        ("all_fit", demands(1.0), machine(11.0, 14)),
        ("gpu_overloaded", demands(8.0), machine(6.0, 4)),
        ("no_gpu_budget", demands(1.0), machine(0.0, 2)),
    ];
    for (name, d, m) in cases {
        cr.bench_function(&format!("placement/plan/8_dnns/{name}"), |b| {
            b.iter(|| black_box(plan(black_box(&d), black_box(&m), &cfg, black_box(5000.0))))
        });
    }
}

criterion_group! {
    name = placement;
    config = Criterion::default()
        .measurement_time(std::time::Duration::from_secs(3))
        .warm_up_time(std::time::Duration::from_secs(1));
    targets = benches
}
criterion_main!(placement);
