//! Results carry the capture index of the frame they were computed from: a synthetic source
//! writes each frame's index into its pixels, an identity model returns the pixels, and the
//! index decoded from each result's tensor must equal the index the result is stamped with.

mod common;

use bevy::prelude::*;
use heimdall_bevy::prelude::*;
use heimdall_vision::{RgbaImage, decode_frame_index};

#[test]
fn results_carry_the_capture_index_of_their_input_frame() {
    let (h, w) = (48usize, 64usize);
    let settings = HeimdallSettings {
        frame_rate: FrameRateTarget::Fixed(30.0),
        // On lavapipe the CPU is as fast as the "GPU": no offload, this test is about the GPU path.
        offload: false,
        precision: heimdall_gpu::Precision::F32,
        force_cpu: common::skip_gpu(),
        ..default()
    };
    let mut app = common::headless_app(settings);
    app.init_resource::<common::Results>()
        .add_systems(Update, common::collect_results);
    let model = common::add_model(&mut app, common::identity_graph(h, w));
    let camera = app
        .world_mut()
        .spawn(CameraSource::synthetic(w as u32, h as u32))
        .id();
    app.world_mut().spawn(Dnn::new(model, camera));
    let start = std::time::Instant::now();
    while app.world().resource::<common::Results>().0.len() < 10 && start.elapsed().as_secs() < 120
    {
        app.update();
    }
    let results = &app.world().resource::<common::Results>().0;
    assert!(
        results.len() >= 10,
        "only {} results in 120 s",
        results.len()
    );
    let mut indices = Vec::new();
    for r in results {
        let t = &r.output.tensors[0];
        assert_eq!(t.len(), h * w * 3);
        let data: Vec<u8> = t
            .chunks_exact(3)
            .flat_map(|p| {
                let b = |v: f32| (v * 255.0).round().clamp(0.0, 255.0) as u8;
                [b(p[0]), b(p[1]), b(p[2]), 255]
            })
            .collect();
        let image = RgbaImage::from_raw(w as u32, h as u32, data).unwrap();
        let decoded = decode_frame_index(&image).expect("a clean index code in the result");
        assert_eq!(
            u64::from(decoded),
            r.output.frame_index,
            "the result is stamped with frame {} but was computed from frame {decoded}",
            r.output.frame_index
        );
        let expected = if common::skip_gpu() {
            Backend::Cpu
        } else {
            Backend::Gpu
        };
        assert_eq!(r.output.backend, expected);
        indices.push(r.output.frame_index);
    }
    // Several distinct frames, in order.
    assert!(indices.windows(2).all(|p| p[0] < p[1]), "{indices:?}");
    assert!(indices.last() > indices.first());
}
