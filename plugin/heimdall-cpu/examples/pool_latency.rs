//! What a split op costs the thread pool beyond its work: back-to-back jobs of `4 x threads`
//! parts, as the kernels split their output (`Par::for_tiles`), each part a fixed amount of
//! arithmetic, timed over many jobs. `overhead` is a job's wall time minus a thread's share of
//! the work (`parts / threads` parts, timed on one thread); with no work it is the pool's
//! round trip (publish, claim, count, wait).
//!
//! `cargo run --release -p heimdall-cpu --example pool_latency -- [threads] [rounds]`
//! (defaults 2 and 9): the median and the lowest of the rounds, in microseconds.

use std::hint::black_box;
use std::time::Instant;

use heimdall_cpu::kernels::Par;

/// Arithmetic that takes a few nanoseconds per step and that the compiler cannot drop.
fn busy(steps: u32) -> f32 {
    let mut x = 1.0f32;
    for i in 0..steps {
        x = black_box(x * 0.999_9 + i as f32 * 1e-9);
    }
    x
}

/// Microseconds per job of `jobs` jobs of `parts` parts of `steps` steps each.
fn per_job(par: &Par, parts: usize, steps: u32, jobs: usize) -> f64 {
    let mut out = vec![0.0f32; parts * 16];
    let row_cuts: Vec<usize> = (0..=parts).collect();
    let t = Instant::now();
    for _ in 0..jobs {
        par.for_tiles(&mut out, 16, &row_cuts, &[0, 16], |_, _, tile| {
            tile.row(0)[0] = busy(steps);
        });
    }
    t.elapsed().as_secs_f64() * 1e6 / jobs as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let threads: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(9);
    let par = Par::new(threads);
    let one = Par::new(1);
    let parts = 4 * threads;
    println!("threads {threads}, {parts} parts a job, {rounds} rounds; microseconds");
    println!(
        "| work a part | one part, 1 thread | job, median | job, lowest | overhead, median | overhead, lowest |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: | ---: |");
    for steps in [0u32, 200, 1000] {
        let jobs = if steps == 0 { 20_000 } else { 4_000 };
        let part = per_job(&one, 1, steps, jobs);
        let (mut job, mut over) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let j = par.install(|| per_job(&par, parts, steps, jobs));
            job.push(j);
            over.push(j - part * (parts / threads) as f64);
        }
        let low = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
        println!(
            "| {steps} steps | {part:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
            median(job.clone()),
            low(&job),
            median(over.clone()),
            low(&over)
        );
    }
    let c = par.counters();
    println!(
        "pool: {} jobs, {} woke parked threads, caller ran {:.1} % of the parts",
        c.jobs,
        c.jobs_waking,
        100.0 * c.caller_share().unwrap_or(0.0)
    );
}
