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

/// For each result: its frame index, the index code read back from the source's kept texture of
/// that frame (`CameraFrame::image_of`) when the result arrived (`None`: no texture), and the
/// source's latest frame then.
#[derive(Resource, Default)]
struct Kept(Vec<(u64, Option<u32>, u64)>);

/// A decoder that takes 50 ms and decodes nothing: results arrive several (unpaced) updates after
/// their frame, and the DNN's next inference starts while one is still decoding.
struct SlowDecoder;

impl DnnDecoder for SlowDecoder {
    type Output = ();

    fn decode(&self, _: &DecodeInput) -> Result<(), DecodeError> {
        std::thread::sleep(std::time::Duration::from_millis(50));
        Ok(())
    }

    fn deliver(&self, _: (), _: &mut EntityWorldMut) {}
}

/// A background synced with the results shows the frame each result was computed from: with a
/// history of two textures, frames arriving every (unpaced) update and a slow decode, the
/// result's frame is long out of the ring when it arrives unless its inference pinned it (the
/// render world pins the frame when the inference starts on it, until its result is delivered,
/// also while the DNN's next inference runs). The kept texture must still hold that frame's
/// pixels.
#[test]
fn a_results_frame_is_kept_for_a_synced_background() {
    if common::no_render_device() {
        return;
    }
    let (h, w) = (96u32, 128u32);
    let settings = HeimdallSettings {
        offload: false,
        precision: heimdall_gpu::Precision::F32,
        force_cpu: common::skip_gpu(),
        ..default()
    };
    let mut app = common::headless_app(settings);
    app.init_resource::<Kept>();
    let model = common::load_model(&app, "models/face_detection_short_range.tflite");
    let camera = app
        .world_mut()
        .spawn(common::synthetic_camera(w, h).with_history(2))
        .id();
    app.world_mut()
        .spawn(Dnn::new(model, camera).with_decoder(SlowDecoder))
        .observe(
            move |r: On<DnnResult>,
                  frames: Query<&CameraFrame>,
                  images: Res<Assets<Image>>,
                  mut kept: ResMut<Kept>| {
                let index = r.output.frame_index;
                let frame = frames.get(camera).expect("the source's frame");
                let code = frame
                    .image_of(index)
                    .and_then(|h| images.get(h))
                    .and_then(|image| {
                        let size = image.size();
                        let data = image.data.clone()?;
                        let rgba =
                            heimdall_vision::RgbaImage::from_raw(size.x, size.y, data).ok()?;
                        heimdall_testkit::decode_frame_index(&rgba)
                    });
                kept.0.push((index, code, frame.index));
            },
        );
    // A result at least two frames after its own: without its pin the ring (two textures) would
    // have reused its frame's texture for a later frame.
    let late = |kept: &Kept| kept.0.iter().filter(|k| k.2 >= k.0 + 2).count();
    common::run_until(&mut app, std::time::Duration::from_secs(120), |app| {
        late(app.world().resource::<Kept>()) >= 10
    });
    let kept = app.world().resource::<Kept>();
    assert!(
        late(kept) >= 10,
        "only {} of {} results arrived two frames late in 120 s: {:?}",
        late(kept),
        kept.0.len(),
        kept.0
    );
    let kept = &kept.0;
    for &(index, code, _) in kept {
        assert_eq!(
            code,
            Some(index as u32),
            "the texture kept for result {index}: {kept:?}"
        );
    }
}
