//! The plugin on a phone's GPU (`DeviceProfile::Mobile` on any adapter: heimdall's kernels held
//! to 4 storage buffers per shader stage and 128 invocations per work group, Bevy's device
//! without timestamp queries and `SHADER_F16`; Bevy's own pipelines need more than those limits,
//! `heimdall_bevy::device::HeimdallDeviceProfile`): a MediaPipe model
//! whose convolutions bind 5 or more buffers is known to need more before it compiles
//! (`heimdall_gpu::check_limits`) and runs on the CPU backend with a status saying why
//! (`Ready(Cpu)`, `CpuFallback`, `stats.json`'s `cpu_fallback`), instead of failing; a model
//! within the limits runs on the GPU, profiled without timestamps; both deliver.
//!
//! Bevy's device itself with 4 storage buffers per stage: a lit scene renders beside the DNNs
//! with GPU preprocessing and GPU light clustering off (`docs/mobile-limits.md`).

mod common;

use std::time::Duration;

use bevy::app::PluginsState;
use bevy::light::cluster::GlobalClusterSettings;
use bevy::pbr::PbrPlugin;
use bevy::prelude::*;
use bevy::render::RenderPlugin;
use bevy::render::gpu_readback::{Readback, ReadbackComplete};
use bevy::render::pipelined_rendering::PipelinedRenderingPlugin;
use bevy::render::render_resource::{TextureFormat, TextureUsages};
use bevy::render::renderer::RenderDevice;
use bevy::render::settings::{Backends, RenderCreation, WgpuSettings};
use bevy::window::ExitCondition;
use bevy::winit::WinitPlugin;
use heimdall_bevy::device::{
    BevyDeviceLimitsPlugin, DeviceProfile, HeimdallDeviceProfile, adapter_limits,
    gpu_clustering_fits, gpu_preprocessing_fits, hold_storage_buffers, without_missing_features,
};
use heimdall_bevy::prelude::*;

#[test]
fn kernels_over_a_phones_limits_run_on_the_cpu_and_say_why() {
    if common::skip_gpu() {
        common::skipping("HEIMDALL_SKIP_GPU=1");
        return;
    }
    let settings = HeimdallSettings {
        frame_rate: FrameRateTarget::Fixed(30.0),
        offload: false,
        precision: heimdall_gpu::Precision::F32,
        ..default()
    };
    let mut wgpu = WgpuSettings {
        backends: Some(Backends::from_env().unwrap_or(Backends::PRIMARY)),
        ..default()
    };
    without_missing_features(&mut wgpu, DeviceProfile::Mobile);
    let creation = RenderCreation::Automatic(Box::new(wgpu));
    let mut app = common::headless_app_with(settings.clone(), creation, |app| {
        app.insert_resource(HeimdallDeviceProfile(DeviceProfile::Mobile));
    });
    let device = app.world().resource::<RenderDevice>().wgpu_device().clone();
    assert!(!device.features().contains(wgpu::Features::TIMESTAMP_QUERY));
    assert!(!device.features().contains(wgpu::Features::SHADER_F16));

    let (detector, small) = spawn_dnns(&mut app);
    common::run_until(&mut app, Duration::from_secs(300), |app| {
        common::results_of(app, detector) >= 3 && common::results_of(app, small) >= 3
    });
    for e in [detector, small] {
        assert!(common::results_of(&app, e) >= 3, "{e}: too few results");
    }
    // The plugin's kernels are held to the phone's limits.
    let adapter = app.world().resource::<HeimdallBackend>().adapter.clone();
    let adapter = adapter.expect("the plugin's device");
    assert!(
        adapter.contains("4 storage buffers per stage")
            && adapter.contains("128 invocations per work group")
            && adapter.contains("timestamps false"),
        "{adapter}"
    );
    // The detector: on the CPU, saying why; its results from the CPU.
    assert_eq!(
        app.world().get::<DnnStatus>(detector),
        Some(&DnnStatus::Ready(Backend::Cpu))
    );
    let why = &app
        .world()
        .get::<CpuFallback>(detector)
        .expect("a CpuFallback")
        .0;
    assert!(
        why.contains("storage buffers per shader stage") && why.contains("allows 4"),
        "{why}"
    );
    // The model within the limits: on the GPU, no fallback.
    assert_eq!(
        app.world().get::<DnnStatus>(small),
        Some(&DnnStatus::Ready(Backend::Gpu))
    );
    assert!(app.world().get::<CpuFallback>(small).is_none());
    let results = &app.world().resource::<common::Results>().0;
    for r in results {
        let want = if r.entity == small {
            Backend::Gpu
        } else {
            Backend::Cpu
        };
        assert_eq!(r.output.backend, want);
    }
    let stats = app.world().resource::<HeimdallStats>();
    let json = stats.to_json(&settings, "gpu", 0);
    let fallback = &json["models"]["face_detection_short_range"]["cpu_fallback"];
    assert!(
        fallback
            .as_str()
            .is_some_and(|s| s.contains("storage buffers")),
        "{json:#}"
    );
    assert_eq!(json["faults"]["validation_errors"], 0);
    assert_eq!(json["timed_frames"], 0, "no timestamps on this device");
}

/// Bevy's own device held to the least phone's 4 storage buffers per shader stage (the adapter's
/// other limits), a lit 3D scene rendered beside the plugin's DNNs: no validation error.
#[test]
fn bevy_renders_a_lit_scene_on_a_device_with_four_storage_buffers() {
    if common::skip_gpu() {
        common::skipping("HEIMDALL_SKIP_GPU=1");
        return;
    }
    let settings = HeimdallSettings {
        frame_rate: FrameRateTarget::Fixed(30.0),
        offload: false,
        precision: heimdall_gpu::Precision::F32,
        ..default()
    };
    let backends = Backends::from_env().unwrap_or(Backends::PRIMARY);
    // The adapter's limits with 4 storage buffers per stage: Bevy takes the adapter's limits
    // (`WgpuSettingsPriority::Functionality`) and the worse of those and `constrained_limits`.
    let adapter = adapter_limits(backends).expect("an adapter");
    let mut wgpu = WgpuSettings {
        backends: Some(backends),
        ..default()
    };
    hold_storage_buffers(&mut wgpu, DeviceProfile::Mobile, &adapter);
    without_missing_features(&mut wgpu, DeviceProfile::Mobile);
    let mut app = app_without_gpu_preprocessing(settings.clone(), wgpu);
    let limits = app.world().resource::<RenderDevice>().limits();
    assert_eq!(limits.max_storage_buffers_per_shader_stage, 4);

    spawn_lit_scene(app.world_mut());

    let (detector, small) = spawn_dnns(&mut app);
    let mut frames = 0;
    common::run_until(&mut app, Duration::from_secs(300), |app| {
        frames += 1;
        frames > 30
            && !app.world().resource::<Picture>().0.is_empty()
            && common::results_of(app, detector) >= 3
            && common::results_of(app, small) >= 3
    });
    for e in [detector, small] {
        assert!(common::results_of(&app, e) >= 3, "{e}: too few results");
    }
    check_red_centre(&app);
    assert_eq!(
        app.world().get::<DnnStatus>(detector),
        Some(&DnnStatus::Ready(Backend::Cpu))
    );
    assert_eq!(
        app.world().get::<DnnStatus>(small),
        Some(&DnnStatus::Ready(Backend::Gpu))
    );
    let stats = app.world().resource::<HeimdallStats>();
    let json = stats.to_json(&settings, "gpu", 0);
    assert_eq!(json["faults"]["validation_errors"], 0, "{json:#}");
}

/// The side of the lit scene's picture.
const SIZE: u32 = 128;

/// A synthetic 128x128 camera with two DNNs on it: the face detector (its convolutions bind 5
/// or more buffers) and the identity (within the limits); returns them.
fn spawn_dnns(app: &mut App) -> (Entity, Entity) {
    let camera = app
        .world_mut()
        .spawn(common::synthetic_camera(128, 128))
        .id();
    let faces = common::load_model(app, "models/face_detection_short_range.tflite");
    let detector = app
        .world_mut()
        .spawn(
            Dnn::new(faces, camera)
                .with_crop(InputCrop::Letterbox)
                .with_normalization(Normalization::MINUS_ONE_TO_ONE)
                .with_decoder(FaceDecoder::default()),
        )
        .id();
    let identity = common::add_model(app, common::identity_graph(128, 128));
    let small = app.world_mut().spawn(Dnn::new(identity, camera)).id();
    (detector, small)
}

/// The scene: a lit cube (a point and a directional light, with shadows) seen by a camera
/// rendering into a [`SIZE`]² image, read back into [`Picture`].
fn spawn_lit_scene(world: &mut World) {
    let mut image = Image::new_target_texture(SIZE, SIZE, TextureFormat::Rgba8UnormSrgb, None);
    image.texture_descriptor.usage |= TextureUsages::COPY_SRC;
    let target = world.resource_mut::<Assets<Image>>().add(image);
    let cube = world
        .resource_mut::<Assets<Mesh>>()
        .add(Cuboid::new(1.0, 1.0, 1.0));
    let material = world
        .resource_mut::<Assets<StandardMaterial>>()
        .add(StandardMaterial::from_color(Color::srgb(0.8, 0.3, 0.2)));
    world.init_resource::<Picture>();
    world.spawn(Readback::texture(target.clone())).observe(
        |done: On<ReadbackComplete>, mut picture: ResMut<Picture>| {
            picture.0 = done.data.clone();
        },
    );
    world.spawn((
        Camera3d::default(),
        bevy::camera::RenderTarget::Image(target.into()),
        Transform::from_xyz(2.0, 2.0, 3.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    world.spawn((Mesh3d(cube), MeshMaterial3d(material), Transform::default()));
    world.spawn((
        PointLight {
            shadow_maps_enabled: true,
            ..default()
        },
        Transform::from_xyz(1.5, 3.0, 1.5),
    ));
    world.spawn((
        DirectionalLight {
            shadow_maps_enabled: true,
            ..default()
        },
        Transform::from_xyz(-1.0, 2.0, 1.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
}

/// The lit cube is drawn: the picture's centre is red, not the grey clear colour.
fn check_red_centre(app: &App) {
    let picture = &app.world().resource::<Picture>().0;
    let centre = ((SIZE / 2 * SIZE + SIZE / 2) * 4) as usize;
    let [r, g, b] = [0, 1, 2].map(|c| i32::from(picture.get(centre + c).copied().unwrap_or(0)));
    eprintln!("the picture's centre: rgb {r} {g} {b}");
    assert!(
        r > g + 30 && r > b + 30,
        "the centre is rgb {r} {g} {b}, not the red cube"
    );
}

/// `common::headless_app_with` with Bevy's mesh instance buffers built on the CPU
/// (`PbrPlugin::use_gpu_instance_buffer_builder`): GPU preprocessing binds up to 8 storage
/// buffers per compute stage (frustum culling) and 5 (indirect parameters), more than 4. The
/// settings of `heimdall_bevy::device`'s `bevy_limits` (`render_plugin_held_to`'s limit is in
/// `wgpu`).
fn app_without_gpu_preprocessing(settings: HeimdallSettings, wgpu: WgpuSettings) -> App {
    let mut app = App::new();
    app.add_plugins((
        DefaultPlugins
            .set(AssetPlugin {
                file_path: common::assets_dir().to_string_lossy().into_owned(),
                ..default()
            })
            .set(WindowPlugin {
                primary_window: None,
                exit_condition: ExitCondition::DontExit,
                ..default()
            })
            .set(RenderPlugin {
                render_creation: RenderCreation::Automatic(Box::new(wgpu)),
                synchronous_pipeline_compilation: true,
                ..default()
            })
            .set(PbrPlugin {
                use_gpu_instance_buffer_builder: gpu_preprocessing_fits(PROFILE),
                ..default()
            })
            .disable::<WinitPlugin>()
            .disable::<PipelinedRenderingPlugin>(),
        HeimdallPlugin::new(settings),
        // Bevy's render phases from `GpuPreprocessingSupport`, not the `PbrPlugin` switch: left at
        // `PreprocessingOnly` (what Bevy picks with fewer than 10 storage buffers) the CPU-built
        // batches are dropped ("Dynamic uniform batch sets should be used when GPU
        // preprocessing is off") and nothing is drawn.
        BevyDeviceLimitsPlugin(PROFILE),
    ));
    app.init_resource::<common::Results>()
        .add_observer(|r: On<DnnResult>, mut all: ResMut<common::Results>| {
            all.0.push(r.event().clone());
        })
        .insert_resource(HeimdallDeviceProfile(PROFILE));
    while app.plugins_state() == PluginsState::Adding {
        bevy::tasks::tick_global_task_pools_on_main_thread();
        std::thread::sleep(Duration::from_millis(1));
    }
    app.finish();
    app.cleanup();
    // GPU light clustering's raster passes bind 5 and 6 storage buffers in the fragment stage:
    // clustering on the CPU (`GlobalClusterSettings::gpu_clustering`, set by `PbrPlugin::finish`).
    if !gpu_clustering_fits(PROFILE) {
        app.world_mut()
            .resource_mut::<GlobalClusterSettings>()
            .gpu_clustering = None;
    }
    app
}

/// The least phone's profile.
const PROFILE: DeviceProfile = DeviceProfile::Mobile;

/// The camera's picture, read back from its target image.
#[derive(Resource, Default)]
struct Picture(Vec<u8>);
