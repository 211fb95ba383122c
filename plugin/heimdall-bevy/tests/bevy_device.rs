//! The plugin runs inference on Bevy's own device: every model is compiled on the render
//! world's `RenderDevice`, and heimdall never creates a `wgpu::Device` of its own.

mod common;

use bevy::prelude::*;
use bevy::render::RenderApp;
use bevy::render::renderer::RenderDevice;
use heimdall_bevy::prelude::*;

#[test]
fn inference_runs_on_bevys_render_device() {
    if common::skip_gpu() {
        common::skipping("HEIMDALL_SKIP_GPU=1");
        return;
    }
    let settings = HeimdallSettings {
        frame_rate: FrameRateTarget::Fixed(30.0),
        // On lavapipe the CPU is as fast as the "GPU": no offload, this test is about the GPU path.
        offload: false,
        ..default()
    };
    let mut app = common::headless_app(settings);
    let model = common::load_model(&app, "models/face_detection_short_range.tflite");
    let camera = app
        .world_mut()
        .spawn(common::synthetic_camera(128, 128))
        .id();
    app.world_mut().spawn(
        Dnn::new(model, camera)
            .with_normalization(Normalization::MINUS_ONE_TO_ONE)
            .with_decoder(FaceDecoder::default()),
    );
    common::run_until(&mut app, std::time::Duration::from_secs(180), |app| {
        app.world().resource::<common::Results>().0.len() >= 3
    });
    let results = &app.world().resource::<common::Results>().0;
    assert!(results.len() >= 3, "only {} results", results.len());
    assert!(results.iter().all(|r| r.output.backend == Backend::Gpu));

    assert_eq!(
        app.world().resource::<HeimdallBackend>().kind,
        BackendKind::Gpu
    );
    // Bevy puts the same RenderDevice in both worlds.
    let bevy_device = app.world().resource::<RenderDevice>().wgpu_device().clone();
    let devices = heimdall_bevy::render::compiled_devices(app.sub_app(RenderApp).world());
    assert!(!devices.is_empty(), "no model was compiled on the GPU");
    for d in &devices {
        assert!(*d == bevy_device, "a model was compiled on another device");
    }
    assert_eq!(
        heimdall_gpu::context::devices_created(),
        0,
        "heimdall created a wgpu device of its own"
    );
}
