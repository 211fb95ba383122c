//! Criterion benchmarks of the camera-to-input preprocessing on the CPU (`heimdall_image::
//! resample`, one thread), as the CPU backend runs it before each inference on the CPU: the
//! workspace's text detector (a 320×180 camera frame to RapidOCR's 736×1312 input, the whole
//! frame, three channels: the separable path) and a hand landmark crop (a rotated 224×224
//! region: the general path).
//!
//! `cargo bench -p heimdall-benches --bench preprocess`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use heimdall_vision::image::{Border, Crop, RotatedRect, resample};
use heimdall_vision::text::TEXT_NORMALIZATION;
use heimdall_vision::{Normalization, Vec2};

/// A camera frame of `w × h` RGBA pixels with some texture.
fn frame(w: usize, h: usize) -> Vec<u8> {
    (0..w * h * 4).map(|i| (i * 37 % 251) as u8).collect()
}

fn preprocess(c: &mut Criterion) {
    let (w, h) = (320, 180);
    let rgba = frame(w, h);
    c.bench_function("resample text 320x180 -> 736x1312x3 (whole frame)", |b| {
        b.iter(|| {
            black_box(
                resample(
                    &rgba,
                    w,
                    h,
                    &Crop::FULL,
                    &TEXT_NORMALIZATION,
                    [736, 1312, 3],
                )
                .expect("resample"),
            )
        })
    });
    let hand = Crop::rotated(
        &RotatedRect {
            center: Vec2::new(0.55, 0.5),
            size: Vec2::new(0.4, 0.7),
            rotation: 0.6,
        },
        w as u32,
        h as u32,
        Border::ZERO,
    );
    c.bench_function("resample hand 320x180 -> rotated 224x224x3", |b| {
        b.iter(|| {
            black_box(
                resample(
                    &rgba,
                    w,
                    h,
                    &hand,
                    &Normalization::ZERO_TO_ONE,
                    [224, 224, 3],
                )
                .expect("resample"),
            )
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = preprocess
}
criterion_main!(benches);
