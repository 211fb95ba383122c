//! Results carry the capture index of the frame they were computed from: a synthetic source
//! writes each frame's index into its pixels, an identity model returns the pixels, and a
//! decoder written here, outside the crate (the open `DnnDecoder` trait), reads the index back
//! from each result; it must equal the index the result is stamped with.

mod common;

use bevy::prelude::*;
use common::{DecodedIndex, FrameIndexDecoder};
use heimdall_bevy::prelude::*;

/// Every decoded index, in arrival order (an observer reads the component the decoder inserted
/// before the event).
#[derive(Resource, Default)]
struct Indices(Vec<(DecodedIndex, u64)>);

#[test]
fn results_carry_the_capture_index_of_their_input_frame() {
    if common::no_render_device() {
        return;
    }
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
    app.init_resource::<Indices>();
    let model = common::add_model(&mut app, common::identity_graph(h, w));
    let camera = app
        .world_mut()
        .spawn(common::synthetic_camera(w as u32, h as u32))
        .id();
    app.world_mut()
        .spawn(Dnn::new(model, camera).with_decoder(FrameIndexDecoder))
        .observe(
            |r: On<DnnResult>, q: Query<&DecodedIndex>, mut all: ResMut<Indices>| {
                let index = q
                    .get(r.entity)
                    .expect("the decoder's component is in place");
                all.0.push((*index, r.output.frame_index));
            },
        );
    common::run_until(&mut app, std::time::Duration::from_secs(120), |app| {
        app.world().resource::<Indices>().0.len() >= 10
    });
    let indices = &app.world().resource::<Indices>().0;
    assert!(
        indices.len() >= 10,
        "only {} results in 120 s",
        indices.len()
    );
    let expected = if common::skip_gpu() {
        Backend::Cpu
    } else {
        Backend::Gpu
    };
    let results = &app.world().resource::<common::Results>().0;
    assert_eq!(results.len(), indices.len());
    assert!(results.iter().all(|r| r.output.backend == expected));
    for (index, event_frame) in indices {
        assert_eq!(
            u64::from(index.decoded),
            *event_frame,
            "the result is stamped with frame {event_frame} but was computed from frame {}",
            index.decoded
        );
        assert_eq!(index.stamped, *event_frame);
    }
    // Several distinct frames, in order.
    let frames: Vec<u64> = indices.iter().map(|(_, f)| *f).collect();
    assert!(frames.windows(2).all(|p| p[0] < p[1]), "{frames:?}");
}
