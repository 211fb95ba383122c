//! GPU first, CPU when it helps, as the placement planner decides it inside the coordinator
//! (issue 34): a model moves when the GPU cannot serve it (no budget left, a deadline missed
//! there), its running inference keeps what the GPU computed (it continues on the CPU from the
//! step reached, restarts where it cannot, or finishes on the GPU when that is sooner), it comes
//! back after its dwell time once the GPU has room, and the ablation switches.
//!
//! (Rewritten for the planner: these cases used the old once-a-second offload rule,
//! `offload::decide`, and its timing; the resume mechanics they check are the same, triggered
//! here by the GPU budget collapsing or shrinking under a running inference.)

use heimdall_coordinator::placement::{DnnDemand, Machine, PlacementConfig, ShortfallReason, plan};
use heimdall_coordinator::sim::{DnnScenario, RequestPattern, Scenario, simulate_with};
use heimdall_coordinator::{
    Ablation, Coordinator, CoordinatorConfig, Decision, Event, FrameBudget, GpuWindow, ModelId,
    ModelSpec, Processor, Request, Resume, StepCost, UtilityParams, policy_by_name,
};

const PERIOD: f64 = 1000.0 / 30.0;

fn coordinator(steps: Vec<StepCost>, deadline: Option<f64>) -> (Coordinator, ModelId) {
    coordinator_resuming(steps, deadline, true)
}

/// 30 fps, render 3 ms, margin 1, no relaxation: a budget of 29.33 ms; one model.
fn coordinator_resuming(
    steps: Vec<StepCost>,
    deadline: Option<f64>,
    resumes: bool,
) -> (Coordinator, ModelId) {
    let mut cfg = CoordinatorConfig::new(FrameBudget::new(30.0, 3.0, 1.0, 0.0));
    cfg.offload_resumes_from_gpu = resumes;
    let mut c = Coordinator::new(cfg, policy_by_name("max_total_utility").unwrap());
    let id = c.register(ModelSpec {
        name: "m".into(),
        steps,
        utility: UtilityParams::default(),
        deadline_ms: deadline,
    });
    (c, id)
}

fn window(start: f64) -> GpuWindow {
    GpuWindow {
        start_ms: start,
        end_ms: start + PERIOD,
    }
}

/// The scene grows to fill the frame: the render estimate (an EMA) passes the period and the
/// frames leave the DNNs no GPU budget.
fn collapse(c: &mut Coordinator) {
    for _ in 0..40 {
        c.observe_render(40.0);
    }
    assert_eq!(c.config().budget.budget_ms(), 0.0);
}

/// The render estimate jumps so that the frames leave `budget` ms to the DNNs.
fn shrink(c: &mut Coordinator, budget: f64) {
    let b = c.config().budget;
    let target = b.frame_period_ms - b.margin_ms - budget;
    c.observe_render(10.0 * target - 9.0 * b.render_ms);
    assert!((c.config().budget.budget_ms() - budget).abs() < 1e-6);
}

/// Submits one inference at 0 ms, runs the first window (`0..first_end` ms) on the GPU, which
/// must take `first_ops`, lets `change` take the GPU budget, and schedules the frame at 150 ms:
/// that frame's decision.
fn move_at_150(
    c: &mut Coordinator,
    id: ModelId,
    first_end: f64,
    first_ops: std::ops::Range<usize>,
    change: impl FnOnce(&mut Coordinator),
) -> Decision {
    c.submit(id, Request::default(), 0.0);
    let w = GpuWindow {
        start_ms: 0.0,
        end_ms: first_end,
    };
    let d = c.schedule(0.0, Event::FrameRendered, w, 2);
    assert_eq!(d.gpu[0].ops, first_ops);
    assert_eq!(c.status(id, 0.0).mode, Processor::Gpu);
    c.gpu_done(d.gpu[0].id, 0.0, first_end - 1.0);
    change(c);
    let d = c.schedule(150.0, Event::FrameRendered, window(150.0), 2);
    assert_eq!(c.status(id, 150.0).mode, Processor::Cpu, "{d:?}");
    d
}

/// The workspace app's DNNs on a 30 fps scene of 4 ms (sec. 9.5): PoseNet (256 ms of GPU every
/// 200 ms, 768 ms of CPU, deadline 600) and EAST (209 ms of GPU every 500 ms, 632 ms of CPU,
/// deadline 1500) ask 1.28 + 0.42 of a GPU that has 0.85 (0.765 usable). EAST moves: its CPU
/// time meets its deadline with the margin (632 x 1.2 = 758 <= 1500); PoseNet's does not (922 >
/// 600), so it stays and is granted what the GPU has: 0.5 Hz of floor (0.128) and 0.904 of the
/// rest up to the 3.32 Hz it can reach alone (one inference per 256 / 0.85 = 301 ms), 3.05 Hz,
/// the GPU full. EAST runs at the 1.58 Hz of its CPU time.
#[test]
fn a_missed_deadline_moves_the_model_the_cpu_serves_in_time() {
    let d = |id: usize, gpu: f64, cpu: f64, period: f64, deadline: f64, value: f64| DnnDemand {
        model: ModelId(id),
        gpu_ms: gpu,
        fallback_ms: 0.0,
        cpu_ms: cpu,
        cpu_threads: 1,
        cpu_threaded_ms: cpu,
        period_ms: Some(period),
        deadline_ms: Some(deadline),
        value,
        on_demand: false,
        current: Processor::Gpu,
        since_ms: 0.0,
        gpu_capable: true,
        cpu_capable: true,
    };
    let demands = [
        d(0, 256.0, 768.0, 200.0, 600.0, 10.0),
        d(1, 209.2, 632.4, 500.0, 1500.0, 5.0),
    ];
    let m = Machine {
        frame_period_ms: PERIOD,
        gpu_budget_ms: PERIOD - 4.0 - 1.0,
        chunk_overhead_ms: 0.05,
        cpu_slots: 2,
    };
    let p = plan(&demands, &m, &PlacementConfig::default(), 100.0);
    let (pose, east) = (p.entry(ModelId(0)).unwrap(), p.entry(ModelId(1)).unwrap());
    assert_eq!(
        (pose.processor, east.processor),
        (Processor::Gpu, Processor::Cpu)
    );
    let s = pose.shortfall.unwrap();
    assert_eq!(s.reason, ShortfallReason::GpuFull, "{s:?}");
    let reach = 1000.0 / (256.0 / 0.85);
    let want = (reach - 0.5) * 0.256;
    let expected = 0.5 + (0.765 - 0.128) / want * (reach - 0.5);
    assert!(
        (s.granted_hz - expected).abs() < 1e-3,
        "{s:?} vs {expected}"
    );
    assert!(
        (east.granted_hz.unwrap() - 1000.0 / 632.4).abs() < 1e-6,
        "{east:?}"
    );
}

/// A model whose GPU latency meets its deadline stays on the GPU however much faster the CPU
/// is ("GPU first"): ten 2 ms steps (23 ms a run with half a frame), 0.2 ms each on the CPU.
#[test]
fn no_move_while_the_gpu_meets_the_deadlines() {
    let (mut c, id) = coordinator(vec![StepCost::gpu_and_cpu(2.0, 0.2); 10], Some(100.0));
    let mut now = 0.0;
    for _ in 0..60 {
        c.submit(id, Request::default(), now);
        let d = c.schedule(now, Event::FrameRendered, window(now), 2);
        assert!(d.cpu.is_empty());
        for g in d.gpu {
            c.gpu_done(g.id, now, now + g.est_ms);
        }
        now += PERIOD;
    }
    let s = c.status(id, now);
    assert_eq!((s.mode, s.mode_switches), (Processor::Gpu, 0));
    assert!(s.expected_latency_ms.unwrap() < 100.0, "{s:?}");
}

/// Ten steps of 10 ms on the GPU and 1 ms on the CPU, no deadline. The first window (GPU free
/// until 25 ms, margin 1) takes steps 0..2. Then the scene fills the frame: no GPU budget, so
/// at 150 ms the model goes to the CPU at once and its inference continues there from the GPU's
/// activations at step 2 (8 ms). The next inference starts on the CPU from its input: whole
/// with a slot to spare, and in pieces of at most 8 ms when it takes the last free slot (0..8,
/// then 8..10 from the CPU's own state), so that a job that comes waits at most one piece.
#[test]
fn an_offloaded_inference_continues_on_the_cpu_from_the_step_the_gpu_reached() {
    let (mut c, id) = coordinator(vec![StepCost::gpu_and_cpu(10.0, 1.0); 10], None);
    let d = move_at_150(&mut c, id, 25.0, 0..2, collapse);
    assert!(d.gpu.is_empty(), "{d:?}");
    assert_eq!(d.cpu.len(), 1);
    assert_eq!(d.cpu[0].ops, 2..10);
    assert_eq!(d.cpu[0].resume, Resume::FromGpu);
    assert!(d.cpu[0].offloaded);
    assert_eq!(d.cpu[0].threads, 1);
    assert!((d.cpu[0].est_ms - 8.0).abs() < 1e-9);
    assert_eq!(c.status(id, 150.0).resumed_from_gpu, 1);
    let done = c.cpu_done(d.cpu[0].id, 0, 150.0, 158.0).unwrap();
    assert!(done.offloaded);
    c.submit(id, Request::default(), 160.0);
    let d = c.schedule(160.0, Event::Request, window(160.0), 2);
    assert_eq!(
        (d.cpu[0].ops.clone(), d.cpu[0].resume),
        (0..10, Resume::Input)
    );
    assert!(c.cpu_done(d.cpu[0].id, 0, 160.0, 170.0).is_some());
    c.submit(id, Request::default(), 180.0);
    let d = c.schedule(180.0, Event::Request, window(180.0), 1);
    assert_eq!(
        (d.cpu[0].ops.clone(), d.cpu[0].resume),
        (0..8, Resume::Input)
    );
    assert!(c.cpu_done(d.cpu[0].id, 0, 180.0, 188.0).is_none());
    let d = c.schedule(188.0, Event::CpuWorkDone, window(188.0), 1);
    assert_eq!(
        (d.cpu[0].ops.clone(), d.cpu[0].resume),
        (8..10, Resume::FromCpu)
    );
    assert!(c.cpu_done(d.cpu[0].id, 0, 188.0, 190.0).is_some());
}

/// Ten steps of 1 ms on the GPU and 5 ms on the CPU, deadline 61 ms: 28 ms a run at first (10 ms
/// at 29.33 of every 33.33 plus half a frame). The first window (until 9 ms) takes steps 0..8;
/// then the scene grows until the frames leave 7 ms: 64.3 ms a run, late, and the CPU's 50 ms
/// meet the deadline with the margin, so the model moves. Its running inference has 2 ms of GPU
/// left (9.5 ms at 7 of every 33.33 ms), sooner than the CPU's 10 ms: it finishes on the GPU;
/// the next one starts on the CPU.
#[test]
fn an_offloaded_inference_finishes_on_the_gpu_when_that_is_sooner() {
    let (mut c, id) = coordinator(vec![StepCost::gpu_and_cpu(1.0, 5.0); 10], Some(61.0));
    let d = move_at_150(&mut c, id, 9.0, 0..8, |c| shrink(c, 7.0));
    let s = c.status(id, 150.0);
    assert_eq!(s.finished_on_gpu_after_offload, 1);
    assert!(d.cpu.is_empty(), "{d:?}");
    assert_eq!(d.gpu[0].ops, 8..10);
    let done = c.gpu_done(d.gpu[0].id, 150.0, 152.0).unwrap();
    assert!(!done.offloaded);
    c.submit(id, Request::default(), 160.0);
    let d = c.schedule(160.0, Event::Request, window(160.0), 2);
    assert!(d.gpu.is_empty());
    assert_eq!(
        (d.cpu[0].ops.clone(), d.cpu[0].resume),
        (0..10, Resume::Input)
    );
}

/// A caller that cannot resume from the GPU's activations (`offload_resumes_from_gpu` off, as
/// the Bevy plugin without resumable steps): the first case's inference restarts on the CPU from
/// its input, and is not counted as resumed.
#[test]
fn without_resuming_an_offloaded_inference_restarts_on_the_cpu_from_its_input() {
    let (mut c, id) = coordinator_resuming(vec![StepCost::gpu_and_cpu(10.0, 1.0); 10], None, false);
    let d = move_at_150(&mut c, id, 25.0, 0..2, collapse);
    assert!(d.gpu.is_empty(), "{d:?}");
    assert_eq!(
        (d.cpu[0].ops.clone(), d.cpu[0].resume),
        (0..10, Resume::Input)
    );
    assert!((d.cpu[0].est_ms - 10.0).abs() < 1e-9);
    assert_eq!(c.status(id, 150.0).resumed_from_gpu, 0);
}

/// The second case with 1 ms CPU steps: resuming, the CPU's 2 ms beat the GPU's 9.5 ms and the
/// inference continues there; without resuming, the CPU would need 10 ms, so the inference
/// finishes on the GPU: the GPU's work is kept either way.
#[test]
fn without_resuming_the_switch_weighs_the_whole_cpu_run() {
    for resumes in [true, false] {
        let (mut c, id) = coordinator_resuming(
            vec![StepCost::gpu_and_cpu(1.0, 1.0); 10],
            Some(61.0),
            resumes,
        );
        let d = move_at_150(&mut c, id, 9.0, 0..8, |c| shrink(c, 7.0));
        let s = c.status(id, 150.0);
        if resumes {
            assert_eq!(d.cpu[0].ops, 8..10, "{d:?}");
            assert_eq!(d.cpu[0].resume, Resume::FromGpu);
            assert_eq!(s.finished_on_gpu_after_offload, 0);
        } else {
            assert!(d.cpu.is_empty(), "{d:?}");
            assert_eq!(d.gpu[0].ops, 8..10);
            assert_eq!(s.finished_on_gpu_after_offload, 1);
        }
    }
}

/// Back to the GPU: the scene shrinks again after the collapse; the model stays on the CPU for
/// its dwell time (1 s from its move at 150 ms), then returns at the next regular re-plan (every
/// 250 ms), the GPU having room for it.
#[test]
fn a_model_comes_back_when_the_gpu_can_have_it() {
    let (mut c, id) = coordinator(vec![StepCost::gpu_and_cpu(2.0, 1.0); 10], None);
    let d = move_at_150(&mut c, id, 25.0, 0..10, collapse);
    assert!(d.cpu.is_empty() && d.gpu.is_empty(), "{d:?}");
    for _ in 0..60 {
        c.observe_render(3.0);
    }
    let mut now = 200.0;
    let mut back = None;
    while now < 3000.0 && back.is_none() {
        c.submit(id, Request::default(), now);
        let d = c.schedule(now, Event::FrameRendered, window(now), 2);
        for w in d.cpu {
            c.cpu_done(w.id, 0, now, now + w.est_ms);
        }
        for g in d.gpu {
            c.gpu_done(g.id, now, now + g.est_ms);
        }
        if c.status(id, now).mode == Processor::Gpu {
            back = Some(now);
        }
        now += PERIOD;
    }
    let back = back.expect("back on the GPU");
    assert!(
        (1150.0..1150.0 + 250.0 + PERIOD).contains(&back),
        "back at {back}"
    );
    assert_eq!(c.status(id, now).mode_switches, 2);
}

/// A light DNN (20 ms of GPU work every 500 ms, 15 ms on the CPU) on an idle GPU, requested
/// 25 ms into a frame (7 ms of the frame's budget left): its latency (the rest of the frame, the
/// next render and its 20 ms) exceeds 1.2 x its CPU time, so the paper's rule
/// alone moves it to the CPU (what made the emoji app run face detection on the CPU); with
/// "GPU first" it stays. Forcing the GPU to count as saturated shows the rule would fire here.
#[test]
fn a_light_model_stays_on_an_idle_gpu() {
    let d = DnnScenario {
        name: "face".into(),
        gpu_op_ms: vec![2.0; 10],
        cpu_op_ms: vec![1.5; 10],
        cpu_only_ops: vec![],
        resumable_steps: None,
        request: RequestPattern {
            period_ms: Some(500.0),
            start_ms: Some(25.0),
            events_ms: None,
        },
        deadline_ms: None,
        cpu_threads: 1,
        cpu_speedup: 1.0,
        on_demand: None,
        conv_cache: None,
        utility: UtilityParams::default(),
        priority: None,
        content_variation: vec![],
    };
    let sc = Scenario {
        frame_rate: 30.0,
        render_ms: 3.0,
        duration_s: 10.0,
        cpu_workers: 2,
        chunk_overhead_ms: 0.05,
        budget_margin_ms: 1.0,
        relaxation_ms: 5.0,
        alpha: 0.01,
        decisions: Default::default(),
        render_estimate_ms: None,
        dnn_work_first: false,
        results_at_frame_start: false,
        readback_ms: 0.0,
        cpu_dispatch_on_completion: false,
        cpu_lend_ms: None,
        cpu_chunk_ms: None,
        dnns: vec![d],
    };
    let r = simulate_with(&sc, "max_total_utility", false, |_| {})
        .unwrap()
        .report;
    assert!(r.dnns[0].latency_ms.max > 1.2 * 15.0, "{:?}", r.dnns[0]);
    assert_eq!(r.dnns[0].offload_switches, 0);
    let r = simulate_with(&sc, "max_total_utility", false, |c| {
        c.placement.gpu_saturation = 0.0
    })
    .unwrap()
    .report;
    assert!(r.dnns[0].offload_switches >= 1, "{:?}", r.dnns[0]);
}

#[test]
fn ablation_switches_parse_and_apply() {
    for a in Ablation::ALL {
        assert_eq!(Ablation::parse(a.name()), Some(a));
        let mut cfg = CoordinatorConfig::new(FrameBudget::new(30.0, 3.0, 1.0, 5.0));
        a.apply(&mut cfg);
        let want = match a {
            Ablation::Both => (true, true),
            Ablation::ChunkingOnly => (true, false),
            Ablation::OffloadOnly => (false, true),
            Ablation::Neither => (false, false),
        };
        assert_eq!((cfg.chunking, cfg.placement.enabled), want);
    }
    assert_eq!(Ablation::parse("chunks"), None);
}

/// The shopping app under the four variants. Chunking only: no model moves (YOLO-v2 stays on
/// the GPU). Offload only: GPU work goes in whole runs (DeepLab-v3, which has no CPU step, runs
/// as one 207 ms dispatch) and frames are lost. Both: frames kept.
#[test]
fn ablation_variants_on_the_shopping_app() {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../assets/scenarios/immersive_shopping.json");
    let sc = Scenario::from_file(&path).unwrap();
    let run = |a: Ablation| simulate_with(&sc, "max_total_utility", true, |c| a.apply(c)).unwrap();
    let both = run(Ablation::Both);
    let chunking = run(Ablation::ChunkingOnly);
    let offload = run(Ablation::OffloadOnly);
    let neither = run(Ablation::Neither);
    for (name, o) in [
        ("both", &both),
        ("chunking", &chunking),
        ("offload", &offload),
        ("neither", &neither),
    ] {
        let r = &o.report;
        eprintln!(
            "{name}: on time {:.4}, {}",
            r.frames.on_time_rate,
            r.dnns
                .iter()
                .map(|d| format!(
                    "{} {} done, max {:.0} ms, {} switches",
                    d.name, d.completed, d.latency_ms.max, d.offload_switches
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    assert!(chunking.report.dnns.iter().all(|d| d.offload_switches == 0));
    assert!(neither.report.dnns.iter().all(|d| d.offload_switches == 0));
    assert!(both.report.dnn("yolo_v2").unwrap().offload_switches >= 1);
    let deeplab_chunks: Vec<String> = offload
        .timeline
        .events()
        .filter(|e| e.category == "chunk" && e.name == "deeplab_v3")
        .map(|e| e.args[0].1.clone())
        .collect();
    assert!(!deeplab_chunks.is_empty());
    assert!(
        deeplab_chunks.iter().all(|o| o == "0..101"),
        "{deeplab_chunks:?}"
    );
    assert!(both.report.frames.on_time_rate >= 0.995);
    assert!(chunking.report.frames.on_time_rate >= 0.995);
    assert!(offload.report.frames.on_time_rate < 0.9);
    assert!(neither.report.frames.on_time_rate < 0.9);
}

/// A device behind the frame rate: the queued work runs past every next render, so no window
/// has room. Ten 10 ms steps, deadline 100 ms, the offload off (no worker to move to). A closed
/// frame or two (after an oversized step) get nothing, so they stay on time; from the third
/// closed frame in a row, the overdue job gets one step per frame, and it finishes. Before, it
/// never got a step on such a device (the workspace app's hand landmarks on lavapipe at 30 fps:
/// palms found, no landmark result in 8 s).
#[test]
fn an_overdue_job_progresses_on_a_device_behind_the_frame_rate() {
    let (mut c, id) = coordinator(vec![StepCost::gpu_and_cpu(10.0, 50.0); 10], Some(100.0));
    c.submit(id, Request::default(), 0.0);
    let period = 1000.0 / 30.0;
    let mut steps = 0;
    let mut first = None;
    for f in 0..40 {
        let now = 150.0 + f as f64 * period;
        // The GPU is busy until 10 ms after the next render.
        let w = GpuWindow {
            start_ms: now + period + 10.0,
            end_ms: now + period,
        };
        let d = c.schedule(now, Event::FrameRendered, w, 0);
        assert!(d.gpu.len() <= 1, "frame {f}: {d:?}");
        for g in &d.gpu {
            assert_eq!(g.ops.len(), 1, "one step at a time: {g:?}");
            first.get_or_insert(f);
            steps += 1;
            c.gpu_done(g.id, now, now + 10.0);
        }
    }
    assert_eq!(first, Some(2), "the first step in the third closed frame");
    assert_eq!(steps, 10, "the whole inference");
    assert_eq!(c.status(id, 2000.0).mode, Processor::Gpu);
}

/// Resumable steps per model (`set_resumable_steps`, e.g. the GPU model's `resumable_steps()`)
/// decide where the switch of `without_resuming_the_switch_weighs_the_whole_cpu_run` goes, over
/// the configuration's flag: the GPU ran steps 0..8; with boundary 8 listed the inference
/// continues on the CPU from it (2 ms, sooner than the GPU's 9.5 ms) even with the flag off;
/// with 8 left out (a boundary the CPU's fusions make unresumable) it finishes on the GPU even
/// with the flag on; `None` gives the flag back.
#[test]
fn resumable_steps_per_model_decide_over_the_flag() {
    for (flag, steps, resumes) in [
        (false, Some(vec![0, 4, 8, 10]), true),
        (true, Some(vec![0, 4, 7, 9, 10, 99]), false),
        (false, None, false),
        (true, None, true),
    ] {
        let (mut c, id) =
            coordinator_resuming(vec![StepCost::gpu_and_cpu(1.0, 1.0); 10], Some(61.0), flag);
        c.set_resumable_steps(id, steps.as_deref());
        let d = move_at_150(&mut c, id, 9.0, 0..8, |c| shrink(c, 7.0));
        let s = c.status(id, 150.0);
        let case = format!("flag {flag}, steps {steps:?}: {d:?}");
        if resumes {
            assert_eq!(d.cpu[0].ops, 8..10, "{case}");
            assert_eq!(d.cpu[0].resume, Resume::FromGpu, "{case}");
            assert_eq!(s.resumed_from_gpu, 1, "{case}");
        } else {
            assert!(d.cpu.is_empty(), "{case}");
            assert_eq!(d.gpu[0].ops, 8..10, "{case}");
            assert_eq!(s.finished_on_gpu_after_offload, 1, "{case}");
        }
    }
}

/// Where restarting on the CPU is sooner than finishing on the GPU (no GPU budget left), an
/// unlisted boundary restarts the inference from its input, a listed one continues from it.
#[test]
fn an_unresumable_boundary_restarts_from_the_input() {
    for (steps, ops, resume) in [
        (vec![0, 10], 0..10, Resume::Input),
        (vec![0, 2, 10], 2..10, Resume::FromGpu),
    ] {
        let (mut c, id) =
            coordinator_resuming(vec![StepCost::gpu_and_cpu(10.0, 1.0); 10], None, true);
        c.set_resumable_steps(id, Some(&steps));
        let d = move_at_150(&mut c, id, 25.0, 0..2, collapse);
        assert!(d.gpu.is_empty(), "{d:?}");
        assert_eq!(
            (d.cpu[0].ops.clone(), d.cpu[0].resume),
            (ops, resume),
            "{steps:?}"
        );
    }
}

/// A model the caller replaced (the plugin's f16 guard registers the checked model under a new
/// id) counts in no load once retired. One CPU slot (0.85 usable) and two CPU-only models of
/// 6 ms every 10 ms (0.6 slot each): together they fall short (the CPU full); with the old one
/// retired the new one runs at its rate, and the plan lists only it.
#[test]
fn a_retired_model_holds_no_place_on_the_cpu() {
    let mut cfg = CoordinatorConfig::new(FrameBudget::new(30.0, 3.0, 1.0, 0.0));
    cfg.cpu_workers = 1;
    let mut c = Coordinator::new(cfg, policy_by_name("max_total_utility").unwrap());
    let spec = || ModelSpec {
        name: "m".into(),
        steps: vec![StepCost::cpu_only(3.0); 2],
        utility: UtilityParams::default(),
        deadline_ms: None,
    };
    let old = c.register(spec());
    let new = c.register(spec());
    for k in 0..6 {
        let t = 10.0 * k as f64;
        c.submit(old, Request::default(), t);
        c.submit(new, Request::default(), t);
    }
    c.schedule(50.0, Event::Tick, window(50.0), 0);
    let s = c.status(new, 50.0).shortfall.expect("the CPU is full");
    assert_eq!(s.reason, ShortfallReason::CpuFull);
    c.retire(old);
    c.submit(new, Request::default(), 60.0);
    c.schedule(60.0, Event::Tick, window(60.0), 0);
    assert_eq!(c.status(new, 60.0).shortfall, None);
    assert_eq!(c.status(new, 60.0).granted_rate_hz, Some(100.0));
    assert_eq!(c.plan().entries.len(), 1);
    assert_eq!(c.plan().entries[0].model, new);
}
