//! Property tests of the frame-budget partitioner, against independent reference computations.

use heimdall_coordinator::analyzer::{FrameBudget, ModelProfile, StepCost, partition, units};
use heimdall_coordinator::{Processor, ProcessorSet};
use proptest::prelude::*;

const EPS: f64 = 1e-9;

fn budget(b: f64, relax: f64, oh: f64) -> FrameBudget {
    // period - render - margin = b
    FrameBudget {
        frame_period_ms: b + 3.0,
        render_ms: 2.0,
        margin_ms: 1.0,
        relaxation_ms: relax,
        chunk_overhead_ms: oh,
    }
}

/// Runs of consecutive GPU-capable steps, computed directly from the step list.
fn gpu_runs(steps: &[StepCost]) -> Vec<std::ops::Range<usize>> {
    let mut runs = Vec::new();
    let mut i = 0;
    while i < steps.len() {
        let set = steps[i].processors;
        let mut j = i;
        while j < steps.len() && steps[j].processors == set {
            j += 1;
        }
        if set.contains(Processor::Gpu) {
            runs.push(i..j);
        }
        i = j;
    }
    runs
}

/// Reference: the fewest contiguous chunks of `t` such that every chunk but the last costs
/// `<= b`, the last `<= limit`, and a step that alone exceeds `b` (with overhead) stands alone.
/// Exhaustive dynamic program over cut points, O(n^2).
fn min_chunks(t: &[f64], b: f64, limit: f64, oh: f64) -> usize {
    let n = t.len();
    let mut best = vec![usize::MAX; n + 1];
    best[0] = 0;
    for i in 0..n {
        if best[i] == usize::MAX {
            continue;
        }
        let mut sum = 0.0;
        let mut has_oversized = false;
        for j in i + 1..=n {
            sum += t[j - 1];
            has_oversized |= t[j - 1] + oh > b;
            let ok = if j == i + 1 && has_oversized {
                true // a step that alone exceeds B stands alone
            } else {
                !has_oversized && (sum + oh <= b + EPS || (j == n && sum + oh <= limit + EPS))
            };
            if ok {
                best[j] = best[j].min(best[i] + 1);
            }
        }
    }
    best[n]
}

fn arb_steps() -> impl Strategy<Value = Vec<StepCost>> {
    prop::collection::vec(
        (0.0f64..12.0, 0.0f64..40.0, prop::bool::weighted(0.1)),
        1..80,
    )
    .prop_map(|v| {
        v.into_iter()
            .map(|(g, c, cpu_only)| {
                if cpu_only {
                    StepCost::cpu_only(c)
                } else {
                    StepCost::gpu_and_cpu(g, c)
                }
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn chunks_fit_the_budget_unless_one_oversized_step(
        steps in arb_steps(), b in 3.0f64..30.0, relax in 0.0f64..6.0, oh in 0.0f64..0.5
    ) {
        let fb = budget(b, relax, oh);
        let p = partition(&steps, &fb);
        for c in p.chunks.iter().filter(|c| c.processor == Processor::Gpu) {
            let cost: f64 = steps[c.ops.clone()].iter().map(|s| s.gpu_ms).sum::<f64>() + oh;
            prop_assert!((cost - c.est_ms).abs() < 1e-6, "estimate {} vs cost {}", c.est_ms, cost);
            if cost > b + relax + EPS {
                prop_assert_eq!(c.ops.len(), 1, "chunk {:?} costs {} > B + relaxation", c.ops, cost);
                prop_assert!(c.oversized);
                prop_assert!(steps[c.ops.start].gpu_ms + oh > b);
                prop_assert!(p.oversized_steps.contains(&c.ops.start));
            }
        }
    }

    #[test]
    fn chunks_cover_ops_and_never_cross_a_processor_change(
        steps in arb_steps(), b in 3.0f64..30.0, relax in 0.0f64..6.0
    ) {
        let p = partition(&steps, &budget(b, relax, 0.05));
        let mut next = 0;
        for c in &p.chunks {
            prop_assert_eq!(c.ops.start, next);
            prop_assert!(!c.ops.is_empty());
            next = c.ops.end;
            let set = steps[c.ops.start].processors;
            prop_assert!(steps[c.ops.clone()].iter().all(|s| s.processors == set),
                "chunk {:?} crosses a processor change", c.ops);
            let expect = if set.contains(Processor::Gpu) { Processor::Gpu } else { Processor::Cpu };
            prop_assert_eq!(c.processor, expect);
        }
        prop_assert_eq!(next, steps.len());
        // Units are maximal: neighbours differ.
        let u = units(&steps);
        for w in u.windows(2) {
            prop_assert!(w[0].processors != w[1].processors);
        }
    }

    #[test]
    fn chunk_count_is_minimal(
        steps in arb_steps(), b in 3.0f64..30.0, relax in 0.0f64..6.0, oh in 0.0f64..0.5
    ) {
        let fb = budget(b, relax, oh);
        let p = partition(&steps, &fb);
        for run in gpu_runs(&steps) {
            let got = p.chunks.iter().filter(|c| c.ops.start >= run.start && c.ops.end <= run.end).count();
            let t: Vec<f64> = steps[run.clone()].iter().map(|s| s.gpu_ms).collect();
            let want = min_chunks(&t, b, b + relax, oh);
            prop_assert_eq!(got, want, "run {:?}", run);
        }
        // CPU-only units are one chunk each.
        let cpu_units = units(&steps).iter().filter(|u| u.processors == ProcessorSet::CPU_ONLY).count();
        prop_assert_eq!(p.chunks.iter().filter(|c| c.processor == Processor::Cpu).count(), cpu_units);
    }
}

#[test]
fn hand_computed_partition() {
    // B = 10, relaxation 2, no overhead. GPU run 0..5 = [4, 4, 4, 11, 1], CPU op 5, run 6..8 = [6, 5].
    let mut steps: Vec<StepCost> = [4.0, 4.0, 4.0, 11.0, 1.0]
        .iter()
        .map(|&g| StepCost::gpu_and_cpu(g, 10.0))
        .collect();
    steps.push(StepCost::cpu_only(3.0));
    steps.push(StepCost::gpu_and_cpu(6.0, 1.0));
    steps.push(StepCost::gpu_and_cpu(5.0, 1.0));
    let p = partition(&steps, &budget(10.0, 2.0, 0.0));
    let ranges: Vec<_> = p
        .chunks
        .iter()
        .map(|c| (c.ops.clone(), c.processor))
        .collect();
    assert_eq!(
        ranges,
        vec![
            (0..2, Processor::Gpu), // 8 (adding 4 would make 12 > 10; rest 24 > 12)
            (2..3, Processor::Gpu), // 4 (adding 11 exceeds)
            (3..4, Processor::Gpu), // 11 alone: oversized
            (4..5, Processor::Gpu), // 1
            (5..6, Processor::Cpu), // fallback op
            (6..8, Processor::Gpu), // 11 <= 10 + 2: relaxation keeps the tail together
        ]
    );
    assert_eq!(p.oversized_steps, vec![3]);
}

#[test]
fn profile_ema_and_json_round_trip() {
    let mut prof = ModelProfile::new(
        "m",
        vec![
            StepCost::gpu_and_cpu(2.0, 8.0),
            StepCost::gpu_and_cpu(4.0, 8.0),
        ],
    );
    // One measurement of step 0: 0.1 * 3 + 0.9 * 2 = 2.1.
    prof.observe_step(0, Processor::Gpu, 3.0);
    assert!((prof.steps[0].gpu_ms - 2.1).abs() < 1e-12);
    // A range measured 1.5x its estimate: each step moves 10 % of the way to 1.5x.
    prof.observe_range(0..2, Processor::Cpu, 24.0);
    assert!((prof.steps[0].cpu_ms - (0.1 * 12.0 + 0.9 * 8.0)).abs() < 1e-12);
    assert!((prof.steps[1].cpu_ms - 8.4).abs() < 1e-12);
    let back = ModelProfile::from_json(&prof.to_json()).unwrap();
    assert_eq!(back, prof);
    let bad = prof
        .to_json()
        .replace("\"ema_alpha\": 0.1", "\"ema_alpha\": 1.5");
    let err = ModelProfile::from_json(&bad).unwrap_err().to_string();
    assert!(err.contains("ema_alpha"), "{err}");
}
