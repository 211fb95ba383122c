//! Shared helpers of the plugin tests: a headless app driven by `update()` (render world on the
//! main thread, so tests can look at it), tiny graphs, a synthetic camera, and the results.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use bevy::app::PluginsState;
use bevy::prelude::*;
use bevy::render::RenderPlugin;
use bevy::render::pipelined_rendering::PipelinedRenderingPlugin;
use bevy::render::settings::{Backends, RenderCreation, WgpuSettings};
use bevy::window::ExitCondition;
use bevy::winit::WinitPlugin;
use heimdall_bevy::prelude::*;
use heimdall_ir::{BinaryFn, Constant, DType, Graph, Op, OpKind, TensorId, TensorInfo, UnaryKind};
use heimdall_testkit::SyntheticSource;

/// Whether GPU tests are skipped (`HEIMDALL_SKIP_GPU=1`).
pub fn skip_gpu() -> bool {
    std::env::var("HEIMDALL_SKIP_GPU").is_ok_and(|v| v == "1")
}

/// Says that the running test skips, and why (counted by CI: `heimdall_testkit::skip`).
pub fn skipping(why: &str) {
    let test = std::thread::current()
        .name()
        .map_or_else(|| "?".to_string(), str::to_string);
    heimdall_testkit::skip(&format!("{}::{test}", env!("CARGO_CRATE_NAME")), why);
}

/// Whether no render device can be made here (no adapter for the tests' backends: a machine
/// without a Vulkan driver); if so, says that the running test skips. A headless app would
/// panic in Bevy's renderer: tests that run on the CPU backend under `HEIMDALL_SKIP_GPU=1` still
/// need a render device for the app.
pub fn no_render_device() -> bool {
    let backends = Backends::from_env().unwrap_or(Backends::PRIMARY);
    match heimdall_bevy::device::find_adapter(Some(backends)) {
        Ok(_) => false,
        Err(e) => {
            skipping(&e.to_string());
            true
        }
    }
}

/// The workspace's `assets/`.
pub fn assets_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../assets"))
}

/// A headless app with the plugin, ready for `update()`.
pub fn headless_app(settings: HeimdallSettings) -> App {
    headless_app_with(settings, render_creation(), |_| {})
}

/// [`headless_app`] with the render device made as `creation` says, and `setup` run on the
/// app before its plugins finish.
pub fn headless_app_with(
    settings: HeimdallSettings,
    creation: RenderCreation,
    setup: impl FnOnce(&mut App),
) -> App {
    quiet_runtime_dir();
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
            .set(RenderPlugin {
                render_creation: creation,
                // Bevy's pipelines are created on the render thread, not in async-compute
                // tasks: a task still creating one when a short test ends held the last render
                // device and destroyed it on a pool thread while the harness ran `exit`, and
                // lavapipe crashed there (SIGSEGV after the test passed, CI, 2026-11-28).
                synchronous_pipeline_compilation: true,
                ..default()
            })
            .disable::<WinitPlugin>()
            .disable::<PipelinedRenderingPlugin>(),
        HeimdallPlugin::new(settings),
    ));
    app.init_resource::<Results>().add_observer(collect_results);
    setup(&mut app);
    while app.plugins_state() == PluginsState::Adding {
        bevy::tasks::tick_global_task_pools_on_main_thread();
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    app.finish();
    app.cleanup();
    app
}

/// The tests' render device: Vulkan, Metal or DX12 (`WGPU_BACKEND` overrides), never GL. An
/// instance with the GL backend loads EGL, and Mesa's EGL registers exit handlers that can
/// run while a task-pool thread still drops the last wgpu object of a replaced device: the
/// device-loss test then crashed in `exit` after it had passed (SIGSEGV, about 1 run in 40 under
/// load, lavapipe / Mesa 22.3).
pub fn render_creation() -> RenderCreation {
    RenderCreation::Automatic(Box::new(WgpuSettings {
        backends: Some(Backends::from_env().unwrap_or(Backends::PRIMARY)),
        ..default()
    }))
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

/// A model whose f16 storage overflows: [`scale_graph`] with ×1024, ×1024, ×2⁻¹⁰, ×2⁻¹⁰. Its
/// second op's output exceeds 65504, f16's largest value, wherever the input exceeds 1/16, as
/// camera pixels in [0, 1] do: in f16 storage its output is infinite there, unless op 1 stores
/// f32. In f32 it is the identity, exactly (powers of two).
pub fn overflow_graph(name: &str, h: usize, w: usize) -> Graph {
    scale_graph(name, h, w, &[1024.0, 1024.0, 1.0 / 1024.0, 1.0 / 1024.0])
}

/// `[1, h, w, 3]` → one multiplication per scale of `scales` → two copies (a graph output's
/// producer and the tensor it reads are f32 in every precision, so the products are stored in
/// the model's precision). With scales whose product is 1 and powers of two, the identity in
/// f32, exactly; in f16 storage, within f16's rounding where no product exceeds its range.
pub fn scale_graph(name: &str, h: usize, w: usize, scales: &[f32]) -> Graph {
    let shape = vec![1, h, w, 3];
    let mut tensors = Vec::new();
    let mut tensor = |name: &str, shape: &[usize], constant: Option<f32>| {
        tensors.push(TensorInfo {
            name: name.into(),
            shape: shape.to_vec(),
            dtype: DType::F32,
            constant: constant.map(|v| Constant::dense(vec![v])),
        });
        TensorId(tensors.len() as u32 - 1)
    };
    let x = tensor("x", &shape, None);
    let mut ops = Vec::new();
    let mut last = x;
    for (k, &s) in scales.iter().enumerate() {
        let c = tensor(&format!("scale{k}"), &[1], Some(s));
        let y = tensor(&format!("y{k}"), &shape, None);
        ops.push(Op::new(
            OpKind::Binary(BinaryFn::Mul),
            vec![last, c],
            vec![y],
        ));
        last = y;
    }
    for k in 0..2 {
        let y = tensor(&format!("copy{k}"), &shape, None);
        ops.push(Op::new(OpKind::Reshape, vec![last], vec![y]));
        last = y;
    }
    Graph {
        name: name.into(),
        tensors,
        ops,
        inputs: vec![x],
        outputs: vec![last],
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

/// Loads a model asset through the app's `AssetServer` (`path` inside `assets/`, e.g.
/// `models/face_detection_short_range.tflite`).
pub fn load_model(app: &App, path: impl Into<String>) -> Handle<DnnModel> {
    app.world().resource::<AssetServer>().load(path.into())
}

/// How many results `dnn` has delivered so far (in [`Results`]).
pub fn results_of(app: &App, dnn: Entity) -> usize {
    app.world()
        .resource::<Results>()
        .0
        .iter()
        .filter(|r| r.entity == dnn)
        .count()
}

/// Every `DnnResult` so far (filled by an observer of every app made by [`headless_app`]).
#[derive(Resource, Default)]
pub struct Results(pub Vec<DnnResult>);

fn collect_results(result: On<DnnResult>, mut all: ResMut<Results>) {
    all.0.push(result.event().clone());
}

/// Frames with their index encoded in the pixels (`heimdall_testkit::synthetic`).
pub struct SyntheticFrames {
    source: SyntheticSource,
    next: u32,
}

impl FrameSource for SyntheticFrames {
    fn name(&self) -> String {
        "synthetic".into()
    }

    fn size(&self) -> UVec2 {
        UVec2::new(self.source.width(), self.source.height())
    }

    fn next_frame(&mut self) -> Result<Option<RgbaFrame>, SourceError> {
        let f = self.source.frame(self.next);
        self.next += 1;
        Ok(Some(RgbaFrame {
            width: f.width,
            height: f.height,
            data: f.data,
        }))
    }
}

/// A camera source of `width × height` synthetic frames, one per update.
pub fn synthetic_camera(width: u32, height: u32) -> CameraSource {
    let source = SyntheticSource::new(width, height).expect("a valid synthetic size");
    CameraSource::new(
        SyntheticFrames { source, next: 0 },
        FramePacing::EveryUpdate,
    )
}

/// The frame index found in an identity model's output.
#[derive(Component, Clone, Copy, Debug)]
pub struct DecodedIndex {
    /// What the pixels say.
    pub decoded: u32,
    /// What the decoder was told the input frame was.
    pub stamped: u64,
}

/// A decoder of this test: output pixels back to an image, then the index code.
pub struct FrameIndexDecoder;

impl DnnDecoder for FrameIndexDecoder {
    type Output = DecodedIndex;

    fn decode(&self, input: &DecodeInput) -> Result<DecodedIndex, DecodeError> {
        let t = input.output(0)?;
        let &[1, h, w, 3] = input.shapes[0].as_slice() else {
            return Err(format!("not an image: {:?}", input.shapes[0]).into());
        };
        let data: Vec<u8> = t
            .chunks_exact(3)
            .flat_map(|p| {
                let b = |v: f32| (v * 255.0).round().clamp(0.0, 255.0) as u8;
                [b(p[0]), b(p[1]), b(p[2]), 255]
            })
            .collect();
        let image = heimdall_vision::RgbaImage::from_raw(w as u32, h as u32, data)?;
        let decoded = heimdall_testkit::decode_frame_index(&image)
            .ok_or("no clean index code in the result")?;
        Ok(DecodedIndex {
            decoded,
            stamped: input.frame_index,
        })
    }

    fn deliver(&self, index: DecodedIndex, entity: &mut EntityWorldMut) {
        entity.insert(index);
    }
}

/// Intersection over union of `[x, y, w, h]` boxes.
pub fn iou(a: [f64; 4], b: [f64; 4]) -> f64 {
    let ix = (a[0] + a[2]).min(b[0] + b[2]) - a[0].max(b[0]);
    let iy = (a[1] + a[3]).min(b[1] + b[3]) - a[1].max(b[1]);
    let inter = ix.max(0.0) * iy.max(0.0);
    let union = a[2] * a[3] + b[2] * b[3] - inter;
    if union <= 0.0 { 0.0 } else { inter / union }
}

/// Without a display, Mesa's Vulkan loader complains about a missing `XDG_RUNTIME_DIR`: give the
/// test process a private one, once, before the app starts its threads.
fn quiet_runtime_dir() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("XDG_RUNTIME_DIR").is_some() {
            return;
        }
        let dir =
            std::env::temp_dir().join(format!("heimdall-test-runtime-{}", std::process::id()));
        if std::fs::create_dir_all(&dir).is_ok() {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
            // SAFETY: each test binary of this crate runs one app test; this runs before it
            // creates any thread that reads the environment.
            unsafe { std::env::set_var("XDG_RUNTIME_DIR", &dir) };
        }
    });
}

/// Updates `app` until `done` holds or `timeout` passes; fails the test if the app asks to exit
/// (Bevy quits on a wgpu validation error or a lost device: no test may see one).
pub fn run_until(app: &mut App, timeout: std::time::Duration, mut done: impl FnMut(&App) -> bool) {
    let start = std::time::Instant::now();
    while !done(app) && start.elapsed() < timeout {
        app.update();
        if let Some(exit) = app.should_exit() {
            panic!("the app asked to exit ({exit:?}): a render error (validation, device lost)?");
        }
    }
}
