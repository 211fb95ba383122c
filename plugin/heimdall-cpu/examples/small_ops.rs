//! hand_landmark_lite's slowest shapes one at a time: the 1x1 projections to 16 channels, the
//! 16 -> 64 expansion, the 2x2 max pool and a 7x7 projection, each timed back to back with the
//! op's own fused epilogue left out. It tells a kernel change's effect apart from the rest of
//! the model; `heimdall bench --per-op` is the figure for a whole model.
//!
//! `cargo run --release -p heimdall-cpu --example small_ops -- [threads] [rounds]` (defaults 1
//! and 7): per op the median and the lowest of the rounds' medians, in microseconds, and GFLOP/s
//! (a max-pool tap counts as one).

use std::hint::black_box;
use std::time::Instant;

use heimdall_cpu::kernels::{Epilogue, PackedConv, Par, Window, max_pool};

fn data(len: usize) -> Vec<f32> {
    (0..len)
        .map(|i| ((i * 7919 % 1000) as f32) / 500.0 - 1.0)
        .collect()
}

fn window(h: usize, c: usize, out_c: usize, k: usize, stride: usize) -> Window {
    let out = h / stride;
    Window {
        in_h: h,
        in_w: h,
        in_c: c,
        out_h: out,
        out_w: out,
        out_c,
        k_h: k,
        k_w: k,
        stride_h: stride,
        stride_w: stride,
        dil_h: 1,
        dil_w: 1,
        pad_top: 0,
        pad_left: 0,
    }
}

/// Microseconds per call of `f`: the median of `rounds` rounds of enough calls for ~20 ms.
fn time(rounds: usize, mut f: impl FnMut()) -> (f64, f64) {
    for _ in 0..20 {
        f();
    }
    let t = Instant::now();
    f();
    let once = t.elapsed().as_secs_f64();
    let calls = ((0.02 / once.max(1e-7)) as usize).clamp(10, 100_000);
    let mut per: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..calls {
                f();
            }
            t.elapsed().as_secs_f64() * 1e6 / calls as f64
        })
        .collect();
    per.sort_by(f64::total_cmp);
    (per[per.len() / 2], per[0])
}

fn main() {
    let mut args = std::env::args().skip(1);
    let threads: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(7);
    let par = Par::new(threads);
    println!("threads {threads}, {rounds} rounds; microseconds per call");
    println!("| op | median | lowest | GFLOP/s |");
    println!("| --- | ---: | ---: | ---: |");
    let convs = [
        ("conv 1x1 112x112x24 -> 16", window(112, 24, 16, 1, 1)),
        ("conv 1x1 112x112x16 -> 64", window(112, 16, 64, 1, 1)),
        ("conv 1x1 56x56x64 -> 16", window(56, 64, 16, 1, 1)),
        ("conv 1x1 56x56x96 -> 16", window(56, 96, 16, 1, 1)),
        ("conv 1x1 56x56x16 -> 96", window(56, 16, 96, 1, 1)),
        ("conv 1x1 28x28x144 -> 24", window(28, 144, 24, 1, 1)),
        ("conv 1x1 7x7x672 -> 112", window(7, 672, 112, 1, 1)),
        ("conv 1x1 7x7x112 -> 672", window(7, 112, 672, 1, 1)),
    ];
    for (name, w) in convs {
        let conv = PackedConv::new(
            &data(w.out_c * w.k_h * w.k_w * w.in_c),
            Some(&data(w.out_c)),
            w,
        );
        let input = data(w.in_h * w.in_w * w.in_c);
        let mut out = vec![0.0; w.out_h * w.out_w * w.out_c];
        let mut scratch = vec![0.0; conv.scratch_len(&par)];
        let flop = 2.0 * (w.out_h * w.out_w * w.out_c * w.k_h * w.k_w * w.in_c) as f64;
        let (med, low) = par.install(|| {
            time(rounds, || {
                conv.run(
                    &par,
                    black_box(&input),
                    &mut out,
                    &mut scratch,
                    &Epilogue::NONE,
                )
            })
        });
        println!("| {name} | {med:.2} | {low:.2} | {:.1} |", flop / med / 1e3);
    }
    let w = window(112, 16, 16, 2, 2);
    let input = data(w.in_h * w.in_w * w.in_c);
    let mut out = vec![0.0; w.out_h * w.out_w * w.out_c];
    let taps = (w.out_h * w.out_w * w.out_c * 4) as f64;
    let (med, low) = par.install(|| {
        time(rounds, || {
            max_pool(&par, &w, black_box(&input), &mut out, &Epilogue::NONE)
        })
    });
    println!(
        "| max pool 2x2 s2 112x112x16 | {med:.2} | {low:.2} | {:.1} |",
        taps / med / 1e3
    );
}
