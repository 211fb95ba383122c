//! The 1x1 convolution on cooperative matrices (`shaders/conv_coop.wgsl`) against the CPU
//! backend, forced (no size rule) with each tile, where the test device has cooperative matrices
//! (16x16x16, f16 products, f32 sums: NVIDIA through `VK_KHR_cooperative_matrix`); elsewhere
//! (lavapipe) those tests print why and pass without running. Pixel counts that are not a
//! multiple of the tile (and smaller than it), channel counts that are not a multiple of 4, of
//! the K tile or of the tile's output channels, every fused epilogue, with and without residual;
//! f16 storage is where the kernel runs (f32 and packed f16 run the other kernels), within the
//! kernel tests' f16 bound (rel-L2 ≤ 3e-3: `common::kernel_tolerance`). Also which kernel the
//! NVIDIA tuning picks when the device has the configuration (any device).

mod common;

use common::{GraphBuilder, check_against_cpu, gpu, with_tuning};
use heimdall_gpu::arith::Arith;
use heimdall_gpu::coop::{COOP_64X64, COOP_128X64, COOP_128X128, COOP_TILES, ConvCoopRule};
use heimdall_gpu::ops::conv::{Conv1x1Kernel, conv1x1_kernel_for};
use heimdall_gpu::{GpuFamily, Precision, Tuning};
use heimdall_ir::{Activation, ConvAttrs, Epilogue, OpKind, Pad2d, UnaryKind};
use proptest::prelude::*;

/// Whether the test device runs cooperative matrices (NVIDIA with the 16x16x16 f16/f32
/// configuration); prints why not, once.
fn coop_device() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| {
        let Some(gpu) = gpu() else { return false };
        let ctx = &gpu.ctx;
        let ok = ctx.family() == GpuFamily::Nvidia
            && ctx.has_f16()
            && heimdall_gpu::coop::has_f16_f32_16(&ctx.coop_matrix);
        if !ok {
            heimdall_testkit::skip(
                "conv_coop (the cooperative-matrix kernel tests)",
                &format!(
                    "{} has no 16x16x16 f16/f32 cooperative matrices on an NVIDIA GPU ({} \
                     configurations)",
                    ctx.info.name,
                    ctx.coop_matrix.len()
                ),
            );
        }
        ok
    })
}

/// The test device's tuning with tile `i` and no size rule.
fn forced(i: usize) -> Tuning {
    let mut t = gpu().expect("gpu").ctx.tuning();
    t.conv_coop = Some(ConvCoopRule::one(COOP_TILES[i], 1, 0, true));
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
    let f16 = [Precision::F16; 2];
    match conv1x1_kernel_for(&t, f16, h * w, ci.div_ceil(4), co.div_ceil(4), Arith::F32) {
        Conv1x1Kernel::Coop(k) if k == COOP_TILES[tile] => {}
        other => {
            return Err(format!(
                "expected the cooperative-matrix kernel, got {other}"
            ));
        }
    }
    let window = Window {
        k: [1, 1],
        stride: [1, 1],
        dilation: [1, 1],
        pad: [0; 4],
    };
    windowed(tile, h, w, ci, co, window, [bias, residual], act, seed)
}

/// A window: kernel `[kh, kw]`, strides, dilations and pads `[top, left, bottom, right]`.
#[derive(Clone, Copy, Debug)]
struct Window {
    k: [usize; 2],
    stride: [usize; 2],
    dilation: [usize; 2],
    pad: [usize; 4],
}

/// A conv `[1, h, w, ci] -> [1, oh, ow, co]` through `win` with the epilogue `act` (0 none,
/// 1 relu, 2 hard-swish, 3 logistic, 4 PReLU, 5 tanh), `[bias, residual]`, compared with the
/// CPU under tile `tile` (a window larger than the padded input is no case).
#[allow(clippy::too_many_arguments)]
fn windowed(
    tile: usize,
    h: usize,
    w: usize,
    ci: usize,
    co: usize,
    win: Window,
    [bias, residual]: [bool; 2],
    act: u8,
    seed: u64,
) -> Result<(), String> {
    let t = forced(tile);
    let [kh, kw] = win.k;
    let out_dim = |n: usize, k: usize, s: usize, d: usize, p: usize| {
        (n + p).checked_sub(d * (k - 1) + 1).map(|v| v / s + 1)
    };
    let (Some(oh), Some(ow)) = (
        out_dim(
            h,
            kh,
            win.stride[0],
            win.dilation[0],
            win.pad[0] + win.pad[2],
        ),
        out_dim(
            w,
            kw,
            win.stride[1],
            win.dilation[1],
            win.pad[1] + win.pad[3],
        ),
    ) else {
        return Ok(());
    };
    let mut b = GraphBuilder::default();
    let x = b.input(&[1, h, w, ci]);
    let f = b.constant(&[co, kh, kw, ci], seed);
    let mut inputs = vec![x, f];
    if bias {
        inputs.push(b.constant(&[co], seed + 1));
    }
    let out = [1, oh, ow, co];
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
        stride: win.stride,
        dilation: win.dilation,
        pad: Pad2d {
            top: win.pad[0],
            left: win.pad[1],
            bottom: win.pad[2],
            right: win.pad[3],
        },
    };
    let y = b.op(OpKind::Conv2d(attrs), inputs, &out, ep);
    with_tuning(t, || check_against_cpu(&b.finish(vec![y]), seed))
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(common::kernel_cases(12)) })]

    #[test]
    fn conv1x1_coop_matches_the_cpu(tile in 0..3usize, h in 1..24usize, w in 1..24usize, ci in 1..90usize, co in 1..150usize, bias: bool, act in 0..6u8, residual: bool, seed in 0..1000u64) {
        if !coop_device() { return Ok(()); }
        case(tile, h, w, ci, co, bias, act, residual, seed).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn windowed_conv_coop_matches_the_cpu(tile in 0..3usize, h in 1..20usize, w in 1..20usize, ci in 1..40usize, co in 1..80usize, k in prop::sample::select(vec![(1usize, 1usize), (3, 3), (2, 3), (5, 5), (1, 3), (9, 9)]), stride in 1..3usize, dilation in 1..3usize, pad in 0..3usize, bias: bool, act in 0..6u8, residual: bool, seed in 0..1000u64) {
        if !coop_device() { return Ok(()); }
        let win = Window { k: [k.0, k.1], stride: [stride; 2], dilation: [dilation, 1], pad: [pad, pad, pad + stride - 1, pad] };
        windowed(tile, h, w, ci, co, win, [bias, residual], act, seed).map_err(TestCaseError::fail)?;
    }
}

/// Layers larger than a tile in every direction: several pixel and channel tiles with partial
/// last ones, reductions of many K tiles with a partial last one (150 = 4 x 32 + 22 channels),
/// one K tile, and the probe's 128x128x256 -> 256.
#[test]
fn several_tiles_in_every_direction() {
    if !coop_device() {
        return;
    }
    for (tile, seed) in [(0, 1), (1, 2), (2, 3)] {
        case(tile, 37, 41, 150, 261, true, 4, true, seed).unwrap();
    }
    case(0, 9, 30, 3, 70, false, 0, false, 4).unwrap();
    case(1, 16, 8, 16, 64, true, 1, false, 5).unwrap();
    case(0, 128, 128, 256, 256, true, 1, false, 6).unwrap();
    // multistyle26's layers: 9x9 3 -> 32 (reflect-padded input), 3x3 stride 2 32 -> 32, and
    // 3x3 32 -> 32 with a residual.
    let valid = |k, s| Window {
        k: [k, k],
        stride: [s, s],
        dilation: [1, 1],
        pad: [0; 4],
    };
    windowed(0, 72, 72, 3, 32, valid(9, 1), [true, false], 1, 7).unwrap();
    windowed(0, 66, 66, 32, 32, valid(3, 2), [true, false], 0, 8).unwrap();
    windowed(1, 66, 66, 32, 32, valid(3, 1), [true, true], 1, 9).unwrap();
}

/// With the 16x16x16 f16/f32 configuration, NVIDIA's tuning takes the cooperative-matrix kernel
/// for large layers of f16 inputs and weights only: f32 keeps the tiled kernel, small grids the
/// split reduction or the blocked kernel, short reductions the blocked one, and
/// `HEIMDALL_CONV_COOP` is not set in tests. Runs on any device (nothing is dispatched).
#[test]
fn nvidia_with_coop_picks_it_for_large_f16_layers() {
    let Some(gpu) = gpu() else { return };
    if std::env::var_os("HEIMDALL_CONV_COOP").is_some() || !gpu.ctx.has_f16() {
        heimdall_testkit::skip(
            "conv_coop::nvidia_with_coop_picks_it_for_large_f16_layers",
            "HEIMDALL_CONV_COOP is set or the device has no f16",
        );
        return;
    }
    let mut ctx = gpu.ctx.clone();
    ctx.info.vendor = 0x10de;
    ctx.info.device_type = wgpu::DeviceType::DiscreteGpu;
    ctx.coop_matrix = vec![wgpu::CooperativeMatrixProperties {
        m_size: 16,
        n_size: 16,
        k_size: 16,
        ab_type: wgpu::CooperativeScalarType::F16,
        cr_type: wgpu::CooperativeScalarType::F32,
        saturating_accumulation: false,
    }];
    // As GpuContext::create asks for where the adapter has cooperative matrices.
    ctx.limits.max_compute_workgroup_storage_size = 48 << 10;
    let t = ctx.tuning();
    assert_eq!(
        t.conv_coop.map(|r| r.tiles),
        Some(COOP_TILES),
        "{:?}",
        t.conv_coop
    );
    let kernel = |p: Precision, px: usize, ci: usize, co: usize| {
        conv1x1_kernel_for(&t, [p; 2], px, ci.div_ceil(4), co.div_ceil(4), Arith::F32)
    };
    assert_eq!(
        kernel(Precision::F16, 128 * 128, 256, 256),
        Conv1x1Kernel::Coop(COOP_128X128)
    );
    assert_eq!(
        kernel(Precision::F16, 80 * 160, 48, 96),
        Conv1x1Kernel::Coop(COOP_64X64)
    );
    assert_eq!(
        kernel(Precision::F16, 256 * 256, 256, 64),
        Conv1x1Kernel::Coop(COOP_128X64)
    );
    assert!(matches!(
        kernel(Precision::F32, 128 * 128, 256, 256),
        Conv1x1Kernel::Tiled(..)
    ));
    assert!(matches!(
        kernel(Precision::PackedF16, 128 * 128, 256, 256),
        Conv1x1Kernel::Tiled(..)
    ));
    assert!(matches!(
        kernel(Precision::F16, 7 * 7, 1152, 192),
        Conv1x1Kernel::SplitK { .. }
    ));
    assert!(matches!(
        kernel(Precision::F16, 128 * 128, 16, 256),
        Conv1x1Kernel::Blocked(..)
    ));
    // Without the configuration, none.
    ctx.coop_matrix.clear();
    assert_eq!(ctx.tuning().conv_coop, None);
}
