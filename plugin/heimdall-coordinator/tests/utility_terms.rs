//! Priority `L0` and content variation `C` change which DNN runs next in both utility policies,
//! each term alone (everything else equal): by hand on one decision, and in simulations of
//! scenario files that carry the `"priority"` and `"content_variation"` fields.

use heimdall_coordinator::policy::{
    JobView, MaxMinUtility, MaxTotalUtility, ModelCosts, Policy, PolicyContext,
};
use heimdall_coordinator::sim::{Scenario, SimOptions, simulate_opts, simulate_with};
use heimdall_coordinator::{ModelId, UtilityParams};

/// The paper's MaxTotalUtility score taken literally: `U(t) - U(t + d)`, in which `L0` and
/// `alpha * C` cancel. Kept here to show what the coordinator's score fixes.
struct LiteralMaxTotal;

impl Policy for LiteralMaxTotal {
    fn name(&self) -> String {
        "literal_max_total".into()
    }
    fn score(&self, ctx: &PolicyContext, job: &JobView<'_>) -> f64 {
        job.utility_at(ctx.now_ms, ctx.alpha)
            - job.utility_at(ctx.now_ms + ctx.interval_ms, ctx.alpha)
    }
}

const CTX: PolicyContext = PolicyContext {
    now_ms: 200.0,
    interval_ms: 1000.0 / 30.0,
    alpha: 0.01,
    gpu_free_ms: 200.0,
    cpu_free_ms: 200.0,
};

fn job(m: usize, l0: f64, beta: f64, gamma: f64, c: f64, costs: &ModelCosts) -> JobView<'_> {
    JobView {
        model: ModelId(m),
        seq: m as u64,
        t_start_ms: 0.0,
        utility: UtilityParams { l0, beta, gamma },
        content_variation: c,
        deadline_ms: None,
        next_op: 0,
        remaining_ms: 120.0,
        remaining_gpu_ms: 100.0,
        costs,
    }
}

/// Which of `a` and `b` the policy runs.
fn pick(p: &dyn Policy, a: &JobView<'_>, b: &JobView<'_>) -> &'static str {
    if p.score(&CTX, a) > p.score(&CTX, b) {
        "a"
    } else {
        "b"
    }
}

/// Both jobs are 0.2 s old with 100 ms of GPU work left; d = 1/30 s. By hand:
/// - `a` (L0 5, beta 1, gamma 1): U = 4.8 now, 4.76667 after d: density 4.8 / 100 = 0.048 per
///   ms, delay loss rate 0.03333 / 33.33 = 0.001 per ms: 0.049.
/// - `b` (L0 5, beta 20, gamma 2): U = 5 - 20 * 0.04 = 4.2, after d 5 - 20 * 0.054444 = 3.91111:
///   0.042 + 0.28889 / 33.33 = 0.050667.
///
/// So MaxTotalUtility runs `b` (it decays faster). Raising `a`'s L0 to 6, or giving it
/// `C = 100` (`alpha * C = 1`), makes its U 5.8: 0.058 + 0.001 = 0.059 > 0.050667, and `a` runs.
/// The literal score (loss only: 0.0333 against 0.2889) runs `b` either way.
#[test]
fn max_total_utility_l0_alone_and_c_alone_change_the_decision() {
    let costs = ModelCosts::default();
    let p = MaxTotalUtility;
    let a = job(0, 5.0, 1.0, 1.0, 0.0, &costs);
    let b = job(1, 5.0, 20.0, 2.0, 0.0, &costs);
    assert!(
        (p.score(&CTX, &a) - 0.049).abs() < 1e-6,
        "{}",
        p.score(&CTX, &a)
    );
    assert!(
        (p.score(&CTX, &b) - 0.0506667).abs() < 1e-6,
        "{}",
        p.score(&CTX, &b)
    );
    assert_eq!(pick(&p, &a, &b), "b");
    let a_l0 = job(0, 6.0, 1.0, 1.0, 0.0, &costs);
    assert!((p.score(&CTX, &a_l0) - 0.059).abs() < 1e-6);
    assert_eq!(pick(&p, &a_l0, &b), "a", "L0 alone");
    let a_c = job(0, 5.0, 1.0, 1.0, 100.0, &costs);
    assert!((p.score(&CTX, &a_c) - 0.059).abs() < 1e-6);
    assert_eq!(pick(&p, &a_c, &b), "a", "C alone");
    // The paper's formula taken literally: neither term acts.
    assert_eq!(pick(&LiteralMaxTotal, &a, &b), "b");
    assert_eq!(pick(&LiteralMaxTotal, &a_l0, &b), "b");
    assert_eq!(pick(&LiteralMaxTotal, &a_c, &b), "b");
}

/// Same jobs, MaxMinUtility (eq. 5: the lowest utility runs). `a` has U = 4.8, `b` 4.2: `b`
/// runs. Raising `b`'s L0 to 6, or giving it C = 100, makes its U 5.2 > 4.8: `a` runs.
#[test]
fn max_min_utility_l0_alone_and_c_alone_change_the_decision() {
    let costs = ModelCosts::default();
    let p = MaxMinUtility;
    let a = job(0, 5.0, 1.0, 1.0, 0.0, &costs);
    let b = job(1, 5.0, 20.0, 2.0, 0.0, &costs);
    assert!((p.score(&CTX, &b) + 4.2).abs() < 1e-9);
    assert_eq!(pick(&p, &a, &b), "b");
    let b_l0 = job(1, 6.0, 20.0, 2.0, 0.0, &costs);
    assert!((p.score(&CTX, &b_l0) + 5.2).abs() < 1e-9);
    assert_eq!(pick(&p, &a, &b_l0), "a", "L0 alone");
    let b_c = job(1, 5.0, 20.0, 2.0, 100.0, &costs);
    assert_eq!(pick(&p, &a, &b_c), "a", "C alone");
}

/// Two identical DNNs (100 steps of 5 ms: 500 ms of GPU work), always requested, that overload
/// the GPU; L0 5, beta 1, gamma 2; no deadline; offload off. `extra` is spliced into `a`'s JSON.
fn twins(extra: &str) -> Scenario {
    let dnn = |name: &str, extra: &str| {
        format!(
            r#"{{"name": "{name}", "gpu_op_ms": {g:?}, "cpu_op_ms": {c:?},
                "request": {{"period_ms": 100}},
                "utility": {{"l0": 5, "beta": 1, "gamma": 2}} {extra}}}"#,
            g = vec![5.0; 100],
            c = vec![15.0; 100],
        )
    };
    let text = format!(
        r#"{{"frame_rate": 30, "render_ms": 3, "duration_s": 30, "cpu_workers": 2,
            "dnns": [{}, {}]}}"#,
        dnn("a", extra),
        dnn("b", "")
    );
    Scenario::from_json(&text).unwrap()
}

fn completed(sc: &Scenario, policy: Box<dyn Policy>) -> (u64, u64) {
    let r = simulate_opts(sc, policy, &SimOptions::default(), |c| {
        c.placement.enabled = false
    })
    .unwrap()
    .report;
    (r.dnn("a").unwrap().completed, r.dnn("b").unwrap().completed)
}

/// Scenario files: `"priority": 10` (L0 10 instead of 5) or `"content_variation": 500`
/// (`alpha * C = 5`, the same utility gain) on `a` alone change the outcome. Identical twins
/// share the GPU (within one inference); with either field, MaxTotalUtility gives `a` at least
/// twice `b`'s inferences, and MaxMinUtility, which serves the lower utility, gives `a` fewer
/// than `b`. The literal paper score shares the GPU as if the field were not there.
#[test]
fn priority_and_content_variation_fields_change_the_outcome() {
    let (a0, b0) = completed(&twins(""), Box::new(MaxTotalUtility));
    eprintln!("max_total twins: a {a0} b {b0}");
    assert!(a0.abs_diff(b0) <= 1, "twins a {a0} b {b0}");
    for extra in [r#", "priority": 10"#, r#", "content_variation": 500"#] {
        let sc = twins(extra);
        assert!(sc.dnns[0].utility_params().l0 + 0.01 * sc.dnns[0].content_variation_of(0) > 9.99);
        let (a, b) = completed(&sc, Box::new(MaxTotalUtility));
        eprintln!("max_total {extra}: a {a} b {b}");
        assert!(a >= 2 * b, "{extra}: max_total a {a} b {b}");
        let (a, b) = completed(&sc, Box::new(MaxMinUtility));
        eprintln!("max_min {extra}: a {a} b {b}");
        assert!(a < b, "{extra}: max_min a {a} b {b}");
        let (a, b) = completed(&sc, Box::new(LiteralMaxTotal));
        eprintln!("literal {extra}: a {a} b {b}");
        assert!(a.abs_diff(b) <= 1, "{extra}: literal a {a} b {b}");
    }
    // By name too (the CLI's path).
    let r = simulate_with(
        &twins(r#", "priority": 10"#),
        "max_total_utility",
        false,
        |c| c.placement.enabled = false,
    )
    .unwrap()
    .report;
    assert!(r.dnn("a").unwrap().completed > r.dnn("b").unwrap().completed);
}
