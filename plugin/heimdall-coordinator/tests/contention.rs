//! Issue 34 in the simulator: a scene that leaves the DNNs no GPU budget, and the issue's
//! collapse (a scene at 98 % of the frame with the shopping app's DNNs), under the placement
//! planner and under the offload rule it replaced, in the same run of the test.

use std::path::PathBuf;

use heimdall_coordinator::sim::{Decisions, Noise, Report, Scenario, SimOptions, simulate_opts};
use heimdall_coordinator::{PlacementRule, policy_by_name};

fn contention(name: &str) -> Scenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../assets/scenarios/contention")
        .join(name);
    Scenario::from_file(&path).unwrap()
}

/// How the run places DNNs: the planner, or the old rule with the CPU as it had it (two
/// workers, every CPU inference on one thread).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Planner,
    OldRule,
    /// The old rule given the planner's slots and threads.
    OldRuleAllSlots,
}

fn run(sc: &Scenario, policy: &str, mode: Mode, seed: Option<u64>) -> Report {
    let mut sc = sc.clone();
    if mode == Mode::OldRule {
        sc.cpu_workers = 2;
        for d in &mut sc.dnns {
            d.cpu_threads = 1;
            d.cpu_speedup = 1.0;
        }
    }
    let opts = SimOptions {
        noise: seed.map_or(Noise::NONE, |seed| Noise { sigma: 0.2, seed }),
        ..SimOptions::default()
    };
    simulate_opts(&sc, policy_by_name(policy).unwrap(), &opts, |c| {
        if mode != Mode::Planner {
            c.placement.rule = PlacementRule::OffloadRule;
        }
    })
    .unwrap()
    .report
}

fn table(label: &str, r: &Report) -> String {
    let mut s = format!(
        "{label} ({}): frames on time {:.1} %\n",
        r.policy,
        r.frames.on_time_rate * 100.0
    );
    for d in &r.dnns {
        s += &format!(
            "  {:<21} {:>5} done {:>6.1} Hz  mean {:>7.1} ms  p99 {:>7.1} ms  miss {:>5.1} %  cpu {:>3.0} %{}\n",
            d.name,
            d.completed,
            d.rate_hz,
            d.latency_ms.mean,
            d.latency_ms.p99,
            d.deadline_miss_rate * 100.0,
            d.cpu_share * 100.0,
            d.shortfall
                .as_ref()
                .map_or(String::new(), |s| format!("  short: {s}"))
        );
    }
    s
}

/// Requests of DNN `k` in the scenario.
fn requests(sc: &Scenario, k: usize) -> usize {
    sc.dnns[k].request.times(sc.duration_s * 1000.0).len()
}

/// Scenes that leave the DNNs no GPU budget: per frame as the Bevy plugin schedules (every
/// frame rendered, none dropped) with a scene longer than the frame (17 ms at 60 Hz), and per
/// event with one at 96 % of it (16 ms; the 1 ms margin closes every window). Two hand-landmark
/// models every frame (5 ms of CPU), a person mask every 66 ms (3 ms) and an object detector
/// every 100 ms (26 ms) on 8 CPU slots: the planner puts them all on the CPU at its first plan
/// and every one answers (at least 95 % of its requests per frame, where a request waits for a
/// frame start at which its DNN is idle, 98 % per event) with at most 2 % of its deadlines
/// missed. The old rule, in the same run, leaves the DNNs it did not move waiting for a GPU
/// budget that does not exist. (Per event, a scene longer than the frame drops every other
/// frame, and the DNNs' GPU work runs in the dropped frames' time: not a scene without budget.)
#[test]
fn no_gpu_budget_every_dnn_answers_at_its_rate_on_the_cpu() {
    let op = |ms: f64, n: usize| vec![ms / n as f64; n];
    let dnn = |name: &str, gpu: f64, cpu: f64, n: usize, period: f64, start: f64, dl: f64| {
        serde_json::json!({"name": name, "gpu_op_ms": op(gpu, n), "cpu_op_ms": op(cpu, n),
            "request": {"period_ms": period, "start_ms": start}, "deadline_ms": dl})
    };
    for (render, decisions, served) in [(17.0, "per_frame", 0.95), (16.0, "per_event", 0.98)] {
        let text = serde_json::json!({
            "frame_rate": 60, "render_ms": render, "duration_s": 10, "cpu_workers": 8,
            "chunk_overhead_ms": 0.05, "decisions": decisions,
            "dnns": [
                dnn("hand_landmarks_left", 0.5, 5.0, 24, 1000.0 / 60.0, 0.0, 50.0),
                dnn("hand_landmarks_right", 0.5, 5.0, 24, 1000.0 / 60.0, 1.0, 50.0),
                dnn("selfie_segmentation", 0.6, 3.0, 20, 66.0, 5.0, 150.0),
                dnn("objects_ssd", 2.0, 26.0, 40, 100.0, 3.0, 200.0),
            ]
        })
        .to_string();
        let sc = Scenario::from_json(&text).expect("a scene without budget is valid");
        assert!(sc.budget().budget_ms() <= sc.chunk_overhead_ms);
        let planner = run(&sc, "max_total_utility", Mode::Planner, None);
        let old = run(&sc, "max_total_utility", Mode::OldRule, None);
        eprintln!(
            "{decisions}, scene {render} ms\n{}",
            table("planner", &planner)
        );
        eprintln!("{}", table("old rule", &old));
        for (k, d) in planner.dnns.iter().enumerate() {
            let asked = requests(&sc, k);
            assert!(
                d.completed as f64 >= served * asked as f64,
                "{d:?} of {asked}"
            );
            assert!(d.deadline_miss_rate <= 0.02, "{d:?}");
            assert!(d.cpu_share >= 0.99, "{d:?}");
            assert_eq!(d.shortfall, None, "{d:?}");
        }
        let starved = old.dnns.iter().enumerate().any(|(k, d)| {
            d.deadline_miss_rate >= 0.5 || (d.completed as f64) < 0.5 * requests(&sc, k) as f64
        });
        assert!(starved, "{}", table("old rule", &old));
    }
}

/// The issue's collapse (`assets/scenarios/contention/contended_shopping.json`): a scene at 98 %
/// of a 60 Hz frame (16.33 ms; no GPU budget once the 1 ms margin is taken) with the shopping
/// app's DNNs as the issue measured their CPU costs: two hand-landmark models every frame (5 ms
/// of CPU, 0.5 ms of GPU), palm detection on demand (9 ms), SSD every 100 ms (26 ms), the person
/// mask every 66 ms (3 ms), multistyle26 on events every 2 s (46 ms on one thread, 6 threads
/// 4 x faster), on 14 CPU slots. The old rule with the CPU it had (two workers, one thread each)
/// leaves the hands on the GPU without budget: they miss half their deadlines and run at a third
/// of their rate. The planner meets every deadline (at most 2 % missed) at every DNN's rate, and
/// does at least as well as fifo on every DNN while keeping the frames fifo loses.
#[test]
fn the_issues_collapse_is_gone_under_the_planner() {
    let sc = contention("contended_shopping.json");
    assert!(sc.budget().budget_ms() <= sc.chunk_overhead_ms);
    let planner = run(&sc, "max_total_utility", Mode::Planner, None);
    let old = run(&sc, "max_total_utility", Mode::OldRule, None);
    let old_slots = run(&sc, "max_total_utility", Mode::OldRuleAllSlots, None);
    let fifo = run(&sc, "fifo", Mode::Planner, None);
    for (label, r) in [
        ("planner", &planner),
        ("old rule, 2 workers", &old),
        ("old rule, 14 slots", &old_slots),
        ("fifo", &fifo),
    ] {
        eprintln!("{}", table(label, r));
    }
    for (k, d) in planner.dnns.iter().enumerate() {
        let asked = requests(&sc, k);
        assert!(d.deadline_miss_rate <= 0.02, "{d:?}");
        assert!(
            d.completed as f64 >= 0.98 * asked as f64,
            "{d:?} of {asked}"
        );
        let f = &fifo.dnns[k];
        assert!(d.completed >= f.completed && d.deadline_miss_rate <= f.deadline_miss_rate);
    }
    assert!(planner.frames.on_time_rate >= 0.995, "{:?}", planner.frames);
    assert!(fifo.frames.on_time_rate < 0.5, "{:?}", fifo.frames);
    for hand in ["hand_landmarks_left", "hand_landmarks_right"] {
        let d = old.dnn(hand).unwrap();
        assert!(d.deadline_miss_rate >= 0.5, "{d:?}");
        assert!(d.rate_hz < 0.5 * 60.0, "{d:?}");
    }
}

/// The same on a phone-like host: 4 cores, 2 CPU slots, multistyle26 on one thread. Decided per
/// event the planner keeps every deadline. Decided per frame, as the Bevy plugin hands out CPU
/// work today (only at a frame start, so a slot that finishes mid-frame idles until the next),
/// the two slots run at most two pieces a frame and the light DNNs queue behind the hands
/// (reported, not hidden: SSD at about half its rate); with the work handed out the moment a
/// worker finishes (`Coordinator::schedule_cpu_only`), every deadline is kept again.
#[test]
fn four_cores_what_the_planner_achieves() {
    let sc = contention("contended_shopping_4core.json");
    let per_event = run(&sc, "max_total_utility", Mode::Planner, None);
    let old = run(&sc, "max_total_utility", Mode::OldRule, None);
    let per_frame = |on_completion: bool| {
        let sc = Scenario {
            decisions: Decisions::PerFrame,
            cpu_dispatch_on_completion: on_completion,
            ..sc.clone()
        };
        run(&sc, "max_total_utility", Mode::Planner, None)
    };
    let (frame_starts, on_completion) = (per_frame(false), per_frame(true));
    eprintln!("{}", table("planner, per event", &per_event));
    eprintln!(
        "{}",
        table("planner, per frame, CPU at frame starts", &frame_starts)
    );
    eprintln!(
        "{}",
        table("planner, per frame, CPU on completion", &on_completion)
    );
    eprintln!("{}", table("old rule", &old));
    for r in [&per_event, &on_completion] {
        for (k, d) in r.dnns.iter().enumerate() {
            assert!(d.deadline_miss_rate <= 0.02, "{d:?}");
            assert!(
                d.completed as f64 >= 0.98 * requests(&sc, k) as f64,
                "{d:?}"
            );
        }
    }
    assert!(frame_starts.frames.on_time_rate >= 0.995);
    assert!(frame_starts.dnns.iter().all(|d| d.completed > 0));
    let ssd = frame_starts.dnn("objects_ssd").unwrap();
    assert!(ssd.rate_hz < 0.75 * 10.0, "{ssd:?}");
}

/// Noise on (sigma 0.2), six seeds, the paper's four apps: the planner moves the same DNNs at
/// the same times in every run; the old rule's moves depend on the measured delays, so on the
/// seed (when it moves YOLO in surroundings monitoring, and whether it does at all).
#[test]
fn the_same_configuration_gives_the_same_placement_run_to_run() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../assets/scenarios");
    let mut old_varies = false;
    for file in [
        "immersive_shopping.json",
        "interactive_workspace.json",
        "ar_emoji.json",
        "surroundings_monitoring.json",
    ] {
        let sc = Scenario::from_file(&dir.join(file)).unwrap();
        let moves = |rule: PlacementRule, seed: u64| -> Vec<String> {
            let opts = SimOptions {
                noise: Noise { sigma: 0.2, seed },
                record_timeline: true,
                ..SimOptions::default()
            };
            let out = simulate_opts(
                &sc,
                policy_by_name("max_total_utility").unwrap(),
                &opts,
                |c| c.placement.rule = rule,
            )
            .unwrap();
            out.timeline
                .events()
                .filter(|e| e.category == "offload")
                .map(|e| format!("{} at {:.1} ms", e.name, e.start_ms))
                .collect()
        };
        let first = moves(PlacementRule::Planner, 1);
        assert!(
            !first.is_empty(),
            "{file}: the GPU is overloaded, something moves"
        );
        for seed in 2..=6 {
            assert_eq!(
                moves(PlacementRule::Planner, seed),
                first,
                "{file} seed {seed}"
            );
        }
        let old: Vec<Vec<String>> = (1..=6)
            .map(|seed| moves(PlacementRule::OffloadRule, seed))
            .collect();
        eprintln!("{file}: planner {first:?}, old rule {old:?}");
        old_varies |= old.iter().any(|m| *m != old[0]);
    }
    assert!(old_varies, "the old rule's moves follow the noise");
}
