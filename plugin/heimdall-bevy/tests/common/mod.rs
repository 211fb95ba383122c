//! Shared helpers of the plugin tests: a headless app driven by `update()`, tiny graphs, and
//! the example binary built by `cargo test`.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use bevy::app::PluginsState;
use bevy::prelude::*;
use bevy::window::ExitCondition;
use bevy::winit::WinitPlugin;
use heimdall_bevy::prelude::*;
use heimdall_ir::{DType, Graph, Op, OpKind, TensorId, TensorInfo, UnaryKind};

/// Whether GPU tests are skipped (`HEIMDALL_SKIP_GPU=1`).
pub fn skip_gpu() -> bool {
    std::env::var("HEIMDALL_SKIP_GPU").is_ok_and(|v| v == "1")
}

/// The workspace's `assets/`.
pub fn assets_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../assets"))
}

/// A headless app with the plugin, ready for `update()`.
pub fn headless_app(settings: HeimdallSettings) -> App {
    let mut app = App::new();
    app.add_plugins((
        DefaultPlugins
            .set(AssetPlugin {
                file_path: assets_dir().to_string_lossy().into_owned(),
                ..default()
            })
            .set(WindowPlugin {
                primary_window: None,
                exit_condition: ExitCondition::DontExit,
                ..default()
            })
            .disable::<WinitPlugin>(),
        HeimdallPlugin::new(settings),
    ));
    while app.plugins_state() == PluginsState::Adding {
        bevy::tasks::tick_global_task_pools_on_main_thread();
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    app.finish();
    app.cleanup();
    app
}

/// `relu(x)` on a `[1, h, w, 3]` input: the identity on camera pixels in [0, 1].
pub fn identity_graph(h: usize, w: usize) -> Graph {
    let t = |name: &str| TensorInfo {
        name: name.into(),
        shape: vec![1, h, w, 3],
        dtype: DType::F32,
        constant: None,
    };
    Graph {
        name: "identity".into(),
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

/// Adds `graph` as a model asset.
pub fn add_model(app: &mut App, graph: Graph) -> Handle<DnnModel> {
    app.world_mut()
        .resource_mut::<Assets<DnnModel>>()
        .add(DnnModel {
            name: graph.name.clone(),
            graph: Arc::new(graph),
        })
}

/// Every `DnnResult` so far (a resource filled by [`collect_results`]).
#[derive(Resource, Default)]
pub struct Results(pub Vec<DnnResult>);

/// Collects `DnnResult` messages into [`Results`].
pub fn collect_results(mut r: MessageReader<DnnResult>, mut all: ResMut<Results>) {
    all.0.extend(r.read().cloned());
}

/// Path of the `emoji` example built by `cargo test` in this profile.
pub fn emoji_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    // target/<profile>/deps/<test> -> target/<profile>/examples/emoji
    let profile_dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    profile_dir
        .join("examples")
        .join(format!("emoji{}", std::env::consts::EXE_SUFFIX))
}

/// Intersection over union of `[x, y, w, h]` boxes.
pub fn iou(a: [f64; 4], b: [f64; 4]) -> f64 {
    let ix = (a[0] + a[2]).min(b[0] + b[2]) - a[0].max(b[0]);
    let iy = (a[1] + a[3]).min(b[1] + b[3]) - a[1].max(b[1]);
    let inter = ix.max(0.0) * iy.max(0.0);
    let union = a[2] * a[3] + b[2] * b[3] - inter;
    if union <= 0.0 { 0.0 } else { inter / union }
}
