//! Per-frame decisions (how the Bevy plugin schedules) and `RunRecorder`: a run turned into a
//! scenario and a replay that the simulator runs again (issue #15 item 6).

use std::path::{Path, PathBuf};

use heimdall_coordinator::sim::{
    Decisions, ModelTrace, Noise, Replay, Report, RunRecorder, Scenario, SimOptions, SimOutput,
    simulate_opts,
};
use heimdall_coordinator::{
    Completion, CoordinatorConfig, FrameBudget, ModelId, PlacementRule, StepCost, UtilityParams,
    policy_by_name,
};

fn run(sc: &Scenario, policy: &str, opts: &SimOptions) -> SimOutput {
    simulate_opts(sc, policy_by_name(policy).unwrap(), opts, |_| {}).unwrap()
}

fn exact(sc: &Scenario) -> SimOutput {
    run(sc, "max_total_utility", &SimOptions::default())
}

/// Jitter 0.2 with `seed`, the run recorded ([`SimOptions::record_run`]).
fn recording(seed: u64) -> SimOptions {
    SimOptions {
        noise: Noise { sigma: 0.2, seed },
        record_run: true,
        ..SimOptions::default()
    }
}

/// The times of `replay`, no noise.
fn replaying(replay: Replay) -> SimOptions {
    SimOptions {
        replay: Some(replay),
        ..SimOptions::default()
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// (capture, admitted, finished) of each completion.
fn times(c: &[Completion]) -> Vec<(f64, f64, f64)> {
    c.iter()
        .map(|c| (c.request.capture_ms, c.admitted_ms, c.finished_ms))
        .collect()
}

fn assert_times(got: &[Completion], want: &[(f64, f64, f64)]) {
    let got = times(got);
    assert_eq!(got.len(), want.len(), "{got:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            close(g.0, w.0) && close(g.1, w.1) && close(g.2, w.2),
            "{got:?} != {want:?}"
        );
    }
}

const P: f64 = 1000.0 / 60.0;

/// 60 Hz, a 4 ms render, one DNN of three GPU steps (1 + 2 + 3 ms, one chunk: the budget is
/// 16.67 - 4 - 1 = 11.67 ms), one request at 5 ms.
const ONE_REQUEST: &str = r#"{"frame_rate": 60, "render_ms": 4, "duration_s": 0.5,
    "cpu_workers": 1, "decisions": "per_frame",
    "dnns": [{"name": "m", "gpu_op_ms": [1, 2, 3], "cpu_op_ms": [5, 5, 5],
              "request": {"events_ms": [5]}}]}"#;

/// Per frame, by hand: the request (5 ms) waits for the next frame start, 16.67 ms, where it is
/// admitted; that frame's render runs 16.67..20.67 and the chunk after it, 20.67..26.67; latency
/// 26.67 - 16.67 = 10 ms, 21.67 ms after capture. Per event the same file admits it at 5 ms and
/// runs it at once after the first frame's render (0..4): 5..11, latency 6 ms.
#[test]
fn per_frame_admits_at_the_next_frame_start_and_queues_after_its_render() {
    let sc = Scenario::from_json(ONE_REQUEST).unwrap();
    assert_eq!(sc.decisions, Decisions::PerFrame);
    let out = exact(&sc);
    assert_times(&out.completions, &[(5.0, P, P + 4.0 + 6.0)]);
    assert!(close(out.completions[0].latency_ms(), 10.0));
    assert!(close(out.report.dnns[0].gpu_busy_ms, 6.0));
    assert_eq!(out.report.frames.on_time_rate, 1.0);

    let per_event = Scenario {
        decisions: Decisions::PerEvent,
        ..sc.clone()
    };
    let out = exact(&per_event);
    assert_times(&out.completions, &[(5.0, 5.0, 11.0)]);
    // Without the field the file means per event.
    let default =
        Scenario::from_json(&ONE_REQUEST.replace(r#""decisions": "per_frame","#, "")).unwrap();
    assert_eq!(default, per_event);
}

/// Per frame, a DNN of two 10 ms GPU steps (one chunk each: 20 ms exceed the 16.67 ms limit)
/// and requests at 2, 5 and 20 ms. Frame 0: the requests at 2 and 5 ms are held, the newer
/// replacing the older. Frame 1 (16.67): the 5 ms one is admitted; render to 20.67, step 0
/// 20.67..30.67. The request at 20 ms is held: at frame 2 (33.33) the DNN is still busy (step 1
/// runs 37.33..47.33 after that frame's render), so it waits for frame 3 (50), where it is
/// admitted: render 50..54, step 0 54..64, frame 4 (66.67): step 1 70.67..80.67.
/// Per event the request at 2 ms is admitted at once, the one at 20 ms replaces the one at 5 ms
/// in the coordinator's pending slot and is admitted the instant the first inference ends,
/// mid-frame.
#[test]
fn per_frame_holds_the_latest_request_until_its_dnn_is_idle_at_a_frame_start() {
    let sc = Scenario::from_json(
        r#"{"frame_rate": 60, "render_ms": 4, "duration_s": 0.5, "cpu_workers": 1,
            "decisions": "per_frame",
            "dnns": [{"name": "m", "gpu_op_ms": [10, 10], "cpu_op_ms": [50, 50],
                      "request": {"events_ms": [2, 5, 20]}}]}"#,
    )
    .unwrap();
    let out = exact(&sc);
    assert_times(
        &out.completions,
        &[
            (5.0, P, 2.0 * P + 4.0 + 10.0),
            (20.0, 3.0 * P, 4.0 * P + 4.0 + 10.0),
        ],
    );
    let per_event = Scenario {
        decisions: Decisions::PerEvent,
        ..sc
    };
    let out = exact(&per_event);
    let c = times(&out.completions);
    assert_eq!(c.len(), 2, "{c:?}");
    assert_eq!((c[0].0, c[0].1), (2.0, 2.0));
    assert_eq!((c[1].0, c[1].1), (20.0, c[0].2));
    assert!((c[1].1 / P).fract() > 1e-6, "admitted mid-frame: {c:?}");
}

/// Per frame, a CPU fallback step costs two frame starts: the GPU step before it must have
/// finished when a frame starts for the CPU step to be handed out, and the CPU step when the
/// next one starts for the GPU step after it. Steps: GPU 1 ms, CPU-only 0.5 ms, GPU 1 ms;
/// request at 0. Frame 0: render 0..4, step 0 4..5; frame 1 (16.67): step 1 on a worker
/// 16.67..17.17; frame 2 (33.33): render to 37.33, step 2 37.33..38.33. Per event the
/// completions chain at once: 4..5, 5..5.5, 5.5..6.5.
#[test]
fn per_frame_a_cpu_fallback_step_waits_for_two_frame_starts() {
    let text = ONE_REQUEST
        .replace("[1, 2, 3]", "[1, 0, 1]")
        .replace("[5, 5, 5]", "[5, 0.5, 5], \"cpu_only_ops\": [1]")
        .replace("[5]}", "[0]}");
    let sc = Scenario::from_json(&text).unwrap();
    assert_times(&exact(&sc).completions, &[(0.0, 0.0, 2.0 * P + 5.0)]);
    let per_event = Scenario {
        decisions: Decisions::PerEvent,
        ..sc
    };
    assert_times(&exact(&per_event).completions, &[(0.0, 0.0, 6.5)]);
}

/// The plugin's frame order, by hand (`ONE_REQUEST`: render 4 ms, one chunk of 6 ms, request at
/// 5 ms, admitted at the frame start 16.67). `results_at_frame_start`: the chunk ends at 26.67
/// but the inference completes when its outputs are read at the next frame start, 33.33 (latency
/// one period). `dnn_work_first` as well: the chunk runs first, 16.67..22.67, and the frame's
/// render after it, 22.67..26.67, still before the next vsync (on time). Each flag alone changes
/// the run, so each is used.
#[test]
fn the_plugins_frame_order_by_hand() {
    let sc = Scenario::from_json(ONE_REQUEST).unwrap();
    let read_at_frame_start = Scenario {
        results_at_frame_start: true,
        ..sc.clone()
    };
    let out = exact(&read_at_frame_start);
    assert_times(&out.completions, &[(5.0, P, 2.0 * P)]);
    assert!(close(out.report.dnns[0].gpu_busy_ms, 6.0));

    let plugin = Scenario {
        dnn_work_first: true,
        ..read_at_frame_start
    };
    let out = exact(&plugin);
    assert_times(&out.completions, &[(5.0, P, 2.0 * P)]);
    assert_eq!(out.report.frames.on_time_rate, 1.0);
    let dnn_first_only = Scenario {
        dnn_work_first: true,
        ..sc
    };
    // Chunk 16.67..22.67: completes at its end, before its frame's render.
    assert_times(&exact(&dnn_first_only).completions, &[(5.0, P, P + 6.0)]);

    // A chunk that overruns the frame makes the render late only when it goes first: GPU steps
    // of 14 ms (one chunk, oversized) and a 4 ms render: 16.67 + 14 + 4 = 34.67 > 33.33.
    let heavy = ONE_REQUEST.replace("[1, 2, 3]", "[14, 0, 0]");
    let after = Scenario::from_json(&heavy).unwrap();
    let first = Scenario {
        dnn_work_first: true,
        ..after.clone()
    };
    let (a, f) = (exact(&after).report.frames, exact(&first).report.frames);
    assert_eq!(a.on_time_rate, 1.0);
    assert!(f.on_time_rate < 1.0, "{f:?}");
}

/// Replayed submission delays, no skipped frame and the GPU-work proxy, by hand, in the
/// plugin's order (`dnn_work_first`): each frame's DNN work reaches the GPU 2 ms after its start
/// and its scene 3 ms after. Frame 0: render 3..7. Frame 1 (16.67): the chunk (6 ms) runs from
/// 18.67 to 24.67, the render from 24.67 (its submission at 19.67 came earlier) to 28.67; the
/// inference took 24.67 - 16.67 = 8 ms from admission. With a 14 ms step instead, frame 1's work
/// is 14 + 4 = 18 ms and its render ends at 36.67, after frame 2's start (33.33): frame 1 is
/// late, and frame 2 still renders (per frame no frame is skipped, as in the plugin), 36.67 to
/// 40.67, on time. Work fits in the period in 29 of 30 frames.
#[test]
fn replayed_submission_delays_and_the_gpu_work_proxy_by_hand() {
    let sc = Scenario {
        dnn_work_first: true,
        ..Scenario::from_json(ONE_REQUEST).unwrap()
    };
    let replay = Replay {
        dnn_submit_ms: vec![Some(2.0)],
        scene_submit_ms: vec![Some(3.0)],
        ..Replay::default()
    };
    replay.check(&sc).unwrap();
    let opts = replaying(replay);
    let out = run(&sc, "max_total_utility", &opts);
    assert_times(&out.completions, &[(5.0, P, P + 2.0 + 6.0)]);
    assert_eq!(out.report.frames.work_fits_rate, 1.0);

    let heavy = Scenario {
        dnn_work_first: true,
        ..Scenario::from_json(&ONE_REQUEST.replace("[1, 2, 3]", "[14, 0, 0]")).unwrap()
    };
    let f = run(&heavy, "max_total_utility", &opts).report.frames;
    assert_eq!((f.frames, f.rendered), (30, 30), "{f:?}");
    assert!(close(f.work_fits_rate, 29.0 / 30.0), "{f:?}");
    assert!(close(f.on_time_rate, 29.0 / 30.0), "{f:?}");
    // Without the delays the chunk starts at the frame's start: 16.67 + 6 = 22.67.
    assert_times(&exact(&sc).completions, &[(5.0, P, P + 6.0)]);
}

/// The batch's readback, a replayed frame start and `readback_ms`, by hand: two DNNs of one
/// 6 ms step, each asked at 5 ms, in the plugin's order. Frame 1 starts at its replayed 18 ms
/// (not 16.67): both are admitted there, their chunks run 18..24 and 24..30 in one submission,
/// and both complete when it ends plus the 0.5 ms readback, 30.5: latencies 12.5 ms each (the
/// first one's outputs wait for the second's chunk, as wgpu maps them). A replayed readback of
/// frame 1 replaces the 0.5 ms, and a model's own readback in that frame replaces the frame's.
#[test]
fn a_frames_dnns_complete_with_their_submission() {
    let text = r#"{"frame_rate": 60, "render_ms": 4, "duration_s": 0.5, "cpu_workers": 1,
        "decisions": "per_frame", "dnn_work_first": true, "readback_ms": 0.5,
        "dnns": [{"name": "a", "gpu_op_ms": [6], "cpu_op_ms": [50], "request": {"events_ms": [5]}},
                 {"name": "b", "gpu_op_ms": [6], "cpu_op_ms": [50], "request": {"events_ms": [5]}}]}"#;
    let sc = Scenario::from_json(text).unwrap();
    assert_eq!(sc.readback_ms, 0.5);
    let replay = Replay {
        frame_start_ms: vec![0.0, 18.0],
        ..Replay::default()
    };
    replay.check(&sc).unwrap();
    let out = run(&sc, "max_total_utility", &replaying(replay.clone()));
    assert_times(&out.completions, &[(5.0, 18.0, 30.5), (5.0, 18.0, 30.5)]);
    // Frame 1's measured readback, 2 ms, stands in for the scenario's; a frame without one
    // keeps the scenario's.
    let measured = Replay {
        readback_ms: vec![None, Some(2.0)],
        ..replay.clone()
    };
    measured.check(&sc).unwrap();
    let out = run(&sc, "max_total_utility", &replaying(measured));
    assert_times(&out.completions, &[(5.0, 18.0, 32.0), (5.0, 18.0, 32.0)]);
    let unmeasured = Replay {
        readback_ms: vec![Some(2.0), None],
        ..replay
    };
    let out = run(&sc, "max_total_utility", &replaying(unmeasured.clone()));
    assert_times(&out.completions, &[(5.0, 18.0, 30.5), (5.0, 18.0, 30.5)]);
    // A model's own readback in a frame stands in for the frame's mean: b's 3 ms in frame 1
    // (read after a's), a keeps the frame's 2 ms.
    let mut own = Replay {
        readback_ms: vec![None, Some(2.0)],
        ..unmeasured.clone()
    };
    own.models.insert(
        "b".into(),
        ModelTrace {
            readback_ms: vec![None, Some(3.0)],
            ..ModelTrace::default()
        },
    );
    own.check(&sc).unwrap();
    let out = run(&sc, "max_total_utility", &replaying(own.clone()));
    let mut ends: Vec<f64> = out.completions.iter().map(|c| c.finished_ms).collect();
    ends.sort_by(f64::total_cmp);
    assert!(close(ends[0], 32.0) && close(ends[1], 33.0), "{ends:?}");
    own.models.get_mut("b").unwrap().readback_ms = vec![Some(-1.0)];
    let err = own.check(&sc).unwrap_err().to_string();
    assert!(err.contains("models.b.readback_ms[0]"), "{err}");
    // A decreasing start is refused, naming the field.
    let bad = Replay {
        frame_start_ms: vec![0.0, 18.0, 17.0],
        ..Replay::default()
    };
    let err = bad.check(&sc).unwrap_err().to_string();
    assert!(err.contains("frame_start_ms[2]"), "{err}");
}

/// The recorder exports each model's readback per frame beside the frame's mean: two models
/// read in frame 0 (0.5 and 2 ms), only the second in frame 1 (1 ms), nothing in frame 2; a
/// negative or non-finite readback is ignored.
#[test]
fn the_recording_has_each_models_readback_per_frame() {
    let mut r = RunRecorder::new(&CoordinatorConfig::new(FrameBudget::new(
        60.0, 3.0, 1.0, 5.0,
    )));
    r.set_frame_rate(60.0);
    let (a, b) = (ModelId(0), ModelId(1));
    for (id, name) in [(a, "a"), (b, "b")] {
        r.add_model(
            id,
            name,
            &[StepCost::gpu_and_cpu(1.0, 4.0)],
            None,
            UtilityParams::default(),
        );
    }
    r.frame_read(0.0, Some(2.0), Some(0.5), Some(1.0), Some(1.25));
    r.model_read(a, 0.5);
    r.model_read(b, 2.0);
    r.frame_read(P, Some(2.0), Some(0.5), Some(1.0), Some(1.0));
    r.model_read(b, 1.0);
    r.model_read(a, f64::NAN);
    r.model_read(a, -1.0);
    r.frame_read(2.0 * P, Some(2.0), Some(0.5), Some(1.0), None);
    assert_eq!(r.ignored(), 2);
    let replay = r.export().1;
    assert_eq!(replay.readback_ms, vec![Some(1.25), Some(1.0), None]);
    assert_eq!(replay.models["a"].readback_ms, vec![Some(0.5), None, None]);
    assert_eq!(
        replay.models["b"].readback_ms,
        vec![Some(2.0), Some(1.0), None]
    );
}

fn scenario_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../assets/scenarios");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    v.sort();
    assert!(v.len() >= 4, "{v:?}");
    v
}

fn per_frame(path: &Path) -> Scenario {
    Scenario {
        decisions: Decisions::PerFrame,
        ..Scenario::from_file(path).unwrap()
    }
}

/// Median (lower middle) of the latencies of DNN `i`.
fn p50(c: &[Completion], i: usize) -> f64 {
    let mut v: Vec<f64> = c
        .iter()
        .filter(|c| c.model.0 == i)
        .map(Completion::latency_ms)
        .collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0.0)
}

/// What must agree between a run and its replay: the frame statistics, and per DNN the
/// completions, p50 and max latency (and the rest of its statistics).
fn compare(name: &str, a: &SimOutput, b: &SimOutput) -> Result<(), String> {
    let (ra, rb): (&Report, &Report) = (&a.report, &b.report);
    if ra.frames != rb.frames {
        return Err(format!("{name}: frames {:?} != {:?}", ra.frames, rb.frames));
    }
    for (i, (da, db)) in ra.dnns.iter().zip(&rb.dnns).enumerate() {
        let (pa, pb) = (p50(&a.completions, i), p50(&b.completions, i));
        if da != db || pa != pb {
            return Err(format!("{name}: {da:?} (p50 {pa}) != {db:?} (p50 {pb})"));
        }
    }
    if times(&a.completions) != times(&b.completions) {
        return Err(format!("{name}: completion times differ"));
    }
    Ok(())
}

/// Record → replay reproduces the run, exactly. Every scenario file, switched to per-frame
/// decisions, is simulated with jitter 0.2 (three seeds, three policies) while recording; the
/// exported scenario with the exported replay and no noise gives the same run: frames on time,
/// wall_on_time_rate, completed counts, each DNN's p50 and max latency and every completion's
/// times are equal (tolerance 0, bit for bit). It is exact because (1) the replay indexes
/// inferences as the recorder counted them (both count the DNN's completions), (2) each chunk's
/// time is split over its steps so that the simulator's sum gives it back bit for bit, (3) the
/// recorder keeps the frame rate, the coordinator's render estimate at time 0
/// (`render_estimate_ms`), the chunk overhead and the profile the coordinator was given.
#[test]
fn record_then_replay_reproduces_every_scenario_exactly() {
    let mut checked = 0;
    for (path, plugin_order) in scenario_files()
        .into_iter()
        .flat_map(|p| [(p.clone(), false), (p, true)])
    {
        let sc = Scenario {
            dnn_work_first: plugin_order,
            results_at_frame_start: plugin_order,
            ..per_frame(&path)
        };
        for policy in ["max_total_utility", "least_slack_time", "fifo"] {
            for seed in [1, 2, 3] {
                let name = format!("{} {policy} seed {seed}", path.display());
                let original = run(&sc, policy, &recording(seed));
                let (scenario, replay) = original.recorded.clone().expect("recorded");
                scenario.validate().unwrap();
                replay.check(&scenario).unwrap();
                assert_eq!(scenario.decisions, Decisions::PerFrame);
                assert_eq!(scenario.dnn_work_first, plugin_order);
                assert_eq!(scenario.results_at_frame_start, plugin_order);
                let replayed = run(&scenario, policy, &replaying(replay));
                compare(&name, &original, &replayed).unwrap();
                assert!(original.completions.len() > 10, "{name}");
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 2 * 4 * 3 * 3);
}

/// The check can fail: the same replay with every model's inferences shifted by one (inference
/// `k` gets the times of `k + 1`) gives another run.
#[test]
fn a_replay_off_by_one_inference_does_not_reproduce_the_run() {
    let sc = per_frame(&scenario_files()[0]);
    let original = run(&sc, "max_total_utility", &recording(1));
    let (scenario, replay) = original.recorded.clone().unwrap();
    let mut shifted = replay.clone();
    for m in shifted.models.values_mut() {
        for runs in [&mut m.gpu_step_ms, &mut m.cpu_step_ms] {
            if !runs.is_empty() {
                runs.rotate_left(1);
            }
        }
    }
    let with = |s: &Scenario, r: Replay| run(s, "max_total_utility", &replaying(r));
    assert!(compare("shifted", &original, &with(&scenario, shifted)).is_err());
    compare("as exported", &original, &with(&scenario, replay)).unwrap();
}

/// The coordinator's render estimate at time 0 is part of the recording: a run whose coordinator
/// starts believing the render takes 10 ms (it takes 2) cuts the DNN of three 5 ms steps for a
/// 5.67 ms budget at first (its first inferences take two frames, 28.7 ms, instead of one chunk
/// of 15 ms, 17 ms); the export carries `render_estimate_ms` 10 and reproduces the run, while the
/// same replay started from the median render time (the estimate left out) does not.
#[test]
fn the_render_estimate_at_time_0_is_recorded() {
    let sc = Scenario::from_json(
        &ONE_REQUEST
            .replace(
                r#""render_ms": 4"#,
                r#""render_ms": 2, "render_estimate_ms": 10"#,
            )
            .replace("[1, 2, 3]", "[5, 5, 5]")
            .replace(r#""events_ms": [5]"#, r#""period_ms": 100"#),
    )
    .unwrap();
    let original = run(&sc, "max_total_utility", &recording(5));
    let (scenario, replay) = original.recorded.clone().unwrap();
    assert_eq!(scenario.render_estimate_ms, Some(10.0));
    let with = |s: &Scenario| run(s, "max_total_utility", &replaying(replay.clone()));
    compare("as exported", &original, &with(&scenario)).unwrap();
    let no_estimate = Scenario {
        render_estimate_ms: None,
        dnn_work_first: false,
        results_at_frame_start: false,
        readback_ms: 0.0,
        ..scenario.clone()
    };
    assert!(compare("no estimate", &original, &with(&no_estimate)).is_err());
}

/// The DNNs' resumable steps are part of the recording: one DNN of ten 10 ms GPU steps (1 ms
/// each on the CPU, deadline 100 ms, a request every 250 ms) is late on the GPU and the offload
/// moves it to the CPU with an inference the GPU had started. With no boundary resumable, that
/// inference restarts on the CPU from its input, although the configuration resumes
/// (`offload_resumes_from_gpu`, on by default). The export carries `resumable_steps: []` and
/// reproduces the run; the same replay without the field resumes from the GPU's boundary, and
/// does not.
#[test]
fn the_resumable_steps_are_recorded() {
    let sc = Scenario::from_json(
        r#"{"frame_rate": 30, "render_ms": 3, "duration_s": 3, "cpu_workers": 1,
            "decisions": "per_frame",
            "dnns": [{"name": "m", "gpu_op_ms": [10, 10, 10, 10, 10, 10, 10, 10, 10, 10],
                      "cpu_op_ms": [1, 1, 1, 1, 1, 1, 1, 1, 1, 1], "deadline_ms": 100,
                      "resumable_steps": [],
                      "request": {"period_ms": 250, "start_ms": 180}}]}"#,
    )
    .unwrap();
    // Moved by the old offload rule, which catches the inference part way (see tests/sim_resume.rs).
    let old_rule = |s: &Scenario, opts: &SimOptions| {
        simulate_opts(s, policy_by_name("max_total_utility").unwrap(), opts, |c| {
            c.placement.rule = PlacementRule::OffloadRule
        })
        .unwrap()
    };
    let original = old_rule(&sc, &recording(1));
    let d = &original.report.dnns[0];
    assert_eq!((d.offload_switches, d.resumed_from_gpu), (1, 0), "{d:?}");
    let (scenario, replay) = original.recorded.clone().unwrap();
    assert_eq!(scenario.dnns[0].resumable_steps, Some(vec![]));
    let with = |s: &Scenario| old_rule(s, &replaying(replay.clone()));
    compare("as exported", &original, &with(&scenario)).unwrap();
    let mut unknown = scenario.clone();
    unknown.dnns[0].resumable_steps = None;
    let resumed = with(&unknown);
    assert_eq!(resumed.report.dnns[0].resumed_from_gpu, 1);
    assert!(compare("without the field", &original, &resumed).is_err());
}

/// The exported files round-trip through JSON (the format `heimdall simulate` reads) and
/// validate, keeping each DNN's `resumable_steps` (every other boundary here), and the run from
/// the files read back agrees with the original within 1e-9 ms on every completion, with equal
/// frame statistics and counts (every scenario file, per frame, three seeds). Not bit for bit:
/// serde_json's default float parsing (without its `float_roundtrip` feature) rounds about one
/// value in ten 1 ulp off, which moved finish times by at most 4e-12 ms in 40 such runs.
#[test]
fn exported_files_round_trip_through_json() {
    for path in scenario_files() {
        let mut sc = per_frame(&path);
        for d in &mut sc.dnns {
            d.resumable_steps = Some((0..=d.gpu_op_ms.len()).step_by(2).collect());
        }
        let resumable = |s: &Scenario| -> Vec<Option<Vec<usize>>> {
            s.dnns.iter().map(|d| d.resumable_steps.clone()).collect()
        };
        for seed in [1, 2, 3] {
            let original = run(&sc, "max_total_utility", &recording(seed));
            let (scenario, replay) = original.recorded.clone().unwrap();
            assert_eq!(resumable(&scenario), resumable(&sc));
            let text = serde_json::to_string_pretty(&scenario).unwrap();
            assert!(text.contains(r#""decisions": "per_frame""#), "{text}");
            let s2 = Scenario::from_json(&text).unwrap();
            assert_eq!(resumable(&s2), resumable(&sc));
            let r2 = Replay::from_json(&replay.to_json()).unwrap();
            r2.check(&s2).unwrap();
            assert_eq!(s2.dnns.len(), scenario.dnns.len());
            assert_eq!(r2.render_ms.len(), replay.render_ms.len());
            let again = run(&s2, "max_total_utility", &replaying(r2));
            let name = format!("{} seed {seed}", path.display());
            assert_eq!(again.report.frames, original.report.frames, "{name}");
            assert_eq!(
                again.completions.len(),
                original.completions.len(),
                "{name}"
            );
            for (a, b) in times(&original.completions)
                .iter()
                .zip(times(&again.completions))
            {
                assert!(
                    (a.1 - b.1).abs() < 1e-9 && (a.2 - b.2).abs() < 1e-9,
                    "{name}: {a:?} {b:?}"
                );
            }
        }
    }
}

fn cfg60() -> CoordinatorConfig {
    let mut c = CoordinatorConfig::new(FrameBudget::new(60.0, 3.0, 1.0, 5.0));
    c.cpu_workers = 3;
    c.alpha = 0.02;
    c
}

/// A live run fed by hand: the export by hand. Frames start at 1000, 1016.7 and 1033.3 ms with
/// scene times 2, unmeasured and 4 ms (median 3: the unmeasured frame replays 3); requests at
/// 990 (before the window: dropped) and 1005 ms (5 ms in the window); a GPU chunk over steps
/// 0..2 (profile 1 and 3 ms) measured 8 ms is split 2 + 6; a CPU step (the profile's CPU-only
/// step 2) 0.5 ms; two DNNs called "face" become "face" and "face#2". The first one's resumable
/// steps [3, 1, 9, 1] are exported sorted, once, without 9 (past its 3 steps), and kept when it
/// is added again; the second one's, given and then forgotten (`None`), are left out.
#[test]
fn a_hand_fed_recorder_exports_what_it_was_given() {
    let mut r = RunRecorder::new(&cfg60());
    let steps = [
        StepCost::gpu_and_cpu(1.0, 4.0),
        StepCost::gpu_and_cpu(3.0, 9.0),
        StepCost::cpu_only(0.7),
    ];
    let u = UtilityParams {
        l0: 2.0,
        beta: 3.0,
        gamma: 1.5,
    };
    r.add_model(ModelId(4), "face", &steps, Some(100.0), u);
    r.add_model(
        ModelId(7),
        "face",
        &steps[..1],
        None,
        UtilityParams::default(),
    );
    r.set_resumable_steps(ModelId(4), Some(&[3, 1, 9, 1]));
    r.add_model(ModelId(4), "face", &steps, Some(100.0), u);
    r.set_resumable_steps(ModelId(7), Some(&[0]));
    r.set_resumable_steps(ModelId(7), None);
    r.request(ModelId(4), 990.0, 0.1);
    r.frame(1000.0, Some(2.0));
    r.request(ModelId(4), 1005.0, 0.3);
    r.gpu_chunk(ModelId(4), 0..2, 8.0);
    r.frame(1000.0 + P, None);
    r.cpu_chunk(ModelId(4), 2..3, 0.5);
    r.finished(ModelId(4));
    r.frame(1000.0 + 2.0 * P, Some(4.0));
    let (s, rep) = r.try_export().unwrap();
    assert_eq!(s.decisions, Decisions::PerFrame);
    assert!(close(s.frame_rate, 60.0) && close(s.duration_s, 3.0 / 60.0));
    assert_eq!((s.render_ms, s.render_estimate_ms), (3.0, Some(3.0)));
    assert_eq!(
        (s.cpu_workers, s.alpha, s.chunk_overhead_ms),
        (3, 0.02, 0.0)
    );
    assert_eq!((s.budget_margin_ms, s.relaxation_ms), (1.0, 5.0));
    let names: Vec<&str> = s.dnns.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["face", "face#2"]);
    let d = &s.dnns[0];
    assert_eq!(d.gpu_op_ms, [1.0, 3.0, 0.0]);
    assert_eq!(d.cpu_op_ms, [4.0, 9.0, 0.7]);
    assert_eq!(d.cpu_only_ops, [2]);
    assert_eq!(d.request.events_ms, Some(vec![5.0]));
    assert_eq!(d.content_variation, [0.3]);
    assert_eq!((d.deadline_ms, d.utility), (Some(100.0), u));
    assert_eq!(d.resumable_steps, Some(vec![1, 3]));
    assert_eq!(s.dnns[1].resumable_steps, None);
    assert_eq!(s.dnns[1].request.events_ms, Some(vec![]));
    assert_eq!(rep.render_ms, [2.0, 3.0, 4.0]);
    let t = &rep.models["face"];
    assert_eq!(t.gpu_step_ms, [vec![Some(2.0), Some(6.0), None]]);
    assert_eq!(t.cpu_step_ms, [vec![None, None, Some(0.5)]]);
    assert!(!rep.models.contains_key("face#2"));
    assert_eq!(r.ignored(), 0);
    // The exported pair runs.
    let out = run(&s, "max_total_utility", &replaying(rep));
    assert_eq!(out.report.frames.frames, 3);
}

/// Feeding more than the capacity keeps the capacity: the latest frames, requests and
/// inferences; the export is the window of the latest frames (requests before it dropped, and
/// inferences that began before it).
#[test]
fn memory_is_bounded_by_the_capacity() {
    let mut r = RunRecorder::with_capacity(&cfg60(), 100);
    assert_eq!(r.capacity(), 100);
    r.add_model(
        ModelId(0),
        "m",
        &[StepCost::gpu_and_cpu(1.0, 2.0)],
        None,
        UtilityParams::default(),
    );
    for k in 0..1000 {
        let t = k as f64 * P;
        r.frame(t, Some(3.0));
        r.request(ModelId(0), t + 1.0, 0.0);
        r.gpu_chunk(ModelId(0), 0..1, 1.0 + k as f64);
        r.finished(ModelId(0));
    }
    assert_eq!(r.frames(), 100);
    assert_eq!(r.requests(), 100);
    assert!(r.inferences() <= 100, "{}", r.inferences());
    let (s, rep) = r.try_export().unwrap();
    assert_eq!(rep.render_ms.len(), 100);
    assert!(close(s.duration_s, 100.0 / 60.0));
    let ev = s.dnns[0].request.events_ms.clone().unwrap();
    assert_eq!(ev.len(), 100);
    assert!(close(ev[0], 1.0), "{ev:?}");
    // The inferences of the window's frames, in order: 901 ms ... 1000 ms.
    let runs = &rep.models["m"].gpu_step_ms;
    assert_eq!(runs.len(), 100);
    assert_eq!(runs[0][0], Some(901.0));
    assert_eq!(runs[99][0], Some(1000.0));
    // `reset` forgets the window, keeps the models and the counting.
    r.reset();
    assert_eq!((r.frames(), r.requests(), r.inferences()), (0, 0, 0));
    r.gpu_chunk(ModelId(0), 0..1, 5.0); // an inference in flight at the reset: not exported
    r.frame(0.0, Some(3.0));
    r.finished(ModelId(0));
    r.gpu_chunk(ModelId(0), 0..1, 7.0);
    r.finished(ModelId(0));
    let (s, rep) = r.try_export().unwrap();
    assert_eq!(s.render_estimate_ms, None);
    assert_eq!(rep.models["m"].gpu_step_ms, [vec![Some(7.0)]]);
}

/// Bad input is ignored (and counted), never a panic; an export that cannot be simulated is
/// an error naming the field.
#[test]
fn bad_input_is_ignored_and_a_bad_export_names_the_field() {
    let mut r = RunRecorder::new(&cfg60());
    let err = r.try_export().unwrap_err().to_string();
    assert!(err.contains("duration_s"), "{err}");
    r.frame(0.0, Some(3.0));
    let err = r.try_export().unwrap_err().to_string();
    assert!(err.contains("dnns"), "{err}");
    r.add_model(
        ModelId(0),
        "m",
        &[StepCost::gpu_and_cpu(1.0, 2.0)],
        None,
        UtilityParams::default(),
    );
    r.request(ModelId(9), 1.0, 0.0);
    r.request(ModelId(0), f64::NAN, 0.0);
    r.gpu_chunk(ModelId(0), 0..2, 1.0);
    r.gpu_chunk(ModelId(0), 1..1, 1.0);
    r.cpu_chunk(ModelId(0), 0..1, -1.0);
    r.gpu_chunk(ModelId(0), 0..1, f64::INFINITY);
    r.finished(ModelId(3));
    r.set_resumable_steps(ModelId(3), Some(&[0]));
    r.frame(f64::NAN, None);
    assert_eq!(r.ignored(), 9);
    r.frame(P, Some(f64::NAN)); // counts as unmeasured
    let (s, rep) = r.try_export().unwrap();
    assert_eq!(rep.render_ms, [3.0, 3.0]);
    assert!(rep.models.is_empty());
    assert_eq!(s.dnns[0].request.events_ms, Some(vec![]));
    // A scene that leaves no frame budget: the error names it.
    let mut r = RunRecorder::new(&cfg60());
    r.add_model(
        ModelId(0),
        "m",
        &[StepCost::gpu_and_cpu(1.0, 2.0)],
        None,
        UtilityParams::default(),
    );
    r.frame(0.0, Some(16.0));
    // A scene that leaves no frame budget is what a contended run records: it exports, and
    // the simulator takes it (issue 34; it was rejected as "leaves no frame budget").
    let (s, rep) = r.try_export().unwrap();
    assert_eq!(s.render_ms, 16.0);
    assert!(s.budget().budget_ms() <= s.chunk_overhead_ms);
    simulate_opts(
        &s,
        policy_by_name("max_total_utility").unwrap(),
        &replaying(rep),
        |_| {},
    )
    .unwrap();
    // Bad values in a scenario file name the new fields.
    for (bad, field) in [
        (r#""decisions": "per_vsync""#, "per_vsync"),
        (r#""render_estimate_ms": -1"#, "render_estimate_ms"),
        (r#""render_estimate_ms": -0.5"#, "render_estimate_ms"),
    ] {
        let text = ONE_REQUEST.replace(r#""decisions": "per_frame""#, bad);
        let err = Scenario::from_json(&text).unwrap_err().to_string();
        assert!(err.contains(field), "{bad}: {err}");
    }
}
