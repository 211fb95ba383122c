//! Issue 34: the recorder writes what the simulator accepts, in the regime that matters. A
//! contended run (a scene at 98 % of the frame: no GPU budget) was exported as a scenario that
//! `heimdall simulate` rejected ("`budget_margin_ms` leaves no frame budget"); now it round-trips
//! through export, JSON and `Scenario::from_json`, and simulates to the same run. And whatever a
//! recorder is fed (scene times past the period, settings out of range, odd profiles), its export
//! validates, reads back and simulates.

use std::path::PathBuf;

use heimdall_coordinator::sim::{
    Decisions, Noise, Replay, RunRecorder, Scenario, SimOptions, simulate_opts,
};
use heimdall_coordinator::{
    CoordinatorConfig, FrameBudget, ModelId, StepCost, UtilityParams, policy_by_name,
};
use proptest::prelude::*;

fn simulate(sc: &Scenario, opts: &SimOptions) -> heimdall_coordinator::sim::SimOutput {
    simulate_opts(
        sc,
        policy_by_name("max_total_utility").unwrap(),
        opts,
        |_| {},
    )
    .unwrap()
}

/// The collapse run per frame (the plugin's order), noise on, recorded; its export goes
/// through JSON text and back, validates (no frame budget: the scene's median is 16.33 ms of a
/// 16.67 ms frame with a 1 ms margin), keeps the slots, threads, speedups and on-demand flags,
/// and replayed without noise gives the recorded run back: every completion within 1e-9 ms.
#[test]
fn a_contended_recording_round_trips_through_export_json_and_simulate() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../assets/scenarios/contention/contended_shopping.json");
    let mut sc = Scenario::from_file(&path).unwrap();
    sc.decisions = Decisions::PerFrame;
    sc.dnn_work_first = true;
    sc.results_at_frame_start = true;
    sc.duration_s = 5.0;
    let opts = SimOptions {
        noise: Noise {
            sigma: 0.1,
            seed: 7,
        },
        record_run: true,
        ..SimOptions::default()
    };
    let original = simulate(&sc, &opts);
    let (scenario, replay) = original.recorded.clone().unwrap();
    let text = serde_json::to_string_pretty(&scenario).unwrap();
    let back = Scenario::from_json(&text).expect("the simulator takes what the recorder writes");
    assert!(
        back.budget().budget_ms() <= back.chunk_overhead_ms,
        "{}",
        back.render_ms
    );
    assert_eq!(back.cpu_workers, 14);
    let style = back.dnns.iter().find(|d| d.name == "multistyle26").unwrap();
    assert_eq!(
        (style.cpu_threads, style.cpu_speedup, style.on_demand),
        (6, 4.0, Some(true))
    );
    let hands = back
        .dnns
        .iter()
        .find(|d| d.name == "hand_landmarks_left")
        .unwrap();
    assert_eq!((hands.cpu_threads, hands.on_demand), (1, Some(false)));
    let replay = Replay::from_json(&replay.to_json()).unwrap();
    replay.check(&back).unwrap();
    let again = simulate(
        &back,
        &SimOptions {
            replay: Some(replay),
            ..SimOptions::default()
        },
    );
    assert_eq!(again.completions.len(), original.completions.len());
    for (a, b) in original.completions.iter().zip(&again.completions) {
        assert_eq!(a.model, b.model);
        assert!(
            (a.admitted_ms - b.admitted_ms).abs() < 1e-9
                && (a.finished_ms - b.finished_ms).abs() < 1e-9,
            "{a:?} {b:?}"
        );
    }
    for (a, b) in original.report.dnns.iter().zip(&again.report.dnns) {
        assert_eq!(
            (a.completed, a.deadline_miss_rate),
            (b.completed, b.deadline_miss_rate)
        );
        assert!(a.deadline_miss_rate <= 0.02, "{a:?}");
    }
}

/// A recorder fed a run whose scene never left a budget (17 ms at 60 Hz) exports a scenario
/// the simulator takes.
#[test]
fn a_scene_past_the_period_exports() {
    let cfg = CoordinatorConfig::new(FrameBudget::new(60.0, 0.0, 1.0, 0.5));
    let mut r = RunRecorder::new(&cfg);
    r.add_model(
        ModelId(0),
        "m",
        &[StepCost::gpu_and_cpu(0.5, 5.0); 4],
        Some(50.0),
        UtilityParams::default(),
    );
    r.set_cpu_parallelism(ModelId(0), 2, 1.8);
    for k in 0..30 {
        let t = k as f64 * 1000.0 / 60.0;
        r.frame(t, Some(17.0));
        r.request(ModelId(0), t, 0.0);
        r.cpu_chunk(ModelId(0), 0..4, 11.1);
        r.finished(ModelId(0));
    }
    let (s, rep) = r.try_export().unwrap();
    assert!(!s.cpu_dispatch_on_completion, "false until set");
    assert_eq!(s.render_ms, 17.0);
    assert_eq!((s.dnns[0].cpu_threads, s.dnns[0].cpu_speedup), (2, 1.8));
    // The replay holds one-thread times: 11.1 ms at 1.8 x.
    let cpu: f64 = rep.models["m"].cpu_step_ms[0].iter().flatten().sum();
    assert!((cpu - 11.1 * 1.8).abs() < 1e-9, "{cpu}");
    let out = simulate(
        &s,
        &SimOptions {
            replay: Some(rep),
            ..SimOptions::default()
        },
    );
    assert!(out.report.dnns[0].completed > 0);
}

/// 60 frames of a 90 Hz run whose scene took 16 ms (the app's loop waits for the GPU: a frame
/// every 16 ms, 0.96 s in all), one DNN asked at each frame.
fn over_full_recording() -> RunRecorder {
    let cfg = CoordinatorConfig::new(FrameBudget::new(90.0, 0.0, 1.0, 0.5));
    let mut r = RunRecorder::new(&cfg);
    r.set_frame_rate(90.0);
    r.add_model(
        ModelId(0),
        "m",
        &[StepCost::gpu_and_cpu(0.5, 2.0); 2],
        Some(100.0),
        UtilityParams::default(),
    );
    for k in 0..60 {
        let t = 500.0 + k as f64 * 16.0;
        r.frame(t, Some(16.0));
        r.request(ModelId(0), t, 0.0);
        r.cpu_chunk(ModelId(0), 0..2, 4.0);
        r.finished(ModelId(0));
    }
    r
}

/// The window of a run whose frames took longer than their period is the time they spanned,
/// not their count in periods: the export keeps every request (60 in 0.96 s; it kept the 42 of
/// the first 0.667 s), and the simulator runs every replayed frame and answers the requests of
/// all of them (55 of 60 here; at most the 42 of the first 0.667 s before).
#[test]
fn a_run_slower_than_its_frame_rate_exports_and_simulates_its_whole_window() {
    let (s, rep) = over_full_recording().try_export().unwrap();
    // 60 frames of 16 ms, not of 11.1.
    assert!((s.duration_s - 0.96).abs() < 1e-9, "{}", s.duration_s);
    let events = s.dnns[0].request.times(s.duration_s * 1000.0);
    assert_eq!(events.len(), 60);
    assert_eq!(rep.frame_start_ms.len(), 60);
    let out = simulate(
        &s,
        &SimOptions {
            replay: Some(rep.clone()),
            ..SimOptions::default()
        },
    );
    assert_eq!(out.report.frames.frames, 60);
    // The last render may end past the window, as with any window.
    assert!(out.report.frames.rendered >= 59, "{:?}", out.report.frames);
    assert!(
        out.report.dnns[0].completed >= 50,
        "{:?}",
        out.report.dnns[0]
    );
    // A recording made before (its duration the frames' count in periods): the simulator still
    // runs to the last replayed frame.
    let mut old = s.clone();
    old.duration_s = 60.0 / 90.0;
    let out = simulate(
        &old,
        &SimOptions {
            replay: Some(rep),
            ..SimOptions::default()
        },
    );
    assert!(out.report.frames.rendered >= 59, "{:?}", out.report.frames);
}

/// A replay whose last frame starts far past the scenario's duration (a hostile or broken file:
/// 1e12 ms) is refused with a typed error naming `frame_start_ms`, at once: the window it would
/// make holds far more than the scenario's bounds on frames and periodic requests (without the
/// check the simulator would try to queue 1e11 requests).
#[test]
fn a_replay_far_past_its_duration_is_refused() {
    let (s, mut rep) = over_full_recording().try_export().unwrap();
    rep.frame_start_ms.push(1e12);
    let err = rep.check(&s).unwrap_err().to_string();
    assert!(err.contains("frame_start_ms"), "{err}");
    let out = simulate_opts(
        &s,
        policy_by_name("max_total_utility").unwrap(),
        &SimOptions {
            replay: Some(rep),
            ..SimOptions::default()
        },
        |_| {},
    );
    assert!(out.is_err());
}

/// A run on time exports its frames' count in periods, as before.
#[test]
fn a_run_on_time_keeps_its_window() {
    let cfg = CoordinatorConfig::new(FrameBudget::new(60.0, 3.0, 1.0, 0.5));
    let mut r = RunRecorder::new(&cfg);
    r.set_frame_rate(60.0);
    for k in 0..30 {
        // A little jitter, less than half a period.
        r.frame(
            k as f64 * 1000.0 / 60.0 + if k == 29 { 5.0 } else { 0.0 },
            Some(3.0),
        );
    }
    let (s, _) = r.export();
    assert!((s.duration_s - 0.5).abs() < 1e-9, "{}", s.duration_s);
}

/// The recorder exports how the run handed out CPU work (`set_cpu_dispatch_on_completion`),
/// through a reset and through JSON.
#[test]
fn the_cpu_dispatch_is_exported() {
    let cfg = CoordinatorConfig::new(FrameBudget::new(60.0, 0.0, 1.0, 0.5));
    let mut r = RunRecorder::new(&cfg);
    r.add_model(
        ModelId(0),
        "m",
        &[StepCost::gpu_and_cpu(0.5, 5.0); 2],
        None,
        UtilityParams::default(),
    );
    let run = |r: &mut RunRecorder| {
        r.reset();
        for k in 0..10 {
            let t = k as f64 * 1000.0 / 60.0;
            r.frame(t, Some(17.0));
            r.request(ModelId(0), t, 0.0);
            r.cpu_chunk(ModelId(0), 0..2, 10.0);
            r.finished(ModelId(0));
        }
        let (s, _) = r.try_export().unwrap();
        Scenario::from_json(&serde_json::to_string(&s).unwrap()).unwrap()
    };
    r.set_cpu_dispatch_on_completion(true);
    assert!(run(&mut r).cpu_dispatch_on_completion);
    r.set_cpu_dispatch_on_completion(false);
    assert!(!run(&mut r).cpu_dispatch_on_completion);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the recorder is fed, its export validates, goes through JSON and back, and
    /// simulates.
    #[test]
    fn every_export_validates_and_simulates(
        hz in 5.0f64..240.0,
        margin in -2.0f64..5.0,
        workers in 0usize..40,
        overhead in prop_oneof![Just(f64::NAN), -1.0f64..1.0],
        scenes in prop::collection::vec(prop_oneof![Just(f64::NAN), -5.0f64..100.0], 1..40),
        steps in prop::collection::vec((-1.0f64..20.0, -1.0f64..50.0, any::<bool>()), 1..12),
        deadline in prop_oneof![Just(None), (-10.0f64..300.0).prop_map(Some)],
        gamma in -1.0f64..3.0,
        threads in 0usize..2000,
        speedup in -1.0f64..8.0,
        chunk_ms in -1.0f64..40.0,
    ) {
        let mut budget = FrameBudget::new(hz, 0.0, margin, 0.5);
        budget.chunk_overhead_ms = overhead;
        let mut cfg = CoordinatorConfig::new(budget);
        cfg.cpu_workers = workers;
        let mut r = RunRecorder::new(&cfg);
        let steps: Vec<StepCost> = steps
            .iter()
            .map(|&(g, c, gpu)| if gpu { StepCost::gpu_and_cpu(g, c) } else { StepCost::cpu_only(c) })
            .collect();
        let n = steps.len();
        let utility = UtilityParams { l0: 1.0, beta: 1.0, gamma };
        r.add_model(ModelId(0), "a", &steps, deadline, utility);
        r.add_model(ModelId(1), "a", &steps, None, UtilityParams::default());
        r.set_cpu_parallelism(ModelId(0), threads, speedup);
        r.set_on_demand(ModelId(1), true);
        let period = 1000.0 / hz;
        for (k, &scene) in scenes.iter().enumerate() {
            let t = k as f64 * period;
            r.frame(t, Some(scene));
            r.request(ModelId(k % 2), t + 0.3, 0.1);
            r.gpu_chunk(ModelId(0), 0..n, chunk_ms);
            r.cpu_chunk(ModelId(1), 0..n, chunk_ms);
            r.finished(ModelId(k % 2));
        }
        let (s, rep) = r.try_export().expect("the export validates");
        let s2 = Scenario::from_json(&serde_json::to_string(&s).unwrap()).unwrap();
        let rep2 = Replay::from_json(&rep.to_json()).unwrap();
        rep2.check(&s2).unwrap();
        let out = simulate_opts(
            &s2,
            policy_by_name("max_total_utility").unwrap(),
            &SimOptions { replay: Some(rep2), ..SimOptions::default() },
            |_| {},
        );
        prop_assert!(out.is_ok());
    }
}
