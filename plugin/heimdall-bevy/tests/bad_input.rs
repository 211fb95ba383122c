//! Bad input gives a typed error and nothing else breaks: a truncated model file, a model the
//! camera cannot feed, a missing model file and a DNN without a camera run beside a healthy DNN,
//! which keeps delivering results.

mod common;

use bevy::asset::LoadState;
use bevy::prelude::*;
use heimdall_bevy::asset::{DnnModelSettings, import};
use heimdall_bevy::prelude::*;
use heimdall_ir::{DType, Graph, Op, OpKind, TensorId, TensorInfo, UnaryKind};

#[test]
fn truncated_and_garbage_model_bytes_are_typed_errors() {
    let path = common::assets_dir().join("models/face_detection_short_range.tflite");
    let bytes = std::fs::read(path).unwrap();
    let settings = DnnModelSettings::default();
    // (Not the last byte: a flatbuffer may end in padding, and then one byte less is still a
    // valid file.)
    for cut in [
        0,
        8,
        100,
        bytes.len() / 4,
        bytes.len() / 2,
        bytes.len() * 3 / 4,
    ] {
        let r = import(&bytes[..cut], "cut", Some("tflite".as_ref()), &settings);
        assert!(r.is_err(), "a model cut at {cut} bytes loaded");
    }
    let r = import(&[0xAB; 4096], "garbage", Some("onnx".as_ref()), &settings);
    assert!(r.is_err());
    assert!(import(&bytes, "ok", Some("tflite".as_ref()), &settings).is_ok());
}

/// A graph whose input is not an image (`[1, 10]`).
fn vector_graph() -> Graph {
    let t = |name: &str| TensorInfo {
        name: name.into(),
        shape: vec![1, 10],
        dtype: DType::F32,
        constant: None,
    };
    Graph {
        name: "vector".into(),
        tensors: vec![t("x"), t("y")],
        ops: vec![Op::new(
            OpKind::Unary(UnaryKind::Relu),
            vec![TensorId(0)],
            vec![TensorId(1)],
        )],
        inputs: vec![TensorId(0)],
        outputs: vec![TensorId(1)],
    }
}

#[test]
fn bad_dnns_fail_alone_and_the_healthy_one_keeps_running() {
    if common::no_render_device() {
        return;
    }
    let settings = HeimdallSettings {
        frame_rate: FrameRateTarget::Fixed(30.0),
        precision: heimdall_gpu::Precision::F32,
        force_cpu: common::skip_gpu(),
        offload: false,
        ..default()
    };
    let mut app = common::headless_app(settings);
    let dnns = spawn_dnns(&mut app);
    let Dnns {
        healthy,
        not_an_image,
        missing_file,
        cameraless,
        ..
    } = dnns;

    let healthy_results = |app: &App| {
        app.world()
            .resource::<common::Results>()
            .0
            .iter()
            .filter(|r| r.entity == healthy)
            .count()
    };
    // Settled: five results, and every DNN out of `Loading`/`Compiling` (the cameraless one
    // compiles on its own, and may still be at it when the first one has delivered on a busy
    // machine).
    let settled = |app: &App, e: Entity| {
        !matches!(
            app.world().get::<DnnStatus>(e),
            None | Some(DnnStatus::Loading) | Some(DnnStatus::Compiling)
        )
    };
    common::run_until(&mut app, std::time::Duration::from_secs(120), |app| {
        healthy_results(app) >= 5
            && [healthy, not_an_image, missing_file, cameraless]
                .iter()
                .all(|&e| settled(app, e))
    });
    assert!(
        healthy_results(&app) >= 5,
        "the healthy DNN stopped delivering"
    );
    let results = &app.world().resource::<common::Results>().0;
    for bad in [not_an_image, missing_file, cameraless] {
        assert!(
            results.iter().all(|r| r.entity != bad),
            "a broken DNN produced a result"
        );
    }
    check_failures(&app, &dnns);
}

/// The test's DNNs, and the model handle of the missing file.
struct Dnns {
    healthy: Entity,
    not_an_image: Entity,
    missing_file: Entity,
    cameraless: Entity,
    missing: Handle<DnnModel>,
}

/// Spawns a synthetic camera and the DNNs: the identity (healthy), a model whose input is not an
/// image, a missing model file, and the identity without a camera; collects `DnnFailed` events
/// in [`Failures`].
fn spawn_dnns(app: &mut App) -> Dnns {
    let camera = app.world_mut().spawn(common::synthetic_camera(64, 48)).id();
    let no_camera = app.world_mut().spawn_empty().id();
    let healthy_model = common::add_model(app, common::identity_graph(48, 64));
    let vector_model = common::add_model(app, vector_graph());
    app.init_resource::<Failures>()
        .add_observer(|f: On<DnnFailed>, mut all: ResMut<Failures>| all.0.push(f.entity));
    let missing = common::load_model(app, "models/does_not_exist.tflite");
    let healthy = app
        .world_mut()
        .spawn(Dnn::new(healthy_model.clone(), camera))
        .id();
    let not_an_image = app.world_mut().spawn(Dnn::new(vector_model, camera)).id();
    let missing_file = app
        .world_mut()
        .spawn(Dnn::new(missing.clone(), camera))
        .id();
    let cameraless = app
        .world_mut()
        .spawn(Dnn::new(healthy_model, no_camera))
        .id();
    Dnns {
        healthy,
        not_an_image,
        missing_file,
        cameraless,
        missing,
    }
}

/// The failures: the missing file (a failed asset load, its status naming the file) and the
/// model the camera cannot feed are failed with the reason, each announced once; the healthy
/// and the cameraless DNNs are ready.
fn check_failures(app: &App, dnns: &Dnns) {
    let Dnns {
        healthy,
        not_an_image,
        missing_file,
        cameraless,
        ref missing,
    } = *dnns;
    // The missing file is a failed asset load, and its DNN's status says so, naming the file.
    let state = app.world().resource::<AssetServer>().load_state(missing);
    assert!(matches!(state, LoadState::Failed(_)), "{state:?}");
    let status = |e: Entity| app.world().get::<DnnStatus>(e).cloned();
    match status(missing_file) {
        Some(DnnStatus::Failed(DnnError::Load(why))) => {
            assert!(why.contains("does_not_exist.tflite"), "{why}")
        }
        other => panic!("missing model: {other:?}"),
    }
    // The model the camera cannot feed is marked failed with the reason.
    match status(not_an_image) {
        Some(DnnStatus::Failed(DnnError::Input(why))) => {
            assert!(why.contains("[1, H, W, C"), "{why}")
        }
        other => panic!("vector model: {other:?}"),
    }
    // Each failure was announced once with a `DnnFailed` event.
    let failed = app.world().resource::<Failures>();
    for bad in [not_an_image, missing_file] {
        assert_eq!(
            failed.0.iter().filter(|e| **e == bad).count(),
            1,
            "{:?}",
            failed.0
        );
    }
    // The cameraless DNN compiled and waits for a frame (not failed).
    assert_eq!(status(healthy), Some(DnnStatus::Ready(expected_backend())));
    assert_eq!(
        status(cameraless),
        Some(DnnStatus::Ready(expected_backend()))
    );
}

/// Entities that got a `DnnFailed` event.
#[derive(Resource, Default)]
struct Failures(Vec<Entity>);

fn expected_backend() -> Backend {
    if common::skip_gpu() {
        Backend::Cpu
    } else {
        Backend::Gpu
    }
}
