//! An inference completes when its outputs are read back, not a frame later when the frame's
//! GPU timestamps come back: the model takes its next request at once, and the timestamps that
//! arrive afterwards still refine its profile without completing anything twice.

use heimdall_coordinator::analyzer::{FrameBudget, StepCost};
use heimdall_coordinator::{
    Coordinator, CoordinatorConfig, Event, GpuWindow, ModelSpec, Request, UtilityParams,
    policy_by_name,
};

/// 60 fps, 4 ms of scene, 1 ms margin: ~11.7 ms of room a frame, so the model's two 1 ms
/// steps run in the first frame (as one chunk).
fn coordinator() -> (Coordinator, heimdall_coordinator::ModelId) {
    let cfg = CoordinatorConfig::new(FrameBudget::new(60.0, 4.0, 1.0, 0.0));
    let mut c = Coordinator::new(cfg, policy_by_name("max_total_utility").unwrap());
    let id = c.register(ModelSpec {
        name: "hand".into(),
        steps: vec![StepCost::gpu_and_cpu(1.0, 10.0); 2],
        utility: UtilityParams::default(),
        deadline_ms: Some(50.0),
    });
    (c, id)
}

fn window(now: f64) -> GpuWindow {
    GpuWindow {
        start_ms: now,
        end_ms: now + 1000.0 / 60.0,
    }
}

#[test]
fn outputs_read_complete_the_inference_and_late_timestamps_only_measure() {
    let (mut c, id) = coordinator();
    c.submit(id, Request::default(), 0.0);
    let d = c.schedule(0.0, Event::FrameRendered, window(0.0), 0);
    let works: Vec<_> = d.gpu.iter().map(|g| g.id).collect();
    assert_eq!(d.gpu.iter().map(|g| g.ops.len()).sum::<usize>(), 2, "{d:?}");
    assert!(c.busy(id));

    // The outputs are read back at 3 ms: the inference completes then, with its latency.
    let done = c
        .gpu_outputs_read(id, 3.0)
        .expect("the inference completes");
    assert_eq!(done.finished_ms, 3.0);
    assert_eq!(done.deadline_met, Some(true));
    assert!(!c.busy(id), "free for the next request at once");
    // Nothing is left to complete for this model.
    assert!(c.gpu_outputs_read(id, 4.0).is_none());

    // The next request runs in the next frame.
    c.submit(id, Request::default(), 16.7);
    let d2 = c.schedule(16.7, Event::FrameRendered, window(16.7), 1);
    assert_eq!(
        d2.gpu.iter().map(|g| g.ops.len()).sum::<usize>(),
        2,
        "{d2:?}"
    );
    assert!(c.busy(id));

    // The first frame's timestamps arrive now: the steps took 4 ms, not the 2 ms profiled.
    // They complete nothing (the second job stays busy) and move the profile up.
    let before = c.profile(id).steps[0].gpu_ms;
    for &w in &works {
        assert!(c.gpu_done(w, 0.5, 4.5).is_none());
    }
    assert!(
        c.busy(id),
        "the second inference is not completed by the first's timestamps"
    );
    let after = c.profile(id).steps[0].gpu_ms;
    assert!(after > before, "profile {before} -> {after}");
    // Reported twice, a piece counts once.
    let again = c.profile(id).steps[0].gpu_ms;
    assert!(c.gpu_done(works[0], 0.5, 4.5).is_none());
    assert_eq!(c.profile(id).steps[0].gpu_ms, again);

    // The second inference completes with its own timestamps as before.
    let mut last = None;
    for g in &d2.gpu {
        last = c.gpu_done(g.id, 17.0, 18.0).or(last);
    }
    assert!(last.is_some() && !c.busy(id));
}
