//! The tiled 1x1 convolution (`shaders/conv1x1_tiled.wgsl`) against the CPU backend, forced
//! onto the test device (a CPU rasteriser never picks it) with each tile: pixel counts that are
//! not a multiple of the tile (and smaller than it), channel counts that are not a multiple of
//! 4, of the K tile (8) or of the tile's output channels, every fused epilogue; f32, f16 and
//! packed f16 storage (f32 arithmetic), within the kernel tests' bounds (rel-L2 ≤ 1e-5 in f32,
//! ≤ 3e-3 in f16: `common::kernel_tolerance`). Also which kernel the NVIDIA tuning picks, and
//! the convolution cache running tiled work groups from its lists.

mod common;

use common::{GraphBuilder, check_against_cpu, gpu, with_tuning};
use heimdall_gpu::arith::Arith;
use heimdall_gpu::ops::conv::{Conv1x1Kernel, conv1x1_kernel};
use heimdall_gpu::ops::conv1x1_tiled::{Conv1x1Tile, TILE_64X64, TILE_128X64, TILE_128X128};
use heimdall_gpu::{GpuFamily, Tuning};
use heimdall_ir::{Activation, ConvAttrs, Epilogue, OpKind, Pad2d, UnaryKind};
use proptest::prelude::*;

/// Each tile alone, as a `Tuning::conv1x1_tiles` list.
static ONE_TILE: [[Conv1x1Tile; 1]; 3] = [[TILE_128X128], [TILE_128X64], [TILE_64X64]];

/// The test device's tuning with only tile `i` and no size rule: every 1x1 convolution of at
/// least one input slice whose output fills half the tile's channels takes it.
fn forced(i: usize) -> Tuning {
    let mut t = gpu().expect("gpu").ctx.tuning();
    t.conv1x1_tiles = &ONE_TILE[i];
    t.conv1x1_tiled_min_slices = 1;
    t.min_threads = 0;
    t.conv1x1_tiled_min_threads = 0;
    t.split_k_threads = 0;
    t
}

/// A 1x1 conv `[1, h, w, ci] -> [1, h, w, co]` with the epilogue `act` (0 none, 1 relu,
/// 2 hard-swish, 3 logistic, 4 PReLU, 5 tanh) and optionally a residual, compared with the CPU.
#[allow(clippy::too_many_arguments)]
fn case(
    tile: usize,
    h: usize,
    w: usize,
    ci: usize,
    co: usize,
    bias: bool,
    act: u8,
    residual: bool,
    seed: u64,
) -> Result<(), String> {
    let t = forced(tile);
    match conv1x1_kernel(&t, h * w, ci.div_ceil(4), co.div_ceil(4), Arith::F32) {
        Conv1x1Kernel::Tiled(k) if k == ONE_TILE[tile][0] => {}
        other => return Err(format!("expected the tiled kernel, got {other}")),
    }
    let mut b = GraphBuilder::default();
    let x = b.input(&[1, h, w, ci]);
    let f = b.constant(&[co, 1, 1, ci], seed);
    let mut inputs = vec![x, f];
    if bias {
        inputs.push(b.constant(&[co], seed + 1));
    }
    let out = [1, h, w, co];
    let activation = match act {
        1 => Activation::Unary(UnaryKind::Relu),
        2 => Activation::Unary(UnaryKind::HardSwish),
        3 => Activation::Unary(UnaryKind::Logistic),
        4 => Activation::Prelu(b.constant(&[co], 77)),
        5 => Activation::Unary(UnaryKind::Tanh),
        _ => Activation::None,
    };
    let ep = Epilogue {
        residual: residual.then(|| b.input(&out)),
        activation,
    };
    let attrs = ConvAttrs {
        stride: [1, 1],
        dilation: [1, 1],
        pad: Pad2d::default(),
    };
    let y = b.op(OpKind::Conv2d(attrs), inputs, &out, ep);
    with_tuning(t, || check_against_cpu(&b.finish(vec![y]), seed))
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(common::kernel_cases(12)) })]

    #[test]
    fn conv1x1_tiled_matches_the_cpu(tile in 0..3usize, h in 1..24usize, w in 1..24usize, ci in 1..90usize, extra in 0..80usize, bias: bool, act in 0..6u8, residual: bool, seed in 0..1000u64) {
        // At least half the tile's output channels (the rule's minimum), up to 80 more.
        let co = 2 * ONE_TILE[tile][0].slices() as usize + extra;
        if gpu().is_none() { return Ok(()); }
        case(tile, h, w, ci, co, bias, act, residual, seed).map_err(TestCaseError::fail)?;
    }
}

/// Layers larger than a tile in every direction: several pixel and channel tiles with partial
/// last ones, reductions of many K tiles with a partial last one (150 = 18 x 8 + 6 channels).
#[test]
fn several_tiles_in_every_direction() {
    if gpu().is_none() {
        return;
    }
    for (tile, seed) in [(0, 1), (1, 2), (2, 3)] {
        case(tile, 37, 41, 150, 261, true, 4, true, seed).unwrap();
    }
    // A reduction of one K tile, and one of exactly two.
    case(0, 9, 30, 3, 70, false, 0, false, 4).unwrap();
    case(2, 16, 8, 8, 64, true, 1, false, 5).unwrap();
}

/// NVIDIA's tuning takes the tiled kernel for the probe's layer and other large grids, and keeps
/// the split reduction for small grids with long reductions and the blocked kernel for short
/// reductions, narrow outputs and f16 arithmetic.
#[test]
fn nvidia_picks_the_tiled_kernel_for_large_layers() {
    let Some(gpu) = gpu() else { return };
    let mut ctx = gpu.ctx.clone();
    ctx.info.vendor = 0x10de;
    ctx.info.device_type = wgpu::DeviceType::DiscreteGpu;
    assert_eq!(ctx.family(), GpuFamily::Nvidia);
    let t = ctx.tuning();
    let kernel = |px: usize, ci: usize, co: usize, arith| {
        conv1x1_kernel(&t, px, ci.div_ceil(4), co.div_ceil(4), arith)
    };
    // The probe's 128x128x256 -> 256: 256 work groups of 256 threads.
    assert_eq!(
        kernel(128 * 128, 256, 256, Arith::F32),
        Conv1x1Kernel::Tiled(TILE_128X128)
    );
    // 64 output channels: the 128 x 64 tile (512 work groups of 128 threads).
    assert_eq!(
        kernel(256 * 256, 256, 64, Arith::F32),
        Conv1x1Kernel::Tiled(TILE_128X64)
    );
    // PP-OCRv6_det_small's mid-size layers (grids of 4096 threads or more, 48 input channels
    // or more): tiled; palm_detection_lite's 96x96x32 -> 32 (8 input slices): not.
    assert_eq!(
        kernel(80 * 160, 48, 96, Arith::F32),
        Conv1x1Kernel::Tiled(TILE_128X128)
    );
    assert_eq!(
        kernel(40 * 80, 96, 192, Arith::F32),
        Conv1x1Kernel::Tiled(TILE_128X64)
    );
    assert!(!matches!(
        kernel(96 * 96, 32, 32, Arith::F32),
        Conv1x1Kernel::Tiled(..)
    ));
    // A small grid with a long reduction (pose_detection's 7x7x1152 -> 192): split.
    assert!(matches!(
        kernel(7 * 7, 1152, 192, Arith::F32),
        Conv1x1Kernel::SplitK { .. }
    ));
    // A short reduction (16 channels): blocked; a narrow output (8 channels): not tiled.
    assert!(matches!(
        kernel(128 * 128, 16, 256, Arith::F32),
        Conv1x1Kernel::Blocked(..)
    ));
    assert!(!matches!(
        kernel(128 * 128, 256, 8, Arith::F32),
        Conv1x1Kernel::Tiled(..)
    ));
    // f16 arithmetic keeps the blocked kernel, which computes in f16.
    assert!(matches!(
        kernel(128 * 128, 256, 256, Arith::F16Chunked(16)),
        Conv1x1Kernel::Blocked(..)
    ));
    // A device held to 128 threads per work group skips the 256-thread tile.
    let small = Tuning {
        max_workgroup: 128,
        ..t
    };
    assert_eq!(
        conv1x1_kernel(&small, 256 * 256, 256, 256, Arith::F32),
        Conv1x1Kernel::Tiled(TILE_128X64)
    );
    // The software rasteriser never tiles by default.
    if gpu.ctx.family() == GpuFamily::Software
        && std::env::var_os("HEIMDALL_CONV1X1_TILED").is_none()
    {
        assert!(gpu.ctx.tuning().conv1x1_tiles.is_empty());
    }
}

/// The convolution cache runs the tiled kernel's work groups from its lists (its pixel tiles are
/// a `TileMap::PixelTiles` map): palm_detection_lite with every 1x1 convolution of at least 32
/// output channels forced onto the 128 x 64 tile, one quadrant of the input changed, matches
/// the uncached run (rel-L2 ≤ 1e-6) and runs exactly the work groups whose pixel tiles read a
/// changed block; the tiled model matches the blocked one within the f32 kernel bound.
#[test]
fn the_convolution_cache_runs_tiled_work_groups() {
    use heimdall_gpu::conv_cache::dirty_workgroups;
    use heimdall_gpu::{GpuModel, GpuOptions, Precision};
    use heimdall_ir::conv_cache::{BlockGrid, ConvCacheConfig};

    let Some(gpu) = gpu() else { return };
    let path = heimdall_testkit::model_path("palm_detection_lite").expect("model");
    let g = heimdall::load_model(&path, heimdall::LoadOptions::default()).expect("load");
    let shape = g.tensor(g.inputs[0]).shape.clone();
    let (h, w) = (shape[1], shape[2]);
    let image = |seed: usize| -> Vec<f32> {
        (0..h * w * 3)
            .map(|i| ((i * (seed + 3) + i / (3 * w) * 7) % 97) as f32 / 48.0 - 1.0)
            .collect()
    };
    let x = image(1);
    let mut y = x.clone();
    let other = image(5);
    for r in h / 2..h {
        let row = (r * w + w / 2) * 3..(r * w + w) * 3;
        y[row.clone()].copy_from_slice(&other[row]);
    }
    // The forced tuning does tile some of the model's 1x1 convolutions.
    let t = forced(1);
    let tiled_ops = g
        .ops
        .iter()
        .filter(|op| matches!(op.kind, OpKind::Conv2d(a) if a.stride == [1, 1]))
        .filter(|op| {
            let (f, o) = (
                &g.tensor(op.inputs[1]).shape,
                &g.tensor(op.outputs[0]).shape,
            );
            f.len() == 4
                && f[1..3] == [1, 1]
                && matches!(
                    conv1x1_kernel(
                        &t,
                        o[1] * o[2],
                        f[3].div_ceil(4),
                        f[0].div_ceil(4),
                        Arith::F32
                    ),
                    Conv1x1Kernel::Tiled(_)
                )
        })
        .count();
    assert!(tiled_ops >= 3, "{tiled_ops} tiled 1x1 convolutions");
    let config = ConvCacheConfig {
        range: [-1.0, 1.0],
        expiry_ms: 0,
        ..ConvCacheConfig::default()
    };
    let tiled = GpuOptions::new(Precision::F32).with_tuning(t);
    let plain = GpuModel::compile(&gpu.ctx, &g, tiled.clone()).expect("compile");
    let cached =
        GpuModel::compile(&gpu.ctx, &g, tiled.with_conv_cache(config)).expect("compile cached");
    let blocked =
        GpuModel::compile(&gpu.ctx, &g, GpuOptions::new(Precision::F32)).expect("blocked");
    cached.run(&[&x]).expect("run");
    let a = cached.run(&[&y]).expect("cached run");
    let b = plain.run(&[&y]).expect("run");
    let c = blocked.run(&[&y]).expect("blocked run");
    let counts = cached.conv_cache_counts().expect("counts");
    for (i, ((a, b), c)) in a.iter().zip(&b).zip(&c).enumerate() {
        let e = heimdall_testkit::rel_l2(a, b);
        assert!(e <= 1e-6, "output {i}: cached vs uncached rel-L2 {e}");
        let e = heimdall_testkit::rel_l2(b, c);
        assert!(e <= 1e-5, "output {i}: tiled vs blocked rel-L2 {e}");
    }
    let grid = BlockGrid::new([h, w], [8, 8]);
    let mask: Vec<bool> = (0..64).map(|b| b / 8 >= 4 && b % 8 >= 4).collect();
    let want: u64 = cached
        .conv_cache()
        .map_or(&[][..], |c| c.dispatches())
        .iter()
        .map(|d| u64::from(dirty_workgroups(d, &grid, [h, w], &mask)))
        .sum();
    assert_eq!(counts.dirty_blocks, 16, "{counts:?}");
    assert_eq!(counts.computed_tiles, want, "work groups run: {counts:?}");
    assert!(counts.computed_tiles < counts.tiles, "{counts:?}");
    gpu.assert_no_errors();
}
