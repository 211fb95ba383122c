//! Results carry their capture index: frames from the synthetic source go through a queue that
//! delivers them out of order and through a resampling step (as a GPU upload/readback or a
//! rescale would), and every result still decodes to the index it was captured with.

use std::collections::VecDeque;

use heimdall_image::CropTransform;
use heimdall_testkit::warp::warp;
use heimdall_testkit::{SyntheticSource, decode_frame_index};

#[test]
fn results_carry_the_capture_index() {
    let source = SyntheticSource::new(320, 240).unwrap();
    // "Capture" 40 frames starting at a large index, keep them in flight, finish them in a
    // scrambled order (every third first, then the rest backwards).
    let first = 1_000_000u32;
    let mut in_flight: VecDeque<(u32, _)> = (0..40)
        .map(|k| (first + k, source.frame(first + k)))
        .collect();
    let mut order: Vec<usize> = (0..40).step_by(3).collect();
    order.extend((0..40).rev().filter(|k| k % 3 != 0));
    let mut seen = Vec::new();
    for k in order {
        let (captured, frame) = in_flight[k].clone();
        // Processing: a 2x upscale (cells and rows get wider), then the same-size identity.
        let big = warp(&frame, &CropTransform::IDENTITY, 640, 480).unwrap();
        let result = warp(&big, &CropTransform::IDENTITY, 640, 480).unwrap();
        assert_eq!(decode_frame_index(&result), Some(captured));
        assert_eq!(decode_frame_index(&frame), Some(captured));
        seen.push(captured);
    }
    in_flight.clear();
    seen.sort_unstable();
    assert_eq!(seen, (first..first + 40).collect::<Vec<_>>());
}

#[test]
fn a_different_frame_does_not_decode_to_the_same_index() {
    let source = SyntheticSource::new(64, 16).unwrap();
    let a = source.frame(7);
    let b = source.frame(8);
    assert_ne!(decode_frame_index(&a), decode_frame_index(&b));
    // Destroying the code strip (e.g. a frame that was never synthetic) gives None, not a guess.
    let mut c = a.clone();
    for px in c.data[..64 * 4 * 4].chunks_exact_mut(4) {
        px.copy_from_slice(&[128, 128, 128, 255]);
    }
    assert_eq!(decode_frame_index(&c), None);
}
