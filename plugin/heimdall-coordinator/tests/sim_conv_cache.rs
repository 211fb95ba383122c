//! The simulator and the convolution cache (issue #34, "`heimdall simulate` predicts the app's
//! per-DNN latencies"): a DNN whose GPU model runs with the cache has its coordinator told so
//! (`Coordinator::set_conv_cache`) and its GPU runs report hit rates. The cache is the GPU's: it
//! makes the coordinator's predicted GPU costs follow the reported hit rates, and leaves the CPU
//! costs and the CPU's measurements alone. (Until 2026-12-02 it scaled the CPU costs too and held
//! CPU measurements for a hit report that CPU runs never send, so the shopping app's palm
//! detection, started from a compile-time CPU profile 30 % too fast, ran every inference on the
//! CPU; the first test checks that it now moves to the GPU as it does without the cache.)

use heimdall_coordinator::policy_by_name;
use heimdall_coordinator::sim::{Scenario, SimOptions, SimOutput, simulate_opts};

/// 60 Hz, a 9 ms render (a GPU budget of 6.67 ms), four CPU slots; one on-demand DNN asked at
/// every frame, 40 steps of 0.02 ms on the GPU (0.8 ms) and 0.275 ms on the CPU (11 ms): its
/// GPU latency is expected at about 9.7 ms (its work over the budget's share of the frame, plus
/// half a frame), so on time the CPU (11 ms) is the slower processor. `CACHE` is its
/// `conv_cache` entry (empty: none).
fn palm(cache: &str) -> Scenario {
    let events: Vec<String> = (0..240)
        .map(|i| format!("{:.3}", 2.0 + f64::from(i) * 1000.0 / 60.0))
        .collect();
    let json = format!(
        r#"{{"frame_rate": 60, "render_ms": 9, "duration_s": 4, "cpu_workers": 4,
            "decisions": "per_frame",
            "dnns": [{{"name": "palm", "gpu_op_ms": {gpu:?}, "cpu_op_ms": {cpu:?},
                       "request": {{"events_ms": [{events}]}}, "deadline_ms": 100,
                       "on_demand": true {cache}}}]}}"#,
        gpu = vec![0.02; 40],
        cpu = vec![0.275; 40],
        events = events.join(", "),
    );
    Scenario::from_json(&json).unwrap()
}

/// The first 36 steps cached, a hit saving 60 % of them, each GPU run reporting a hit rate of
/// 0.5.
const CACHE: &str = r#", "conv_cache": {"cached_steps": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
    12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34,
    35], "saving": 0.6, "hit_rate": 0.5}"#;

/// The coordinator starts from a profile 30 % too fast (its compile-time CPU profile, 7.7 ms,
/// as the app's palm detection had 7.3 ms against 8-11 ms measured).
fn misprofiled() -> SimOptions {
    SimOptions {
        misprofile: 0.7,
        ..SimOptions::default()
    }
}

fn run(sc: &Scenario, opts: SimOptions) -> SimOutput {
    simulate_opts(
        sc,
        policy_by_name("max_total_utility").unwrap(),
        &opts,
        |_| {},
    )
    .unwrap()
}

/// Inferences that ran on the CPU, of all.
fn on_cpu(out: &SimOutput) -> (usize, usize) {
    let cpu = out.completions.iter().filter(|c| c.offloaded).count();
    (cpu, out.completions.len())
}

/// Without the cache the measured CPU time (11 ms) soon passes the GPU's expected latency and
/// the jobs go to the GPU. With it the same: the CPU's measurements count at once and its cost
/// is never scaled by the GPU's hit rate (checked to fail with the old expectation, which kept
/// 100 % of the inferences on the CPU).
#[test]
fn a_conv_cache_does_not_keep_an_on_demand_dnn_on_the_cpu() {
    let (cpu_cached, all) = on_cpu(&run(&palm(CACHE), misprofiled()));
    assert!(all > 200, "{all}");
    assert!(
        cpu_cached * 100 <= 20 * all,
        "with the cache: {cpu_cached} of {all} on the CPU"
    );
    let (cpu_plain, all) = on_cpu(&run(&palm(""), misprofiled()));
    assert!(all > 200, "{all}");
    assert!(
        cpu_plain * 100 <= 20 * all,
        "without it: {cpu_plain} of {all} on the CPU"
    );
    // The cache makes the GPU cheaper, never the CPU: no more CPU runs with it.
    assert!(cpu_cached <= cpu_plain, "{cpu_cached} > {cpu_plain}");
}

/// A run of a DNN with a cache, recorded, exports the cache (with the mean reported hit rate)
/// and each inference's reported hit rate (none for the CPU ones), and the export replayed
/// reproduces the run.
#[test]
fn the_conv_cache_and_its_hit_rates_are_recorded_and_replayed() {
    let original = run(
        &palm(CACHE),
        SimOptions {
            record_run: true,
            ..misprofiled()
        },
    );
    let (scenario, replay) = original.recorded.clone().expect("recorded");
    let cache = scenario.dnns[0].conv_cache.clone().expect("the cache");
    assert_eq!(cache.cached_steps, (0..36).collect::<Vec<_>>());
    assert_eq!((cache.saving, cache.hit_rate), (0.6, Some(0.5)));
    let hits = &replay.models["palm"].cache_hit;
    let gpu_runs = original.completions.iter().filter(|c| !c.offloaded).count();
    assert!(gpu_runs > 0);
    assert_eq!(hits.iter().flatten().count(), gpu_runs, "{hits:?}");
    assert!(hits.iter().flatten().all(|&h| h == 0.5));
    // Through JSON, as `heimdall simulate` reads the files.
    let scenario = Scenario::from_json(&serde_json::to_string(&scenario).unwrap()).unwrap();
    let replay = heimdall_coordinator::sim::Replay::from_json(&replay.to_json()).unwrap();
    let replayed = run(
        &scenario,
        SimOptions {
            replay: Some(replay),
            misprofile: 1.0,
            ..SimOptions::default()
        },
    );
    let ends = |o: &SimOutput| -> Vec<(bool, f64)> {
        o.completions
            .iter()
            .map(|c| (c.offloaded, c.finished_ms))
            .collect()
    };
    let (a, b) = (ends(&original), ends(&replayed));
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert!(x.0 == y.0 && (x.1 - y.1).abs() < 1e-6, "{x:?} != {y:?}");
    }
}

/// The replay's hit rate of an inference comes before the scenario's: a replay reporting 0 for
/// every run has every GPU run report 0 (the scenario says 0.5).
#[test]
fn the_replayed_hit_rates_come_first() {
    let mut replay = heimdall_coordinator::sim::Replay::default();
    replay.models.insert(
        "palm".into(),
        heimdall_coordinator::sim::ModelTrace {
            cache_hit: vec![Some(0.0)],
            ..Default::default()
        },
    );
    let with_zero = run(
        &palm(CACHE),
        SimOptions {
            replay: Some(replay),
            record_run: true,
            ..misprofiled()
        },
    );
    let gpu_runs = with_zero
        .completions
        .iter()
        .filter(|c| !c.offloaded)
        .count();
    assert!(gpu_runs > 100, "{gpu_runs}");
    let (_, recorded) = with_zero.recorded.expect("recorded");
    let hits = &recorded.models["palm"].cache_hit;
    assert_eq!(hits.iter().flatten().count(), gpu_runs, "{hits:?}");
    assert!(hits.iter().flatten().all(|&h| h == 0.0), "{hits:?}");
}

/// A scenario without `conv_cache` loads as before (no cache); bad values name the field.
#[test]
fn conv_cache_values_are_checked() {
    assert!(palm("").dnns[0].conv_cache.is_none());
    let defaults = palm(r#", "conv_cache": {"cached_steps": [0, 1]}"#);
    let c = defaults.dnns[0].conv_cache.clone().unwrap();
    assert_eq!((c.saving, c.rise_alpha, c.hit_rate), (0.9, 0.3, None));
    for (bad, field) in [
        (
            r#", "conv_cache": {"cached_steps": [40]}"#,
            "dnns[0].conv_cache",
        ),
        (
            r#", "conv_cache": {"cached_steps": [0], "saving": 1.5}"#,
            "dnns[0].conv_cache",
        ),
        (
            r#", "conv_cache": {"cached_steps": [0], "hit_rate": -0.1}"#,
            "dnns[0].conv_cache.hit_rate",
        ),
    ] {
        let json = serde_json::to_string(&palm("")).unwrap();
        let json = json.replace(r#""on_demand":true"#, &format!(r#""on_demand":true{bad}"#));
        let err = Scenario::from_json(&json).unwrap_err().to_string();
        assert!(err.contains(&format!("`{field}`")), "{err}");
    }
}
