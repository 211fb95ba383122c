//! GPU first, CPU when it helps: the offload decision by hand, a model that keeps what the GPU
//! computed, the ablation switches.

use heimdall_coordinator::offload::{GpuLoad, OffloadView, Switch, decide};
use heimdall_coordinator::sim::{DnnScenario, RequestPattern, Scenario, simulate_with};
use heimdall_coordinator::{
    Ablation, Coordinator, CoordinatorConfig, Decision, Event, FrameBudget, GpuWindow, ModelId,
    ModelSpec, Processor, Request, Resume, StepCost, UtilityParams, policy_by_name,
};

const M: f64 = 0.2;

fn view(model: usize, mode: Processor, l: Option<f64>, cpu: f64, dl: Option<f64>) -> OffloadView {
    OffloadView {
        model: ModelId(model),
        mode,
        gpu_latency_ms: l,
        expected_gpu_latency_ms: l.unwrap_or(100.0),
        cpu_latency_ms: cpu,
        deadline_ms: dl,
        gpu_demand: 0.1,
    }
}

/// Capacity 0.88 (29.3 of 33.3 ms); saturated from 0.9 * 0.88 = 0.792.
fn load(util: f64) -> GpuLoad {
    GpuLoad {
        util,
        capacity: 0.88,
        saturation: 0.9,
    }
}

const fn to(model: usize, p: Processor) -> Option<Switch> {
    Some(Switch {
        model: ModelId(model),
        to: p,
    })
}

#[test]
fn no_offload_while_the_gpu_meets_the_deadlines() {
    use Processor::{Cpu, Gpu};
    // Paper's rule alone: 100 * 1.2 < 300, offload. Ours: the GPU has slack and no deadline is
    // missed, so nothing moves.
    let v = [view(0, Gpu, Some(300.0), 100.0, None)];
    assert_eq!(decide(&v, M, 1, load(0.3)), None);
    // A saturated GPU with a model without deadline: as in the paper.
    assert_eq!(decide(&v, M, 1, load(0.8)), to(0, Cpu));
    // A deadline met on an unsaturated GPU: stays, however fast the CPU.
    let v = [view(0, Gpu, Some(500.0), 100.0, Some(600.0))];
    assert_eq!(decide(&v, M, 1, load(0.5)), None);
    // The same latency within the margin of the deadline (500 * 1.2 = 600 is not > 600)...
    assert_eq!(decide(&v, M, 1, load(0.85)), None);
    // ... and beyond it on a saturated GPU (510 * 1.2 = 612 > 600): at risk, moves.
    let v = [view(0, Gpu, Some(510.0), 100.0, Some(600.0))];
    assert_eq!(decide(&v, M, 1, load(0.85)), to(0, Cpu));
}

#[test]
fn a_missed_deadline_moves_the_slowest_model_the_cpu_serves_in_time() {
    use Processor::{Cpu, Gpu};
    // PoseNet misses 600 ms but its CPU time (768 * 1.2 = 922) does not help it; EAST (1400 ms
    // against 1500) moves: 632 * 1.2 = 758 < 1400 and <= 1500 (the workspace app, sec. 9.5).
    let v = [
        view(0, Gpu, Some(700.0), 768.0, Some(600.0)),
        view(1, Gpu, Some(1400.0), 632.0, Some(1500.0)),
    ];
    assert_eq!(decide(&v, M, 1, load(0.5)), to(1, Cpu));
    // No worker to spare: nothing moves.
    assert_eq!(decide(&v, M, 0, load(0.5)), None);
    // A CPU that would miss the model's own deadline (1300 * 1.2 = 1560 > 1500) is no help.
    let v = [
        view(0, Gpu, Some(700.0), 768.0, Some(600.0)),
        view(1, Gpu, Some(1400.0), 1300.0, Some(1500.0)),
    ];
    assert_eq!(decide(&v, M, 1, load(0.5)), None);
}

#[test]
fn a_model_comes_back_when_the_gpu_can_have_it() {
    use Processor::{Cpu, Gpu};
    // On the CPU at 450 ms (not 1.2 x slower than its expected 400 ms on the GPU), deadline
    // 1500 (400 * 1.2 <= 1500): the GPU is not saturated with its demand (0.5 + 0.1 < 0.792)
    // and nobody is late: back ("GPU first").
    let back = |util: f64, others_late: bool| {
        let mut v = vec![view(0, Cpu, Some(400.0), 450.0, Some(1500.0))];
        v.push(view(
            1,
            Gpu,
            Some(if others_late { 700.0 } else { 300.0 }),
            2000.0,
            Some(600.0),
        ));
        decide(&v, M, 1, load(util))
    };
    assert_eq!(back(0.5, false), to(0, Gpu));
    // 0.7 + 0.1 >= 0.792: it would saturate the GPU.
    assert_eq!(back(0.7, false), None);
    // Another model is late: stays.
    assert_eq!(back(0.5, true), None);
    // Without a deadline, only when the GPU is faster by the margin (paper): 600 > 1.2 * 400.
    let v = [view(0, Cpu, Some(400.0), 600.0, None)];
    assert_eq!(decide(&v, M, 1, load(0.7)), to(0, Gpu));
    let v = [view(0, Cpu, Some(550.0), 600.0, None)];
    assert_eq!(decide(&v, M, 1, load(0.7)), None);
}

fn coordinator(steps: Vec<StepCost>, deadline: f64) -> (Coordinator, ModelId) {
    coordinator_resuming(steps, deadline, true)
}

/// [`coordinator`], resuming offloaded inferences from the GPU's activations or not.
fn coordinator_resuming(
    steps: Vec<StepCost>,
    deadline: f64,
    resumes: bool,
) -> (Coordinator, ModelId) {
    // 30 fps, render 3 ms, margin 1, no relaxation: budget 29.33 ms.
    let mut cfg = CoordinatorConfig::new(FrameBudget::new(30.0, 3.0, 1.0, 0.0));
    cfg.placement.min_dwell_ms = 100.0;
    cfg.offload_resumes_from_gpu = resumes;
    let mut c = Coordinator::new(cfg, policy_by_name("max_total_utility").unwrap());
    let id = c.register(ModelSpec {
        name: "m".into(),
        steps,
        utility: UtilityParams::default(),
        deadline_ms: Some(deadline),
    });
    (c, id)
}

/// Ten steps of 10 ms on the GPU and 1 ms on the CPU, deadline 100 ms. The first window (GPU
/// free until 25 ms, margin 1) takes steps 0..2. At 150 ms the job is 150 ms old (> 100): the
/// offload moves the model; continuing on the CPU (8 ms) is sooner than on the GPU (80 ms of
/// steps at 29.33 of every 33.33 ms: 90.9 ms), so the CPU gets steps 2..10 from the GPU's
/// activations, not the whole model again.
#[test]
fn an_offloaded_inference_continues_on_the_cpu_from_the_step_the_gpu_reached() {
    let (mut c, id) = coordinator(vec![StepCost::gpu_and_cpu(10.0, 1.0); 10], 100.0);
    c.submit(id, Request::default(), 0.0);
    let w = GpuWindow {
        start_ms: 0.0,
        end_ms: 25.0,
    };
    let d = c.schedule(0.0, Event::FrameRendered, w, 2);
    assert_eq!(d.gpu.len(), 1);
    assert_eq!(d.gpu[0].ops, 0..2);
    assert!(d.cpu.is_empty());
    assert!(c.gpu_done(d.gpu[0].id, 0.0, 20.0).is_none());
    let w = GpuWindow {
        start_ms: 150.0,
        end_ms: 183.3,
    };
    let d = c.schedule(150.0, Event::FrameRendered, w, 2);
    assert_eq!(c.status(id, 150.0).mode, Processor::Cpu);
    assert!(d.gpu.is_empty(), "{d:?}");
    assert_eq!(d.cpu.len(), 1);
    assert_eq!(d.cpu[0].ops, 2..10);
    assert_eq!(d.cpu[0].resume, Resume::FromGpu);
    assert!(d.cpu[0].offloaded);
    assert!((d.cpu[0].est_ms - 8.0).abs() < 1e-9);
    assert_eq!(c.status(id, 150.0).resumed_from_gpu, 1);
    let done = c.cpu_done(d.cpu[0].id, 0, 150.0, 158.0).unwrap();
    assert!(done.offloaded);
    // The next inference starts on the CPU from the input.
    c.submit(id, Request::default(), 160.0);
    let d = c.schedule(160.0, Event::Request, w, 2);
    assert_eq!(d.cpu[0].ops, 0..10);
    assert_eq!(d.cpu[0].resume, Resume::Input);
}

/// Ten steps of 1 ms on the GPU and 6 ms on the CPU, deadline 100 ms. The first window (GPU
/// free until 9 ms, margin 1) takes steps 0..8. At 150 ms the job is late and the model moves
/// (60 * 1.2 = 72 < 150, <= 100), but finishing on the GPU (2 ms of steps: 2.27 ms) is sooner
/// than on the CPU (12 ms): the running inference finishes on the GPU, the next one starts on the
/// CPU.
#[test]
fn an_offloaded_inference_finishes_on_the_gpu_when_that_is_sooner() {
    let (mut c, id) = coordinator(vec![StepCost::gpu_and_cpu(1.0, 6.0); 10], 100.0);
    c.submit(id, Request::default(), 0.0);
    let w = GpuWindow {
        start_ms: 0.0,
        end_ms: 9.0,
    };
    let d = c.schedule(0.0, Event::FrameRendered, w, 2);
    assert_eq!(d.gpu[0].ops, 0..8);
    c.gpu_done(d.gpu[0].id, 0.0, 8.0);
    let w = GpuWindow {
        start_ms: 150.0,
        end_ms: 183.3,
    };
    let d = c.schedule(150.0, Event::FrameRendered, w, 2);
    let s = c.status(id, 150.0);
    assert_eq!(s.mode, Processor::Cpu);
    assert_eq!(s.finished_on_gpu_after_offload, 1);
    assert!(d.cpu.is_empty(), "{d:?}");
    assert_eq!(d.gpu[0].ops, 8..10);
    let done = c.gpu_done(d.gpu[0].id, 150.0, 152.0).unwrap();
    assert!(!done.offloaded);
    c.submit(id, Request::default(), 160.0);
    let d = c.schedule(160.0, Event::Request, w, 2);
    assert!(d.gpu.is_empty());
    assert_eq!(d.cpu[0].ops, 0..10);
    assert_eq!(d.cpu[0].resume, Resume::Input);
}

/// Submits one inference at 0 ms, runs the first window (`0..first_end` ms) on the GPU, which
/// must take `first_ops`, and schedules the frame at 150 ms, when the job is late and the model
/// moves to the CPU: that frame's decision.
fn offload_at_150(
    c: &mut Coordinator,
    id: ModelId,
    first_end: f64,
    first_ops: std::ops::Range<usize>,
) -> Decision {
    c.submit(id, Request::default(), 0.0);
    let w = GpuWindow {
        start_ms: 0.0,
        end_ms: first_end,
    };
    let d = c.schedule(0.0, Event::FrameRendered, w, 2);
    assert_eq!(d.gpu[0].ops, first_ops);
    c.gpu_done(d.gpu[0].id, 0.0, first_end - 1.0);
    let w = GpuWindow {
        start_ms: 150.0,
        end_ms: 183.3,
    };
    let d = c.schedule(150.0, Event::FrameRendered, w, 2);
    assert_eq!(c.status(id, 150.0).mode, Processor::Cpu);
    d
}

/// A caller that cannot resume from the GPU's activations (`offload_resumes_from_gpu` off, as
/// the Bevy plugin): the first test's inference restarts on the CPU from its input (10 ms on the
/// CPU, still sooner than the GPU's 90.9 ms), and is not counted as resumed.
#[test]
fn without_resuming_an_offloaded_inference_restarts_on_the_cpu_from_its_input() {
    let (mut c, id) =
        coordinator_resuming(vec![StepCost::gpu_and_cpu(10.0, 1.0); 10], 100.0, false);
    let d = offload_at_150(&mut c, id, 25.0, 0..2);
    assert!(d.gpu.is_empty(), "{d:?}");
    assert_eq!(d.cpu[0].ops, 0..10);
    assert_eq!(d.cpu[0].resume, Resume::Input);
    assert!((d.cpu[0].est_ms - 10.0).abs() < 1e-9);
    assert_eq!(c.status(id, 150.0).resumed_from_gpu, 0);
}

/// Ten steps of 1 ms on the GPU and 1 ms on the CPU; the GPU ran steps 0..8 when the model moves.
/// Resuming, the CPU's 2 ms beat the GPU's 2.27 ms and the inference continues there; without
/// resuming, the CPU would need 10 ms, so the inference finishes on the GPU: the GPU's work is
/// kept either way.
#[test]
fn without_resuming_the_switch_weighs_the_whole_cpu_run() {
    for resumes in [true, false] {
        let (mut c, id) =
            coordinator_resuming(vec![StepCost::gpu_and_cpu(1.0, 1.0); 10], 100.0, resumes);
        let d = offload_at_150(&mut c, id, 9.0, 0..8);
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
    let (mut c, id) = coordinator(vec![StepCost::gpu_and_cpu(10.0, 50.0); 10], 100.0);
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
/// continues on the CPU from it (2 ms, sooner than the GPU's 2.27 ms) even with the flag off;
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
            coordinator_resuming(vec![StepCost::gpu_and_cpu(1.0, 1.0); 10], 100.0, flag);
        c.set_resumable_steps(id, steps.as_deref());
        let d = offload_at_150(&mut c, id, 9.0, 0..8);
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

/// Where restarting on the CPU is sooner than finishing on the GPU (the GPU's steps 10 ms each,
/// the CPU's 1 ms), an unlisted boundary restarts the inference from its input, a listed one
/// continues from it.
#[test]
fn an_unresumable_boundary_restarts_from_the_input() {
    for (steps, ops, resume) in [
        (vec![0, 10], 0..10, Resume::Input),
        (vec![0, 2, 10], 2..10, Resume::FromGpu),
    ] {
        let (mut c, id) =
            coordinator_resuming(vec![StepCost::gpu_and_cpu(10.0, 1.0); 10], 100.0, true);
        c.set_resumable_steps(id, Some(&steps));
        let d = offload_at_150(&mut c, id, 25.0, 0..2);
        assert!(d.gpu.is_empty(), "{d:?}");
        assert_eq!(
            (d.cpu[0].ops.clone(), d.cpu[0].resume),
            (ops, resume),
            "{steps:?}"
        );
    }
}

/// A model the caller replaced (the plugin's f16 guard registers the checked model under a new
/// id) gives its place on the CPU up once retired. One CPU worker: the old model was offloaded;
/// the new one is as late at 350 ms, and moves to the CPU only if the old one was retired.
#[test]
fn a_retired_model_holds_no_place_on_the_cpu() {
    for retire in [false, true] {
        let mut cfg = CoordinatorConfig::new(FrameBudget::new(30.0, 3.0, 1.0, 0.0));
        cfg.placement.min_dwell_ms = 100.0;
        cfg.cpu_workers = 1;
        let mut c = Coordinator::new(cfg, policy_by_name("max_total_utility").unwrap());
        let spec = || ModelSpec {
            name: "m".into(),
            steps: vec![StepCost::gpu_and_cpu(10.0, 1.0); 10],
            utility: UtilityParams::default(),
            deadline_ms: Some(100.0),
        };
        let old = c.register(spec());
        let d = offload_at_150(&mut c, old, 25.0, 0..2);
        assert!(c.cpu_done(d.cpu[0].id, 0, 150.0, 158.0).is_some());
        let new = c.register(spec());
        if retire {
            c.retire(old);
            c.submit(old, Request::default(), 199.0);
            assert!(!c.busy(old), "a retired model takes no request");
        }
        c.submit(new, Request::default(), 200.0);
        let w = GpuWindow {
            start_ms: 200.0,
            end_ms: 225.0,
        };
        let d = c.schedule(200.0, Event::FrameRendered, w, 1);
        assert_eq!(d.gpu[0].ops, 0..2);
        c.gpu_done(d.gpu[0].id, 200.0, 224.0);
        let w = GpuWindow {
            start_ms: 350.0,
            end_ms: 383.3,
        };
        let d = c.schedule(350.0, Event::FrameRendered, w, 1);
        let mode = c.status(new, 350.0).mode;
        if retire {
            assert_eq!(mode, Processor::Cpu, "{d:?}");
            assert_eq!(d.cpu[0].ops, 2..10);
        } else {
            assert_eq!(
                mode,
                Processor::Gpu,
                "the old model holds the one place: {d:?}"
            );
        }
    }
}
