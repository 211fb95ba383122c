//! Criterion benchmarks of the CPU kernels per instruction set: every kernel that has a NEON
//! variant (the matrix product behind 1x1 and 3x3 convolutions and fully-connected layers, the
//! depthwise convolution, the element-wise epilogues, and the f16 matrix product where the core
//! has FEAT_FP16) on MediaPipe-sized shapes, once per instruction set this CPU runs
//! (`heimdall_cpu::kernels::Isa::available`: portable and NEON on aarch64, portable, AVX2 and
//! AVX-512 on x86-64), one thread. Throughput is in elements/s where one element is one FLOP
//! (one multiply-add = 2 FLOP) for the convolutions, one value for the epilogues, so
//! criterion's "Gelem/s" reads as GFLOP/s or Gvalues/s.
//!
//! `cargo bench -p heimdall-benches --bench neon_kernels` (on an ARM board or phone:
//! `--target aarch64-unknown-linux-gnu`, then run the bench binary there with `--bench`).
//!
//! Under qemu-user (`qemu-aarch64`, as in CI) only correctness counts: the emulator's timings
//! say nothing about an ARM core. `neon_kernels --bench --test` (criterion's test mode) runs
//! each benchmark once, which is how CI checks that it works there.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use heimdall_cpu::kernels::{
    Act, Epilogue, F16Conv, Isa, PackedConv, PackedDepthwise, Par, Window,
};
use std::hint::black_box;

fn data(len: usize) -> Vec<f32> {
    (0..len)
        .map(|i| ((i * 7919 % 1000) as f32) / 500.0 - 1.0)
        .collect()
}

fn window(h: usize, w: usize, c: usize, out_c: usize, k: usize, stride: usize) -> Window {
    let out_h = h.div_ceil(stride);
    let out_w = w.div_ceil(stride);
    let pad = |input: usize, out: usize| ((out - 1) * stride + k).saturating_sub(input) / 2;
    Window {
        in_h: h,
        in_w: w,
        in_c: c,
        out_h,
        out_w,
        out_c,
        k_h: k,
        k_w: k,
        stride_h: stride,
        stride_w: stride,
        dil_h: 1,
        dil_w: 1,
        pad_top: pad(h, out_h),
        pad_left: pad(w, out_w),
    }
}

fn name(w: &Window) -> String {
    format!(
        "{}x{}x{}-{}-k{}s{}",
        w.in_h, w.in_w, w.in_c, w.out_c, w.k_h, w.stride_h
    )
}

/// A convolution (the matrix product: direct for 1x1, implicit im2col otherwise) per ISA.
fn conv(c: &mut Criterion, w: Window) {
    let par = Par::new(1);
    let (filter, bias) = (data(w.out_c * w.k_h * w.k_w * w.in_c), data(w.out_c));
    let input = data(w.in_h * w.in_w * w.in_c);
    let mut out = vec![0.0; w.out_h * w.out_w * w.out_c];
    let flops = 2 * w.out_h * w.out_w * w.out_c * w.k_h * w.k_w * w.in_c;
    let mut g = c.benchmark_group("conv");
    g.throughput(Throughput::Elements(flops as u64));
    for isa in Isa::available() {
        let conv = PackedConv::with_isa(isa, &filter, Some(&bias), w);
        let mut scratch = vec![0.0; conv.scratch_len(&par)];
        g.bench_function(format!("{}/{}", name(&w), conv.isa()), |b| {
            b.iter(|| {
                conv.run(
                    &par,
                    black_box(&input),
                    &mut out,
                    &mut scratch,
                    &Epilogue::NONE,
                )
            })
        });
    }
    if let Some(conv) = F16Conv::new(&filter, Some(&bias), w) {
        let mut scratch = vec![0.0; conv.scratch_len(&par)];
        g.bench_function(format!("{}/neon-f16", name(&w)), |b| {
            b.iter(|| {
                conv.run(
                    &par,
                    black_box(&input),
                    &mut out,
                    &mut scratch,
                    &Epilogue::NONE,
                )
            })
        });
    }
    g.finish();
}

/// A depthwise convolution per ISA.
fn depthwise(c: &mut Criterion, w: Window) {
    let par = Par::new(1);
    let (filter, bias) = (data(w.k_h * w.k_w * w.out_c), data(w.out_c));
    let input = data(w.in_h * w.in_w * w.in_c);
    let mut out = vec![0.0; w.out_h * w.out_w * w.out_c];
    let flops = 2 * w.out_h * w.out_w * w.out_c * w.k_h * w.k_w;
    let mut g = c.benchmark_group("depthwise");
    g.throughput(Throughput::Elements(flops as u64));
    for isa in Isa::available() {
        let dw = PackedDepthwise::with_isa(isa, &filter, Some(&bias), w);
        if dw.isa() != isa {
            continue; // no depthwise kernel of this ISA (AVX2): the portable row covers it
        }
        g.bench_function(format!("{}/{}", name(&w), dw.isa()), |b| {
            b.iter(|| dw.run(&par, black_box(&input), &mut out, &Epilogue::NONE))
        });
    }
    g.finish();
}

/// The epilogue `act(x + residual)` on a 64x64x32 tensor per ISA.
fn epilogue(c: &mut Criterion) {
    let n = 64 * 64 * 32;
    let (x, residual, alpha) = (data(n), data(n), data(32));
    let mut out = x.clone();
    let mut g = c.benchmark_group("epilogue");
    g.throughput(Throughput::Elements(n as u64));
    let acts: [(&str, Act); 5] = [
        ("relu6", Act::Relu6),
        ("hardswish", Act::HardSwish),
        ("prelu", Act::Prelu(&alpha)),
        ("logistic", Act::Logistic),
        ("none", Act::None),
    ];
    for (act_name, act) in acts {
        let ep = Epilogue {
            residual: Some(&residual),
            act,
        };
        for isa in Isa::available() {
            g.bench_function(format!("residual+{act_name}/{isa}"), |b| {
                b.iter(|| {
                    out.copy_from_slice(&x);
                    ep.apply_with(isa, black_box(&mut out), 0, 32);
                })
            });
        }
    }
    g.finish();
}

fn kernels(c: &mut Criterion) {
    // 1x1 convolutions of the MediaPipe models (face_landmark, hand_landmark_lite, palm).
    for w in [
        window(96, 96, 16, 16, 1, 1),
        window(112, 112, 16, 64, 1, 1),
        window(56, 56, 16, 96, 1, 1),
        window(56, 56, 96, 16, 1, 1),
        window(24, 24, 256, 128, 1, 1),
        window(14, 14, 64, 384, 1, 1),
    ] {
        conv(c, w);
    }
    // 3x3: the first layers (3 input channels, stride 2) and a 3x3 of a U-net's decoder.
    for w in [
        window(128, 128, 3, 24, 3, 2),
        window(192, 192, 3, 32, 3, 2),
        window(32, 32, 32, 32, 3, 1),
    ] {
        conv(c, w);
    }
    for w in [
        window(112, 112, 24, 24, 3, 1),
        window(96, 96, 32, 32, 5, 1),
        window(56, 56, 96, 96, 3, 2),
        window(14, 14, 288, 288, 5, 1),
    ] {
        depthwise(c, w);
    }
    epilogue(c);
}

criterion_group!(benches, kernels);
criterion_main!(benches);
