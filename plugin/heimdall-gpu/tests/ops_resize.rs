//! Resizing against the CPU backend (the reference), on random shapes (up- and downscaling,
//! odd sizes, channel counts not divisible by 4): the TFLite bilinear resize in its three
//! coordinate modes (errors relative to the computation's scale) and the ONNX Resize in every
//! mode (`MODES`: nearest with each rounding, linear, cubic) and coordinate transformation
//! (`COORDS`), measured as the ONNX ops are (`Measure::Strict`). Kernel: `src/ops/resize.rs`.
//! Each case is a `common::Case` (the one harness): f32 ≤ 1e-5, f16 and packed f16 ≤ 3e-3, no
//! wgpu error. Needs a GPU adapter (lavapipe in CI); `HEIMDALL_SKIP_GPU=1` skips.

mod common;

use common::{Case, GraphBuilder, kernel_cases};
use heimdall_ir::{CoordMode, Epilogue, NearestMode, OpKind, ResizeAttrs, ResizeMode, ResizeScale};
use proptest::prelude::*;

/// The ONNX coordinate transformations.
const COORDS: [CoordMode; 6] = [
    CoordMode::HalfPixel,
    CoordMode::PytorchHalfPixel,
    CoordMode::AlignCorners,
    CoordMode::Asymmetric,
    CoordMode::TfHalfPixelForNn,
    CoordMode::HalfPixelSymmetric,
];

/// The ONNX resize modes (linear twice: it is drawn as often as the cubic modes together).
const MODES: [ResizeMode; 8] = [
    ResizeMode::Nearest(NearestMode::RoundPreferFloor),
    ResizeMode::Nearest(NearestMode::RoundPreferCeil),
    ResizeMode::Nearest(NearestMode::Floor),
    ResizeMode::Nearest(NearestMode::Ceil),
    ResizeMode::Linear,
    ResizeMode::Linear,
    ResizeMode::Cubic {
        a: -0.75,
        exclude_outside: false,
    },
    ResizeMode::Cubic {
        a: -0.5,
        exclude_outside: true,
    },
];

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(kernel_cases(10)) })]

    #[test]
    fn resize_bilinear(h in 1..8usize, w in 1..8usize, c in 1..7usize, oh in 1..16usize, ow in 1..16usize, mode in 0..3u8, seed in 0..1000u64) {
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, h, w, c]);
        let kind = OpKind::Resize(ResizeAttrs::tflite_bilinear(mode == 1, mode == 2).unwrap());
        let y = b.op(kind, vec![x], &[1, oh, ow, c], Epilogue::default());
        Case::new("ResizeBilinear", b.finish(vec![y]), seed).prop()?;
    }

    #[test]
    fn resize(h in 1..9usize, w in 1..9usize, c in 1..10usize, oh in 1..15usize, ow in 1..15usize, mode in 0..MODES.len(), coord in 0..COORDS.len(), seed in 0..1000u64) {
        let name = format!("Resize {:?} {:?}", MODES[mode], COORDS[coord]);
        let attrs = ResizeAttrs {
            mode: MODES[mode],
            coord: COORDS[coord],
            scale: ResizeScale::Given([oh as f32 / h as f32, ow as f32 / w as f32]),
        };
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, h, w, c]);
        let y = b.op(OpKind::Resize(attrs), vec![x], &[1, oh, ow, c], Epilogue::default());
        Case::new(name, b.finish(vec![y]), seed).strict(false).prop()?;
    }
}
