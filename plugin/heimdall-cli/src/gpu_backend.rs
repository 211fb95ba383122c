//! `--backend gpu` for `run` and `bench`: the GPU backend on its own wgpu device (the CLI is the
//! only place that waits for the GPU).

use std::path::PathBuf;
use std::time::Instant;

use heimdall_gpu::guard::GuardDecision;
use heimdall_gpu::{
    CompileReport, GpuContext, GpuModel, GpuOptions, PipelineCacheState, Placement, Precision,
    StepProfile, WallParts, probe,
};
use heimdall_ir::Graph;
use serde_json::json;

/// Storage precision on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PrecisionArg {
    /// f32 storage and arithmetic.
    F32,
    /// f16 storage (native `shader-f16`, or packed in `u32` where the adapter lacks it), f32
    /// arithmetic.
    F16,
    /// f16 packed two per `u32`, f32 arithmetic (what phones without `shader-f16` run).
    PackedF16,
}

impl From<PrecisionArg> for Precision {
    fn from(p: PrecisionArg) -> Self {
        match p {
            PrecisionArg::F32 => Precision::F32,
            PrecisionArg::F16 => Precision::F16,
            PrecisionArg::PackedF16 => Precision::PackedF16,
        }
    }
}

/// Compiles `graph` on a device of the CLI's own.
pub fn compile(graph: &Graph, precision: PrecisionArg) -> anyhow::Result<GpuModel> {
    let ctx = GpuContext::create()?;
    let what = format!("compiling {} for the GPU", graph.name);
    Ok(crate::progress::step(what, || {
        GpuModel::compile(&ctx, graph, GpuOptions::new(precision.into()))
    })?)
}

/// Runs the model once and returns its outputs. With `guard` and a reduced precision, the
/// accuracy guard calibrates on these very inputs (`crate::gpu_guard`), so the outputs meet the
/// f16 bound against the CPU backend.
pub fn run(
    graph: &Graph,
    inputs: &[Vec<f32>],
    precision: PrecisionArg,
    guard: bool,
) -> anyhow::Result<Vec<Vec<f32>>> {
    let model = if guard {
        let ctx = GpuContext::create()?;
        let options = GpuOptions::new(precision.into());
        crate::gpu_guard::compile(&ctx, graph, options, Some(inputs))?.0
    } else {
        compile(graph, precision)?
    };
    let refs: Vec<&[f32]> = inputs.iter().map(Vec::as_slice).collect();
    Ok(model.run(&refs)?)
}

/// What `bench --backend gpu` measures and prints.
pub struct GpuBench {
    /// Storage precision.
    pub precision: PrecisionArg,
    /// Warm-up runs.
    pub warmup: usize,
    /// Timed runs.
    pub runs: usize,
    /// Per-step times too.
    pub per_op: bool,
    /// JSON output.
    pub json: bool,
    /// Pipeline cache file (a temporary one when `None`).
    pub pipeline_cache: Option<PathBuf>,
    /// The accuracy guard's calibration inputs (`None`: no guard). With a reduced precision the
    /// guard decides the f32 overrides first; the benchmarked compiles use them.
    pub guard: Option<Vec<Vec<f32>>>,
    /// Op ranges kept in f32 without a guard (`--f32-ops`).
    pub f32_ops: Vec<std::ops::Range<usize>>,
}

fn cache_label(s: &PipelineCacheState) -> String {
    match s {
        PipelineCacheState::Unused => "no pipeline cache (device lacks PIPELINE_CACHE)".into(),
        PipelineCacheState::Cold => "pipeline cache empty".into(),
        PipelineCacheState::Warm(n) => format!("pipeline cache {n} bytes"),
        PipelineCacheState::Failed(e) => format!("pipeline cache failed: {e}"),
    }
}

/// How long whole runs warm the GPU up before anything is timed.
const WARM_UP_TIME: std::time::Duration = std::time::Duration::from_millis(300);

/// The median of each part of the whole runs' wall time ([`WallParts`]), in ms.
fn wall_parts_medians(parts: &[WallParts]) -> serde_json::Value {
    let median = |f: fn(&WallParts) -> std::time::Duration| {
        crate::timing::summary(parts.iter().map(f).collect()).0
    };
    json!({
        "upload": median(|p| p.upload),
        "encode": median(|p| p.encode),
        "submit": median(|p| p.submit),
        "wait": median(|p| p.wait),
        "take": median(|p| p.take),
    })
}

/// Benchmarks the model: per-step GPU times (timestamps where the adapter has them) and the
/// wall time of whole runs, and compile time twice: cold (the pipeline cache file does not
/// exist yet, when no `--pipeline-cache` is given) and warm (seeded from the file the first
/// compile wrote); prints a table or JSON.
pub fn bench(graph: &Graph, inputs: &[Vec<f32>], b: &GpuBench) -> anyhow::Result<()> {
    let ctx = GpuContext::create()?;
    let compiled = Compiled::new(&ctx, graph, b)?;
    let refs: Vec<&[f32]> = inputs.iter().map(Vec::as_slice).collect();
    let times = GpuTimes::measure(&compiled.model, &refs, b.warmup, b.runs)?;
    if b.json {
        print_bench_json(graph, b, &compiled, &times)
    } else {
        print_bench_table(graph, b, &compiled, &times);
        Ok(())
    }
}

/// The benchmarked model, its cold and warm compile reports and the guard's decision.
struct Compiled {
    model: GpuModel,
    cold: CompileReport,
    warm: CompileReport,
    decision: Option<GuardDecision>,
}

impl Compiled {
    /// Runs the guard (if asked, with a reduced precision), then compiles `graph` twice with
    /// the pipeline cache (a temporary file unless `b` names one): cold, then warm.
    fn new(ctx: &GpuContext, graph: &Graph, b: &GpuBench) -> anyhow::Result<Compiled> {
        let precision = b.precision;
        let temporary = b.pipeline_cache.is_none();
        let cache_path = b.pipeline_cache.clone().unwrap_or_else(|| {
            std::env::temp_dir().join(format!(
                "heimdall-pipeline-cache-{}.bin",
                std::process::id()
            ))
        });
        if temporary {
            let _ = std::fs::remove_file(&cache_path);
        }
        // The guard first (without the pipeline cache, so that the cold compile below stays
        // cold).
        let decision = match &b.guard {
            Some(calibration) if precision != PrecisionArg::F32 => {
                let options = GpuOptions::new(precision.into());
                crate::gpu_guard::compile(ctx, graph, options, Some(calibration))?.1
            }
            _ => None,
        };
        let mut options = GpuOptions::new(precision.into()).with_pipeline_cache(&cache_path);
        if let Some(d) = &decision {
            options.overrides = d.overrides.clone();
        }
        options
            .overrides
            .extend(b.f32_ops.iter().map(|r| (r.clone(), Precision::F32)));
        let first = crate::progress::step(format!("compiling {} (cold)", graph.name), || {
            GpuModel::compile(ctx, graph, options.clone())
        })?;
        let cold = first.report().clone();
        drop(first);
        let model = crate::progress::step(format!("compiling {} (warm)", graph.name), || {
            GpuModel::compile(ctx, graph, options)
        })?;
        let warm = model.report().clone();
        if temporary {
            let _ = std::fs::remove_file(&cache_path);
        }
        Ok(Compiled {
            model,
            cold,
            warm,
            decision,
        })
    }
}

/// What `bench --backend gpu` timed.
struct GpuTimes {
    /// Per-step medians.
    profile: StepProfile,
    /// GPU time of whole runs (one pass per GPU range), where the adapter has timestamps.
    run_ms: Option<f64>,
    /// Sum of the GPU steps' medians.
    gpu_ms: f64,
    /// Sum of the CPU steps' medians.
    cpu_steps_ms: f64,
    /// Wall time of whole runs: median, p90, max.
    wall: (f64, f64, f64),
    /// Medians of the parts of the whole runs' wall time.
    wall_parts: serde_json::Value,
}

impl GpuTimes {
    /// Warms `model` up, then times its steps and whole runs on `refs`.
    fn measure(
        model: &GpuModel,
        refs: &[&[f32]],
        warmup: usize,
        runs: usize,
    ) -> anyhow::Result<GpuTimes> {
        // Whole runs for at least WARM_UP_TIME first: a GPU left idle (the compiles, the
        // guard's CPU reference) runs at its idle clock and takes a few hundred ms to reach its
        // boost clock. After the guard, 5 warm-up runs left an H100 at 1.2–2× its steady time.
        let start = Instant::now();
        while start.elapsed() < WARM_UP_TIME {
            model.run(refs)?;
        }
        let profile = model.profile(refs, warmup, runs.max(1))?;
        let whole = model.profile_runs(refs, warmup, runs.max(1))?;
        let run_ms = whole.as_ref().map(|w| w.gpu.as_secs_f64() * 1e3);
        let gpu_ms = profile.gpu_total(model.placement()).as_secs_f64() * 1e3;
        let cpu_steps_ms: f64 = profile
            .steps
            .iter()
            .zip(model.placement())
            .filter(|(_, p)| **p == Placement::Cpu)
            .map(|(d, _)| *d)
            .sum::<std::time::Duration>()
            .as_secs_f64()
            * 1e3;
        let mut wall = Vec::with_capacity(runs);
        let mut parts = Vec::with_capacity(runs);
        for _ in 0..runs.max(1) {
            let t = Instant::now();
            let (_, p) = model.run_timed(refs)?;
            wall.push(t.elapsed());
            parts.push(p);
        }
        Ok(GpuTimes {
            profile,
            run_ms,
            gpu_ms,
            cpu_steps_ms,
            wall: crate::timing::summary(wall),
            wall_parts: wall_parts_medians(&parts),
        })
    }

    /// One JSON record per step: index, op, placement, median.
    fn steps(&self, model: &GpuModel) -> Vec<serde_json::Value> {
        (0..model.num_steps())
            .map(|i| json!({"index": i, "op": model.step_name(i), "placement": format!("{:?}", model.placement()[i]), "median_ms": self.profile.steps[i].as_secs_f64() * 1e3}))
            .collect()
    }
}

/// Prints the GPU benchmark of `graph` as JSON.
fn print_bench_json(graph: &Graph, b: &GpuBench, c: &Compiled, t: &GpuTimes) -> anyhow::Result<()> {
    let (model, cold, warm) = (&c.model, &c.cold, &c.warm);
    let report = model.report();
    let (wall_median, wall_p90, wall_max) = t.wall;
    let mut doc = json!({
        "model": graph.name, "backend": "gpu", "device": model.context().describe(), "precision": format!("{:?}", report.precision),
        "timing": format!("{:?}", t.profile.source), "runs": b.runs,
        "gpu_ms": t.gpu_ms, "gpu_run_ms": t.run_ms, "cpu_steps_ms": t.cpu_steps_ms,
        "wall_median_ms": wall_median, "wall_p90_ms": wall_p90, "wall_max_ms": wall_max,
        "wall_parts_ms": t.wall_parts,
        "compile_ms": cold.compile_time.as_secs_f64() * 1e3,
        "compile_warm_ms": warm.compile_time.as_secs_f64() * 1e3,
        "pipeline_cache_cold": cache_label(&cold.pipeline_cache),
        "pipeline_cache_warm": cache_label(&warm.pipeline_cache),
        "pipelines": report.pipelines, "f16_arith_ops": report.f16_arith_ops.len(),
        "peak_activation_bytes": report.peak_bytes, "total_activation_bytes": report.total_bytes,
    });
    if b.per_op {
        doc["ops"] = json!(t.steps(model));
    }
    if let Some(d) = &c.decision {
        doc["guard"] = crate::gpu_guard::to_json(d);
    }
    println!("{}", serde_json::to_string_pretty(&doc)?);
    Ok(())
}

/// Prints the GPU benchmark of `graph` as a line (and a table of steps with `--per-op`).
fn print_bench_table(graph: &Graph, b: &GpuBench, c: &Compiled, t: &GpuTimes) {
    let (model, cold, warm) = (&c.model, &c.cold, &c.warm);
    let report = model.report();
    let device = model.context().describe();
    let (runs, gpu_ms, cpu_steps_ms) = (b.runs, t.gpu_ms, t.cpu_steps_ms);
    let (wall_median, wall_p90, wall_max) = t.wall;
    println!(
        "{} on {device} ({:?}, {runs} runs): GPU time {gpu_ms:.3} ms (sum of per-step medians, {:?}), {} per run (one pass per GPU range), CPU steps {cpu_steps_ms:.3} ms; whole run wall median {wall_median:.3} ms, p90 {wall_p90:.3}, max {wall_max:.3} (median parts: {}); compile {:.0} ms cold ({}), {:.0} ms warm ({}), {} pipelines, activations {:.2} of {:.2} MiB",
        graph.name,
        report.precision,
        t.profile.source,
        t.run_ms
            .map_or_else(|| "no timestamps".into(), |m| format!("{m:.3} ms")),
        ["upload", "encode", "submit", "wait", "take"]
            .map(|k| format!("{k} {:.3}", t.wall_parts[k].as_f64().unwrap_or(0.0)))
            .join(", "),
        cold.compile_time.as_secs_f64() * 1e3,
        cache_label(&cold.pipeline_cache),
        warm.compile_time.as_secs_f64() * 1e3,
        cache_label(&warm.pipeline_cache),
        report.pipelines,
        report.peak_bytes as f64 / (1 << 20) as f64,
        report.total_bytes as f64 / (1 << 20) as f64,
    );
    if b.per_op {
        for s in &t.steps(model) {
            println!(
                "  {:>4} {:<26} {:<4} {:>8.4} ms",
                s["index"],
                s["op"].as_str().unwrap_or(""),
                s["placement"].as_str().unwrap_or(""),
                s["median_ms"].as_f64().unwrap_or(0.0)
            );
        }
    }
}

/// `bench --probe`: the device's measured FMA peak, cooperative matrix configurations and
/// matrix-product rate, copy bandwidth, and the 1x1 convolution benchmark in f32 and f16 (where
/// the device has cooperative matrices, f16 with and without them) against that peak.
pub fn probe(as_json: bool) -> anyhow::Result<()> {
    let ctx = GpuContext::create()?;
    let r = probe::run(&ctx, &[Precision::F32, Precision::F16])?;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    if as_json {
        let convs: Vec<_> = r
            .conv1x1
            .iter()
            .map(|c| {
                json!({
                    "shape": c.shape, "precision": format!("{:?}", c.precision),
                    "time_ms": ms(c.time), "gflops": c.gflops,
                    "fraction_of_peak": r.fraction_of_peak(c), "blocking": c.blocking,
                    "fraction_of_f16_peak": r.fraction_of_f16_peak(c), "f16_arith": c.f16_arith,
                    "timing": format!("{:?}", c.source),
                })
            })
            .collect();
        let doc = json!({
            "device": r.device,
            "fma_gflops": r.fma.value, "fma_ms": ms(r.fma.time), "fma_timing": format!("{:?}", r.fma.source),
            "fma_f16_gflops": r.fma_f16.map(|f| f.value),
            "copy_gbps": r.copy.value, "copy_ms": ms(r.copy.time), "copy_timing": format!("{:?}", r.copy.source),
            "conv1x1": convs,
            "coop_configs": r.coop_configs,
            "coop_f32_gflops": r.coop_f32.map(|f| f.value),
            "coop_f16_gflops": r.coop_f16.map(|f| f.value),
            "coop_error": r.coop_error,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    println!("device: {}", r.device);
    println!(
        "FP32 FMA peak: {:.1} GFLOP/s ({:.3} ms, {:?})",
        r.fma.value,
        ms(r.fma.time),
        r.fma.source
    );
    if let Some(f) = r.fma_f16 {
        println!(
            "FP16 FMA peak: {:.1} GFLOP/s ({:.3} ms)",
            f.value,
            ms(f.time)
        );
    }
    if r.coop_configs.is_empty() {
        println!("cooperative matrices: none");
    } else {
        println!("cooperative matrices: {}", r.coop_configs.join(", "));
    }
    if let Some(e) = &r.coop_error {
        println!("cooperative matrix probe failed: {e}");
    }
    for (name, rate) in [("f32", r.coop_f32), ("f16", r.coop_f16)] {
        if let Some(f) = rate {
            println!(
                "cooperative matrix products 16x16x16 f16, {name} accumulators: {:.1} GFLOP/s ({:.3} ms, {:.1}x the FP32 FMA peak)",
                f.value,
                ms(f.time),
                f.value / r.fma.value.max(f64::MIN_POSITIVE)
            );
        }
    }
    println!(
        "copy bandwidth: {:.1} GB/s read+write ({:.3} ms, {:?})",
        r.copy.value,
        ms(r.copy.time),
        r.copy.source
    );
    for c in &r.conv1x1 {
        let [h, w, ci, co] = c.shape;
        let f16_peak = match (c.f16_arith, r.fraction_of_f16_peak(c)) {
            (true, Some(f)) => format!(", {:.1}% of FP16 peak, f16 arithmetic", 100.0 * f),
            _ => String::new(),
        };
        println!(
            "conv1x1 {h}x{w}x{ci}->{co} {:?}: {:.3} ms, {:.1} GFLOP/s, {:.1}% of FP32 FMA peak{f16_peak} ({})",
            c.precision,
            ms(c.time),
            c.gflops,
            100.0 * r.fraction_of_peak(c),
            c.blocking
        );
    }
    Ok(())
}
