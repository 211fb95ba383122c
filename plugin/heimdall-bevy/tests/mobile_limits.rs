//! The plugin on a phone's GPU (`DeviceProfile::Mobile` on any adapter: heimdall's kernels held
//! to 4 storage buffers per shader stage and 128 invocations per work group, Bevy's device
//! without timestamp queries and `SHADER_F16`; Bevy's own pipelines need more than those limits,
//! `heimdall_bevy::device::HeimdallDeviceProfile`): a MediaPipe model
//! whose convolutions bind 5 or more buffers is known to need more before it compiles
//! (`heimdall_gpu::check_limits`) and runs on the CPU backend with a status saying why
//! (`Ready(Cpu)`, `CpuFallback`, `stats.json`'s `cpu_fallback`), instead of failing; a model
//! within the limits runs on the GPU, profiled without timestamps; both deliver.

mod common;

use std::time::Duration;

use bevy::prelude::*;
use bevy::render::renderer::RenderDevice;
use bevy::render::settings::{Backends, RenderCreation, WgpuSettings};
use heimdall_bevy::device::{DeviceProfile, HeimdallDeviceProfile, without_missing_features};
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

    let camera = app
        .world_mut()
        .spawn(common::synthetic_camera(128, 128))
        .id();
    let faces: Handle<DnnModel> = app
        .world()
        .resource::<AssetServer>()
        .load("models/face_detection_short_range.tflite");
    let detector = app
        .world_mut()
        .spawn(
            Dnn::new(faces, camera)
                .with_crop(InputCrop::Letterbox)
                .with_normalization(Normalization::MINUS_ONE_TO_ONE)
                .with_decoder(FaceDecoder::default()),
        )
        .id();
    let identity = common::add_model(&mut app, common::identity_graph(128, 128));
    let small = app.world_mut().spawn(Dnn::new(identity, camera)).id();
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
