//! Camera faults: a frame error is retried after a growing delay (the source restarted first,
//! not asked in between), reported with a `CameraError` per error and counted; frames resume
//! once the source recovers; a source given up on stops with one `CameraFailed`; a source that
//! panics is an error of its frame, not of the app.

use std::sync::atomic::{AtomicUsize, Ordering};

use bevy::ecs::system::RunSystemOnce;
use heimdall_vision::image::PixelFormat;

use super::*;
use crate::faults::HeimdallFaults;

/// A source that fails its first `failures` frames (or panics instead), then delivers 2x2
/// frames; it counts the frames asked for and the restarts.
struct Flaky {
    failures: usize,
    panics: bool,
    calls: Arc<AtomicUsize>,
    restarts: Arc<AtomicUsize>,
}

impl FrameSource for Flaky {
    fn name(&self) -> String {
        "flaky".into()
    }

    fn size(&self) -> UVec2 {
        UVec2::new(2, 2)
    }

    fn next_frame(&mut self) -> Result<Option<RgbaFrame>, SourceError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if n < self.failures {
            if self.panics {
                panic!("a camera driver that panics");
            }
            return Err(SourceError::Frame {
                what: self.name(),
                message: format!("frame {n} lost"),
            });
        }
        Ok(Some(RgbaFrame {
            width: 2,
            height: 2,
            data: vec![128; 16],
        }))
    }

    fn restart(&mut self) -> Result<(), SourceError> {
        self.restarts.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[derive(Resource, Default)]
struct Seen {
    errors: Vec<(u32, Duration)>,
    failed: usize,
}

struct Setup {
    world: World,
    camera: Entity,
    calls: Arc<AtomicUsize>,
    restarts: Arc<AtomicUsize>,
    faults: HeimdallFaults,
}

fn setup(failures: usize, panics: bool, retry: CameraRetry) -> Setup {
    let mut world = World::new();
    let faults = HeimdallFaults::default();
    world.insert_resource(HeimdallClock::default());
    world.insert_resource(Assets::<Image>::default());
    world.insert_resource(faults.clone());
    world.init_resource::<Seen>();
    world.add_observer(|e: On<CameraError>, mut seen: ResMut<Seen>| {
        seen.errors.push((e.attempt, e.retry_in));
    });
    world.add_observer(|_: On<CameraFailed>, mut seen: ResMut<Seen>| seen.failed += 1);
    let (calls, restarts) = (Arc::default(), Arc::default());
    let source = Flaky {
        failures,
        panics,
        calls: Arc::clone(&calls),
        restarts: Arc::clone(&restarts),
    };
    let camera = world
        .spawn(CameraSource::new(source, FramePacing::EveryUpdate).with_retry(retry))
        .id();
    Setup {
        world,
        camera,
        calls,
        restarts,
        faults,
    }
}

/// Runs `advance_sources` every millisecond until `done` or 10 s.
fn run_until(world: &mut World, mut done: impl FnMut(&mut World) -> bool) {
    let start = std::time::Instant::now();
    while !done(world) && start.elapsed() < Duration::from_secs(10) {
        world.run_system_once(advance_sources).expect("runs");
        std::thread::sleep(Duration::from_millis(1));
    }
}

const FAST: CameraRetry = CameraRetry {
    first: Duration::from_millis(20),
    max: Duration::from_millis(80),
    give_up_after: None,
};

#[test]
fn frame_errors_are_retried_with_backoff_and_reported() {
    let mut s = setup(4, false, FAST);
    let camera = s.camera;
    let start = std::time::Instant::now();
    run_until(&mut s.world, |w| w.get::<CameraFrame>(camera).is_some());
    let took = start.elapsed();
    assert!(
        s.world.get::<CameraFrame>(camera).is_some(),
        "no frame after the errors"
    );
    let seen = s.world.resource::<Seen>();
    let ms = |m| Duration::from_millis(m);
    assert_eq!(
        seen.errors,
        vec![(1, ms(20)), (2, ms(40)), (3, ms(80)), (4, ms(80))],
        "each error reported with its delay (doubling, capped)"
    );
    assert_eq!(seen.failed, 0);
    // Not asked in between: four failed frames and the good one, over hundreds of updates.
    assert_eq!(s.calls.load(Ordering::SeqCst), 5);
    assert_eq!(
        s.restarts.load(Ordering::SeqCst),
        4,
        "restarted before each retry"
    );
    assert!(took >= ms(20 + 40 + 80 + 80), "{took:?}");
    assert_eq!(s.faults.camera_errors(), 4);
    let source = s.world.get::<CameraSource>(camera).unwrap();
    assert_eq!(source.errors_in_a_row(), 0);
    assert!(!source.failed());
}

#[test]
fn a_source_given_up_on_stops_with_one_event() {
    let retry = CameraRetry {
        give_up_after: Some(3),
        ..FAST
    };
    let mut s = setup(usize::MAX, false, retry);
    let camera = s.camera;
    run_until(&mut s.world, |w| w.resource::<Seen>().failed > 0);
    for _ in 0..50 {
        s.world.run_system_once(advance_sources).expect("runs");
    }
    let seen = s.world.resource::<Seen>();
    assert_eq!(seen.failed, 1);
    assert_eq!(seen.errors.len(), 2, "errors before the one that gives up");
    assert_eq!(s.calls.load(Ordering::SeqCst), 3, "not asked once stopped");
    assert!(s.world.get::<CameraSource>(camera).unwrap().failed());
}

#[test]
fn a_panicking_source_is_a_frame_error_not_a_crash() {
    let mut s = setup(2, true, FAST);
    let camera = s.camera;
    run_until(&mut s.world, |w| w.get::<CameraFrame>(camera).is_some());
    assert!(s.world.get::<CameraFrame>(camera).is_some());
    assert_eq!(s.world.resource::<Seen>().errors.len(), 2);
}

#[test]
fn delays_double_up_to_the_cap() {
    let r = CameraRetry::default();
    assert_eq!(r.delay(1), Duration::from_millis(50));
    assert_eq!(r.delay(2), Duration::from_millis(100));
    assert_eq!(r.delay(6), Duration::from_millis(1600));
    assert_eq!(r.delay(7), Duration::from_secs(2));
    assert_eq!(r.delay(u32::MAX), Duration::from_secs(2));
}

/// A synthetic camera that delivers raw frames as a device does (the webcam's path without a
/// device): each frame in its own layout, converted by `RgbaFrame::from_raw`.
struct RawCamera {
    frames: std::collections::VecDeque<Raw>,
}

/// A raw frame: its layout, width, height, row stride and bytes.
type Raw = (PixelFormat, u32, u32, Option<usize>, Vec<u8>);

impl FrameSource for RawCamera {
    fn name(&self) -> String {
        "raw camera".into()
    }

    fn size(&self) -> UVec2 {
        UVec2::new(3, 3)
    }

    fn next_frame(&mut self) -> Result<Option<RgbaFrame>, SourceError> {
        let Some((format, width, height, stride, data)) = self.frames.pop_front() else {
            return Ok(None);
        };
        let raw = RawFrame {
            format,
            width,
            height,
            stride,
            data: &data,
        };
        RgbaFrame::from_raw(&raw, &self.name()).map(Some)
    }
}

/// Opaque RGBA pixels from `(r, g, b)` triples.
fn rgba(pixels: &[(u8, u8, u8)]) -> Vec<u8> {
    pixels
        .iter()
        .flat_map(|&(r, g, b)| [r, g, b, 255])
        .collect()
}

/// The frames the raw camera delivers, in order: every webcam layout, with odd sizes and padded
/// rows (`k` is black, `w` white); the fifth and sixth cannot be read.
fn raw_frames() -> Vec<Raw> {
    const PAD: u8 = 0xAB;
    let (k, w) = (16u8, 235u8);
    vec![
        // RGBA, 2x2, rows padded to 12 bytes.
        (
            PixelFormat::Rgba8,
            2,
            2,
            Some(12),
            [[1, 2, 3, 9, 4, 5, 6, 9], [7, 8, 9, 9, 10, 11, 12, 9]]
                .iter()
                .flat_map(|row| row.iter().copied().chain([PAD; 4]))
                .collect(),
        ),
        // BGR, 3x1 (odd width, no padding).
        (
            PixelFormat::Bgr8,
            3,
            1,
            None,
            vec![3, 2, 1, 6, 5, 4, 9, 8, 7],
        ),
        // Grey, 3x3, rows padded to 4 bytes.
        (
            PixelFormat::Gray8,
            3,
            3,
            Some(4),
            vec![0, 50, 100, PAD, 150, 200, 250, PAD, 1, 2, 3, PAD],
        ),
        // YUYV, 3x2 (odd width: the last pixel takes a whole pair), grey chroma.
        (
            PixelFormat::Yuyv,
            3,
            2,
            None,
            vec![
                k, 128, w, 128, w, 128, k, 128, w, 128, k, 128, k, 128, w, 128,
            ],
        ),
        // A truncated YUYV frame: an error of that frame, retried.
        (PixelFormat::Yuyv, 4, 4, None, vec![k; 10]),
        // Motion-JPEG that is not a JPEG: the same.
        (PixelFormat::Mjpeg, 4, 4, None, b"not a jpeg".to_vec()),
        // NV12, 3x3 (odd: 2x2 chroma samples), rows padded to 6 bytes, grey chroma.
        (
            PixelFormat::Nv12,
            3,
            3,
            Some(6),
            [
                vec![k, w, k, PAD, PAD, PAD],
                vec![w, k, w, PAD, PAD, PAD],
                vec![k, k, w, PAD, PAD, PAD],
                vec![128, 128, 128, 128, PAD, PAD],
                vec![128, 128, 128, 128, PAD, PAD],
            ]
            .concat(),
        ),
    ]
}

/// The RGBA frames the app gets from [`raw_frames`], computed by hand (none for the two that
/// cannot be read).
fn expected_rgba() -> Vec<(UVec2, Vec<u8>)> {
    let (b, white) = ((0, 0, 0), (255, 255, 255));
    vec![
        (
            UVec2::new(2, 2),
            rgba(&[(1, 2, 3), (4, 5, 6), (7, 8, 9), (10, 11, 12)]),
        ),
        (UVec2::new(3, 1), rgba(&[(1, 2, 3), (4, 5, 6), (7, 8, 9)])),
        (
            UVec2::new(3, 3),
            rgba(&[0, 50, 100, 150, 200, 250, 1, 2, 3].map(|v| (v, v, v))),
        ),
        (UVec2::new(3, 2), rgba(&[b, white, white, white, b, b])),
        (
            UVec2::new(3, 3),
            rgba(&[b, white, b, white, b, white, b, b, white]),
        ),
    ]
}

/// Every layout a webcam delivers, with odd sizes and padded rows, reaches the app as the RGBA
/// frame computed by hand (BT.601 limited range: luma 16 is black, 235 white, chroma 128 grey);
/// the texture follows each frame's size; a frame that cannot be read (a truncated YUYV frame,
/// a Motion-JPEG frame that is not a JPEG) is a retried `CameraError`, after which frames go on.
#[test]
fn raw_camera_frames_in_every_layout_reach_the_app_as_rgba() {
    let frames = raw_frames();
    let expected = expected_rgba();
    let mut world = World::new();
    let faults = HeimdallFaults::default();
    world.insert_resource(HeimdallClock::default());
    world.insert_resource(Assets::<Image>::default());
    world.insert_resource(faults.clone());
    world.init_resource::<Seen>();
    world.add_observer(|e: On<CameraError>, mut seen: ResMut<Seen>| {
        seen.errors.push((e.attempt, e.retry_in));
    });
    let source = RawCamera {
        frames: frames.into(),
    };
    let retry = CameraRetry {
        first: Duration::from_millis(5),
        max: Duration::from_millis(5),
        give_up_after: None,
    };
    let camera = world
        .spawn(CameraSource::new(source, FramePacing::EveryUpdate).with_retry(retry))
        .id();
    let mut got: Vec<(UVec2, Vec<u8>)> = Vec::new();
    let mut last_index = None;
    run_until(&mut world, |w| {
        if let Some(f) = w.get::<CameraFrame>(camera)
            && last_index != Some(f.index)
        {
            last_index = Some(f.index);
            let texture = w
                .resource::<Assets<Image>>()
                .get(&f.image)
                .expect("its texture");
            assert_eq!(texture.size(), f.size, "the texture has the frame's size");
            assert_eq!(texture.data.as_deref(), Some(f.pixels.as_slice()));
            got.push((f.size, f.pixels.to_vec()));
        }
        got.len() == expected.len()
    });
    assert_eq!(got, expected);
    let seen = world.resource::<Seen>();
    assert_eq!(
        seen.errors.iter().map(|e| e.0).collect::<Vec<_>>(),
        vec![1, 2],
        "two frame errors in a row, each retried"
    );
    assert_eq!(faults.camera_errors(), 2);
}

#[test]
fn a_frame_stays_pinned_from_its_start_until_a_newer_result() {
    let pins = FramePins::default();
    let entity = |i| Entity::from_raw_u32(i).expect("valid index");
    let (a, b) = (entity(1), entity(2));
    let shared = pins.clone();
    shared.started(a, 3);
    assert!(
        pins.pinned(3),
        "the render world's pin is seen through every clone"
    );
    pins.started(b, 4);
    // A's next inference started on frame 5 before its result from frame 3 was delivered
    // (frame 3's outputs were read back and are being decoded).
    pins.started(a, 5);
    assert!(
        pins.pinned(3) && pins.pinned(5),
        "both inferences in flight"
    );
    pins.result(a, 3);
    assert!(
        pins.pinned(3) && pins.pinned(5),
        "latest result and running inference"
    );
    pins.result(a, 5);
    assert!(!pins.pinned(3), "an older result's frame is released");
    assert!(pins.pinned(5) && pins.pinned(4));
    pins.result(b, 4);
    assert!(pins.pinned(4), "b's latest result");
    assert!(!pins.pinned(6));
}

/// A DNN despawned while its inference ran, or with its latest result pinned, leaves no pin: its
/// frames go back to the ring.
#[test]
fn a_despawned_dnn_releases_its_frames() {
    let mut s = setup(0, false, FAST);
    s.world.add_observer(release_pins);
    let camera = s.camera;
    run_until(&mut s.world, |w| w.get::<CameraFrame>(camera).is_some());
    let dnn = s.world.spawn(Dnn::new(Handle::default(), camera)).id();
    let other = s.world.spawn(Dnn::new(Handle::default(), camera)).id();
    let pins = s
        .world
        .get::<CameraFrame>(camera)
        .expect("a frame")
        .pins
        .clone();
    pins.result(dnn, 1);
    pins.started(dnn, 2);
    pins.started(other, 3);
    s.world.despawn(dnn);
    assert!(
        !pins.pinned(1) && !pins.pinned(2),
        "the despawned DNN's frames"
    );
    assert!(pins.pinned(3), "another DNN's frame stays pinned");
    s.world.entity_mut(other).remove::<Dnn>();
    assert!(!pins.pinned(3), "a removed Dnn component releases too");
}

/// A DNN whose results stop coming (its decodes fail) keeps at most a few frames, the newest; a
/// later result releases every older inference's frame, delivered or not.
#[test]
fn pins_in_flight_are_bounded_and_a_result_releases_the_older_ones() {
    let pins = FramePins::default();
    let dnn = Entity::from_raw_u32(1).expect("valid index");
    for index in 1..=6 {
        pins.started(dnn, index);
    }
    assert!(!pins.pinned(1) && !pins.pinned(2), "beyond the bound");
    assert!((3..=6).all(|i| pins.pinned(i)), "the newest four");
    pins.result(dnn, 5);
    assert!(
        !pins.pinned(3) && !pins.pinned(4),
        "older than the delivered result"
    );
    assert!(pins.pinned(5) && pins.pinned(6));
}

/// A DNN whose decoder is slower than its model: the decode queue keeps one result waiting and
/// drops the older one undecoded when a newer one is read. The dropped results' pins go with
/// them, so the bound on in-flight pins never lets go of the frame whose result is decoding.
#[test]
fn a_result_dropped_undecoded_releases_its_pin_not_the_decoding_ones() {
    let pins = FramePins::default();
    let dnn = Entity::from_raw_u32(1).expect("valid index");
    // Frame 1's outputs decode; frames 2, 3 and 4 are read while it does, each replacing the
    // one waiting (2 and 3 dropped); 5 and 6 start meanwhile.
    pins.started(dnn, 1);
    pins.pending(dnn, 1).sent();
    for index in 2..=4 {
        pins.started(dnn, index);
        let waiting = pins.pending(dnn, index);
        if index < 4 {
            drop(waiting);
        } else {
            waiting.sent();
        }
    }
    pins.started(dnn, 5);
    pins.started(dnn, 6);
    assert!(pins.pinned(1), "the decoding result's frame stays pinned");
    assert!(
        !pins.pinned(2) && !pins.pinned(3),
        "dropped results keep no pin"
    );
    assert!((4..=6).all(|i| pins.pinned(i)));
    // Two inferences on one frame (a stalled camera): one dropped leaves the other's pin.
    pins.result(dnn, 6);
    pins.started(dnn, 7);
    pins.started(dnn, 7);
    drop(pins.pending(dnn, 7));
    assert!(
        pins.pinned(7),
        "the other inference on frame 7 still needs it"
    );
}
