//! Criterion benchmarks of the f32 CPU kernels (heimdall-cpu), single-threaded unless the name
//! says how many threads, and of the thread pool's fixed cost per job, with the
//! throughput reported as elements/s where one element is one FLOP (one multiply-add = 2
//! FLOP), so criterion's "Gelem/s" reads as GFLOP/s.
//!
//! `cargo bench -p heimdall-benches --bench cpu_kernels`

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use heimdall_cpu::kernels::{Epilogue, PackedConv, PackedDepthwise, Par, Window, max_pool};
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

fn conv(c: &mut Criterion, name: &str, w: Window, threads: usize) {
    let par = Par::new(threads);
    let conv = PackedConv::new(
        &data(w.out_c * w.k_h * w.k_w * w.in_c),
        Some(&data(w.out_c)),
        w,
    );
    let input = data(w.in_h * w.in_w * w.in_c);
    let mut out = vec![0.0; w.out_h * w.out_w * w.out_c];
    let mut scratch = vec![0.0; conv.scratch_len(&par)];
    let flops = 2 * w.out_h * w.out_w * w.out_c * w.k_h * w.k_w * w.in_c;
    let mut g = c.benchmark_group("conv");
    g.throughput(Throughput::Elements(flops as u64));
    g.bench_function(name, |b| {
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
    g.finish();
}

fn depthwise(c: &mut Criterion, name: &str, w: Window, threads: usize) {
    let par = Par::new(threads);
    let dw = PackedDepthwise::new(&data(w.k_h * w.k_w * w.out_c), Some(&data(w.out_c)), w);
    let input = data(w.in_h * w.in_w * w.in_c);
    let mut out = vec![0.0; w.out_h * w.out_w * w.out_c];
    let flops = 2 * w.out_h * w.out_w * w.out_c * w.k_h * w.k_w;
    let mut g = c.benchmark_group("depthwise");
    g.throughput(Throughput::Elements(flops as u64));
    g.bench_function(name, |b| {
        b.iter(|| dw.run(&par, black_box(&input), &mut out, &Epilogue::NONE))
    });
    g.finish();
}

/// The fixed cost of one job of `threads` parts on a pool of `threads` threads (each part
/// writes one value): what every split op pays on top of its work.
fn pool_job(c: &mut Criterion, threads: usize) {
    let par = Par::new(threads);
    let mut out = vec![0.0f32; threads * 16];
    let mut g = c.benchmark_group("pool");
    g.bench_function(format!("job_of_{threads}_parts"), |b| {
        b.iter(|| {
            par.for_even_grid(&mut out, 16, (threads, 1), (1, 16), |rows, _, tile| {
                tile.row(0)[0] = black_box(rows.start as f32);
            })
        })
    });
    g.finish();
}

/// What reading another core's writes costs a small depthwise convolution (hand_landmark_lite's
/// 3x3 on 14x14x288): its input rewritten before each run by the pool in even row bands (as a
/// 1x1 convolution before it writes them; each thread then reads only its neighbours' edge
/// rows from other cores) or by the calling thread alone (the other threads read all of theirs
/// from its core), each beside the write alone and the convolution on an input no one rewrites.
/// On this 2-core machine at 2 threads the convolution took 12.4 µs on the untouched input,
/// about 17.9 after the pool's write and 28 after the caller's (the writes' own time taken off).
fn locality(c: &mut Criterion, threads: usize) {
    let w = window(14, 14, 288, 288, 3, 1);
    let par = Par::new(threads);
    let dw = PackedDepthwise::new(&data(w.k_h * w.k_w * w.out_c), Some(&data(w.out_c)), w);
    let src = data(w.in_h * w.in_w * w.in_c);
    let mut input = src.clone();
    let mut out = vec![0.0; w.out_h * w.out_w * w.out_c];
    let row = w.in_w * w.in_c;
    // The input rewritten by the pool, one even band of rows a thread.
    let pool_write = |input: &mut [f32]| {
        par.for_even_grid(input, row, (threads, 1), (1, row), |rows, _, tile| {
            for (i, r) in rows.enumerate() {
                tile.row(i).copy_from_slice(&src[r * row..(r + 1) * row]);
            }
        })
    };
    let mut g = c.benchmark_group("locality");
    g.bench_function(format!("pool_write_{threads}"), |b| {
        b.iter(|| pool_write(&mut input))
    });
    g.bench_function(format!("pool_write_dw_{threads}"), |b| {
        b.iter(|| {
            pool_write(&mut input);
            dw.run(&par, black_box(&input), &mut out, &Epilogue::NONE)
        })
    });
    g.bench_function(format!("caller_write_{threads}"), |b| {
        b.iter(|| input.copy_from_slice(&src))
    });
    g.bench_function(format!("caller_write_dw_{threads}"), |b| {
        b.iter(|| {
            input.copy_from_slice(&src);
            dw.run(&par, black_box(&input), &mut out, &Epilogue::NONE)
        })
    });
    g.bench_function(format!("dw_{threads}"), |b| {
        b.iter(|| dw.run(&par, black_box(&input), &mut out, &Epilogue::NONE))
    });
    g.finish();
}

/// A max pool, one window tap counted as one element.
fn max_pool_bench(c: &mut Criterion, name: &str, w: Window) {
    let par = Par::new(1);
    let input = data(w.in_h * w.in_w * w.in_c);
    let mut out = vec![0.0; w.out_h * w.out_w * w.out_c];
    let mut g = c.benchmark_group("max_pool");
    g.throughput(Throughput::Elements(
        (w.out_h * w.out_w * w.out_c * w.k_h * w.k_w) as u64,
    ));
    g.bench_function(name, |b| {
        b.iter(|| max_pool(&par, &w, black_box(&input), &mut out, &Epilogue::NONE))
    });
    g.finish();
}

fn kernels(c: &mut Criterion) {
    conv(c, "1x1_64x64x32_to_64", window(64, 64, 32, 64, 1, 1), 1);
    conv(c, "1x1_16x16x128_to_128", window(16, 16, 128, 128, 1, 1), 1);
    conv(c, "3x3s2_128x128x3_to_24", window(128, 128, 3, 24, 3, 2), 1);
    conv(c, "5x5s2_128x128x3_to_24", window(128, 128, 3, 24, 5, 2), 1);
    conv(c, "3x3_32x32x32_to_32", window(32, 32, 32, 32, 3, 1), 1);
    depthwise(c, "3x3_64x64x32", window(64, 64, 32, 32, 3, 1), 1);
    depthwise(c, "5x5_64x64x32", window(64, 64, 32, 32, 5, 1), 1);
    depthwise(c, "3x3s2_64x64x32", window(64, 64, 32, 32, 3, 2), 1);
    // hand_landmark_lite's pool and its projection to 16 channels.
    max_pool_bench(c, "2x2s2_112x112x16", window(112, 112, 16, 16, 2, 2));
    conv(c, "1x1_56x56x96_to_16", window(56, 56, 96, 16, 1, 1), 1);
    // hand_landmark_lite's first expansion (its output, 3.2 MB, is the model's largest).
    conv(c, "1x1_112x112x16_to_64", window(112, 112, 16, 64, 1, 1), 1);
    conv(
        c,
        "1x1_112x112x16_to_64_2threads",
        window(112, 112, 16, 64, 1, 1),
        2,
    );
    conv(
        c,
        "1x1_64x64x32_to_64_2threads",
        window(64, 64, 32, 64, 1, 1),
        2,
    );
    // hand_landmark_lite's 7x7 expansion, cut into one band of channels a thread.
    for threads in [1, 2, 4] {
        conv(
            c,
            &format!("1x1_7x7x112_to_672_{threads}threads"),
            window(7, 7, 112, 672, 1, 1),
            threads,
        );
    }
    for threads in [2, 4] {
        pool_job(c, threads);
    }
    for threads in [1, 2, 4] {
        locality(c, threads);
    }
    for threads in [1, 2, 4] {
        depthwise(
            c,
            &format!("3x3_14x14x288_{threads}threads"),
            window(14, 14, 288, 288, 3, 1),
            threads,
        );
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(2)).warm_up_time(std::time::Duration::from_millis(500));
    targets = kernels
}
criterion_main!(benches);
