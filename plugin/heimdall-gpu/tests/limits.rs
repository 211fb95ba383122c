//! A phone's limits, known before compiling (`heimdall_gpu::check_limits`, docs/mobile-limits.md):
//! on a device held to Android's baseline (`DeviceProfile::Mobile`: 4 storage buffers per shader
//! stage, no timestamp queries) the check names every op of a MediaPipe model whose kernels bind
//! more buffers than that, and the compile fails with the same typed error; a model within the
//! limits compiles, matches the CPU backend, and is profiled from the wall clock (no
//! timestamps). On a typical phone's device (`MobileTypical`, 8 buffers) the same model passes.

mod common;

use heimdall_gpu::limits::Limit;
use heimdall_gpu::{
    DeviceProfile, GpuContext, GpuError, GpuModel, GpuOptions, Precision, TimingSource,
    check_limits,
};
use heimdall_ir::{BinaryFn, Epilogue, OpKind, UnaryKind};

/// An own device of `profile` on the test adapter, or `None` when GPU tests are skipped.
fn device(profile: DeviceProfile) -> Option<GpuContext> {
    common::gpu()?;
    Some(
        pollster::block_on(GpuContext::create_with(profile))
            .unwrap_or_else(|e| panic!("{profile:?}: {e}")),
    )
}

fn face_detector() -> heimdall_ir::Graph {
    let path = heimdall_testkit::model_path("face_detection_short_range").expect("the model");
    heimdall::load(&path, heimdall::LoadOptions::default())
        .expect("loads")
        .graph
}

#[test]
fn ops_over_a_phones_limits_are_known_before_compiling() {
    let Some(ctx) = device(DeviceProfile::Mobile) else {
        return;
    };
    let allows = ctx.limits.max_storage_buffers_per_shader_stage;
    assert_eq!(allows, 4, "{}", ctx.describe());
    let graph = face_detector();
    let options = GpuOptions::new(Precision::F32);
    let start = std::time::Instant::now();
    let Err(GpuError::Limits(checked)) = check_limits(&ctx, &graph, &options) else {
        panic!("the check passed a model whose convolutions bind 5+ buffers");
    };
    let check_ms = start.elapsed().as_secs_f64() * 1e3;
    assert!(!checked.shortfalls.is_empty());
    for s in &checked.shortfalls {
        assert_eq!(s.limit, Limit::StorageBuffersPerStage, "{s}");
        assert!(s.needs > u64::from(allows), "{s}");
        assert_eq!(s.allows, u64::from(allows));
        assert!(
            s.name.contains("CONV"),
            "only convolutions bind 5+ buffers: {s}"
        );
    }
    let convs = graph
        .ops
        .iter()
        .filter(|o| matches!(o.kind, OpKind::Conv2d(_) | OpKind::DepthwiseConv2d { .. }))
        .count();
    assert!(
        checked.ops() * 2 >= convs,
        "{} of {convs} convolutions named",
        checked.ops()
    );
    eprintln!(
        "{} ops over the limits, known in {check_ms:.0} ms: {checked}",
        checked.ops()
    );
    // The compile fails with the same typed error, before anything is created on the device.
    match GpuModel::compile(&ctx, &graph, options.clone()) {
        Err(GpuError::Limits(e)) => assert_eq!(e, checked),
        other => panic!("compile: {:?}", other.map(|_| ())),
    }
    // A typical phone's device runs every kernel.
    let typical = device(DeviceProfile::MobileTypical).expect("a device");
    check_limits(&typical, &graph, &options).expect("within a typical phone's limits");
}

#[test]
fn a_model_within_a_phones_limits_runs_and_is_profiled_without_timestamps() {
    let Some(ctx) = device(DeviceProfile::Mobile) else {
        return;
    };
    assert!(
        !ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY),
        "the mobile profile has no timestamp queries: {}",
        ctx.describe()
    );
    let mut b = common::GraphBuilder::default();
    let x = b.input(&[1, 8, 12, 3]);
    let c = b.constant(&[1, 8, 12, 3], 7);
    let y = b.op(
        OpKind::Binary(BinaryFn::Add),
        vec![x, c],
        &[1, 8, 12, 3],
        Epilogue::default(),
    );
    let z = b.op(
        OpKind::Unary(UnaryKind::Relu),
        vec![y],
        &[1, 8, 12, 3],
        Epilogue::default(),
    );
    let graph = b.finish(vec![z]);
    let options = GpuOptions::new(Precision::F32);
    check_limits(&ctx, &graph, &options).expect("within the limits");
    let model = GpuModel::compile(&ctx, &graph, options).expect("compiles");
    let inputs = common::inputs_for(&graph, 3);
    let refs: Vec<&[f32]> = inputs.iter().map(Vec::as_slice).collect();
    let got = model.run(&refs).expect("runs");
    let want = common::run_cpu(&graph, &inputs);
    let err = heimdall_testkit::rel_l2(&got[0], &want[0]);
    assert!(err <= 1e-6, "rel-L2 {err:e} against the CPU backend");
    let profile = model.profile(&refs, 1, 3).expect("profiles");
    assert_eq!(profile.source, TimingSource::Submissions);
    assert_eq!(profile.steps.len(), 2);
    assert!(
        profile.steps.iter().all(|d| !d.is_zero()),
        "every step timed on the wall clock: {:?}",
        profile.steps
    );
}

/// A desktop device held to the phone's profile (`GpuContext::held_to`, what the Bevy plugin does
/// on a renderer's device) checks a model as the phone's own device does.
#[test]
fn a_device_held_to_a_phones_profile_checks_as_the_phone() {
    let Some(phone) = device(DeviceProfile::Mobile) else {
        return;
    };
    let held = common::gpu()
        .expect("a device")
        .ctx
        .clone()
        .held_to(DeviceProfile::Mobile);
    assert_eq!(held.limits.max_storage_buffers_per_shader_stage, 4);
    assert_eq!(held.limits.max_compute_invocations_per_workgroup, 128);
    assert!(!held.features.contains(wgpu::Features::TIMESTAMP_QUERY));
    assert!(!held.has_f16());
    let graph = face_detector();
    let options = GpuOptions::new(Precision::F32);
    match (
        check_limits(&phone, &graph, &options),
        check_limits(&held, &graph, &options),
    ) {
        (Err(GpuError::Limits(a)), Err(GpuError::Limits(b))) => assert_eq!(a, b),
        other => panic!("{other:?}"),
    }
}
