//! The convolution blockings of every GPU family, run on the test device: the context's adapter
//! info is rewritten to each family's vendor id and device type, so lavapipe runs the blocks and
//! work-group sizes an NVIDIA, AMD, Intel, Mali, Adreno or Apple GPU would get; each is compared
//! with the CPU backend (rel-L2 ≤ 1e-5 in f32, ≤ 3e-3 in f16).

mod common;

use common::{GraphBuilder, data, gpu, kernel_tolerance, run_cpu};
use heimdall_gpu::ops::conv::conv1x1_blocking;
use heimdall_gpu::{GpuContext, GpuError, GpuFamily, GpuModel, GpuOptions, Precision, Tuning};
use heimdall_ir::{ConvAttrs, Epilogue, Graph, OpKind, Pad2d};
use heimdall_testkit::rel_l2;

fn as_family(ctx: &GpuContext, vendor: u32, device_type: wgpu::DeviceType) -> GpuContext {
    let mut c = ctx.clone();
    c.info.vendor = vendor;
    c.info.device_type = device_type;
    c.info.name = format!("pretend {vendor:#x}");
    c
}

/// A 1x1 conv and a 3x3 stride-2 conv, both with bias, feeding a ReLU (so they store in the
/// model's precision).
fn graph(h: usize, w: usize, ci: usize, co: usize) -> Graph {
    let mut b = GraphBuilder::default();
    let x = b.input(&[1, h, w, ci]);
    let w1 = b.constant(&[co, 1, 1, ci], 1);
    let b1 = b.constant(&[co], 2);
    let one = ConvAttrs {
        stride: [1, 1],
        dilation: [1, 1],
        pad: Pad2d::default(),
    };
    let y1 = b.op(
        OpKind::Conv2d(one),
        vec![x, w1, b1],
        &[1, h, w, co],
        Epilogue::default(),
    );
    let w2 = b.constant(&[co, 3, 3, co], 3);
    let b2 = b.constant(&[co], 4);
    let three = ConvAttrs {
        stride: [2, 2],
        dilation: [1, 1],
        pad: Pad2d {
            top: 1,
            bottom: 1,
            left: 1,
            right: 1,
        },
    };
    let (oh, ow) = ((h + 2 - 3) / 2 + 1, (w + 2 - 3) / 2 + 1);
    let y2 = b.op(
        OpKind::Conv2d(three),
        vec![y1, w2, b2],
        &[1, oh, ow, co],
        Epilogue::default(),
    );
    let y = b.op(
        OpKind::Unary(heimdall_ir::UnaryKind::Relu),
        vec![y2],
        &[1, oh, ow, co],
        Epilogue::default(),
    );
    let _ = y1;
    b.finish(vec![y])
}

#[test]
fn every_family_blocking_matches_the_cpu() {
    let Some(gpu) = gpu() else { return };
    use wgpu::DeviceType::{DiscreteGpu, IntegratedGpu};
    let families = [
        (0x10de, DiscreteGpu, GpuFamily::Nvidia),
        (0x1002, DiscreteGpu, GpuFamily::Amd),
        (0x8086, IntegratedGpu, GpuFamily::Intel),
        (0x13b5, IntegratedGpu, GpuFamily::Mali),
        (0x5143, IntegratedGpu, GpuFamily::Adreno),
        (0x106b, IntegratedGpu, GpuFamily::Apple),
    ];
    // 131x127 pixels, 22 -> 53 channels: odd sizes, a partial last tile and slice, and a grid
    // large enough for the biggest block of the desktop families.
    let (h, w, ci, co) = (131, 127, 22, 53);
    let g = graph(h, w, ci, co);
    let input = data(9, h * w * ci);
    let want = run_cpu(&g, std::slice::from_ref(&input));
    let mut blockings = std::collections::BTreeSet::new();
    for (vendor, ty, family) in families {
        let ctx = as_family(&gpu.ctx, vendor, ty);
        assert_eq!(ctx.family(), family);
        let b = conv1x1_blocking(&ctx, h * w, co.div_ceil(4));
        blockings.insert(b.to_string());
        for p in [Precision::F32, Precision::F16] {
            let m = GpuModel::compile(&ctx, &g, GpuOptions::new(p)).expect("compile");
            let out = m.run(&[&input]).expect("run");
            let err = rel_l2(&out[0], &want[0]);
            println!("{family:?} {p:?} ({b}): rel-L2 {err:.2e}");
            assert!(
                err <= kernel_tolerance(p),
                "{family:?} {p:?}: rel-L2 {err:.3e}"
            );
        }
    }
    // The families really differ (the test would be vacuous otherwise).
    assert!(blockings.len() >= 3, "{blockings:?}");
    gpu.assert_no_errors();
}

/// A desktop GPU splits the reduction of a 1x1 convolution whose grid is small (pose_detection's
/// 7x7x1152 -> 192: 2352 output vec4s, 288 input slices) across a work group: the split the
/// rule picks by hand (16 parts of 18 slices, 37 632 threads < 2 x 32 768), and a result that
/// matches the CPU. A CPU rasteriser never splits.
#[test]
fn desktop_gpus_split_long_reductions_of_small_grids() {
    let Some(gpu) = gpu() else { return };
    let nvidia = as_family(&gpu.ctx, 0x10de, wgpu::DeviceType::DiscreteGpu);
    let t = nvidia.tuning();
    assert_eq!(t.split_k(7 * 7 * 48, 288), Some(16));
    // 4x4x128 -> 128 (face_landmark_with_attention): 512 outputs, 32 slices: 8 parts of 4.
    assert_eq!(t.split_k(16 * 32, 32), Some(8));
    // Large grids and short reductions stay one thread per output block.
    assert_eq!(t.split_k(128 * 128 * 64, 64), None);
    assert_eq!(t.split_k(512, 7), None);
    let lavapipe = as_family(&gpu.ctx, 0x10005, wgpu::DeviceType::Cpu);
    assert_eq!(lavapipe.tuning().split_k(7 * 7 * 48, 288), None);

    let (h, w, ci, co) = (7, 7, 1150, 190);
    let mut b = GraphBuilder::default();
    let x = b.input(&[1, h, w, ci]);
    let wt = b.constant(&[co, 1, 1, ci], 5);
    let bias = b.constant(&[co], 6);
    let one = ConvAttrs {
        stride: [1, 1],
        dilation: [1, 1],
        pad: Pad2d::default(),
    };
    let y = b.op(
        OpKind::Conv2d(one),
        vec![x, wt, bias],
        &[1, h, w, co],
        Epilogue::default(),
    );
    let r = b.op(
        OpKind::Unary(heimdall_ir::UnaryKind::Relu),
        vec![y],
        &[1, h, w, co],
        Epilogue::default(),
    );
    let g = b.finish(vec![r]);
    let input = data(11, h * w * ci);
    let want = run_cpu(&g, std::slice::from_ref(&input));
    for p in [Precision::F32, Precision::F16] {
        let m = GpuModel::compile(&nvidia, &g, GpuOptions::new(p)).expect("compile");
        let out = m.run(&[&input]).expect("run");
        let err = rel_l2(&out[0], &want[0]);
        println!("split reduction {p:?}: rel-L2 {err:.2e}");
        assert!(err <= kernel_tolerance(p), "{p:?}: rel-L2 {err:.3e}");
    }
    gpu.assert_no_errors();
}

/// A tuning passed in `GpuOptions::tuning` is user input: one the device cannot run is a typed
/// error from `compile`, not a panic or a wgpu validation error.
#[test]
fn invalid_tunings_are_typed_errors() {
    let Some(gpu) = gpu() else { return };
    let g = graph(9, 7, 6, 5);
    let good = gpu.ctx.tuning();
    let max = gpu.ctx.limits.max_compute_invocations_per_workgroup;
    let bad_blocks: &'static [(u32, u32)] = &[(4, 2), (0, 1)];
    let cases = [
        Tuning {
            conv1x1_workgroup: 0,
            ..good
        },
        Tuning {
            conv1x1_workgroup: max + 1,
            ..good
        },
        Tuning {
            conv_blocks: bad_blocks,
            ..good
        },
        Tuning {
            conv_blocks: &[(9, 1)],
            ..good
        },
    ];
    for t in cases {
        let r = GpuModel::compile(&gpu.ctx, &g, GpuOptions::new(Precision::F32).with_tuning(t));
        assert!(
            matches!(r, Err(GpuError::Options(_))),
            "{t:?}: {:?}",
            r.err()
        );
    }
    // The device's own tuning, passed explicitly, compiles.
    GpuModel::compile(
        &gpu.ctx,
        &g,
        GpuOptions::new(Precision::F32).with_tuning(good),
    )
    .expect("the device's tuning");
    gpu.assert_no_errors();
}
