//! `--backend gpu` for `run` and `bench`: the GPU backend on its own wgpu device (the CLI is the
//! only place that waits for the GPU).

use std::time::Instant;

use heimdall_gpu::{GpuContext, GpuModel, GpuOptions, Placement, Precision};
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
    Ok(GpuModel::compile(
        &ctx,
        graph,
        GpuOptions::new(precision.into()),
    )?)
}

/// Runs the model once and returns its outputs.
pub fn run(
    graph: &Graph,
    inputs: &[Vec<f32>],
    precision: PrecisionArg,
) -> anyhow::Result<Vec<Vec<f32>>> {
    let model = compile(graph, precision)?;
    let refs: Vec<&[f32]> = inputs.iter().map(Vec::as_slice).collect();
    Ok(model.run(&refs)?)
}

/// Benchmarks the model: per-step GPU times (timestamps where the adapter has them) and the
/// wall time of whole runs; prints a table or JSON.
pub fn bench(
    graph: &Graph,
    inputs: &[Vec<f32>],
    precision: PrecisionArg,
    warmup: usize,
    runs: usize,
    per_op: bool,
    as_json: bool,
) -> anyhow::Result<()> {
    let model = compile(graph, precision)?;
    let refs: Vec<&[f32]> = inputs.iter().map(Vec::as_slice).collect();
    let profile = model.profile(&refs, warmup, runs.max(1))?;
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
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        model.run(&refs)?;
        wall.push(t.elapsed());
    }
    let (wall_median, wall_p90, wall_max) = crate::cmd_bench::summary(wall);
    let report = model.report();
    let device = model.context().describe();
    let steps: Vec<_> = (0..model.num_steps())
        .map(|i| json!({"index": i, "op": model.step_name(i), "placement": format!("{:?}", model.placement()[i]), "median_ms": profile.steps[i].as_secs_f64() * 1e3}))
        .collect();
    if as_json {
        let mut doc = json!({
            "model": graph.name, "backend": "gpu", "device": device, "precision": format!("{:?}", report.precision),
            "timing": format!("{:?}", profile.source), "runs": runs,
            "gpu_ms": gpu_ms, "cpu_steps_ms": cpu_steps_ms,
            "wall_median_ms": wall_median, "wall_p90_ms": wall_p90, "wall_max_ms": wall_max,
            "compile_ms": report.compile_time.as_secs_f64() * 1e3, "pipelines": report.pipelines,
            "peak_activation_bytes": report.peak_bytes, "total_activation_bytes": report.total_bytes,
        });
        if per_op {
            doc["ops"] = json!(steps);
        }
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!(
            "{} on {device} ({:?}, {runs} runs): GPU time {gpu_ms:.3} ms (sum of per-step medians, {:?}), CPU steps {cpu_steps_ms:.3} ms; whole run wall median {wall_median:.3} ms, p90 {wall_p90:.3}, max {wall_max:.3}; compile {:.0} ms, {} pipelines, activations {:.2} of {:.2} MiB",
            graph.name,
            report.precision,
            profile.source,
            report.compile_time.as_secs_f64() * 1e3,
            report.pipelines,
            report.peak_bytes as f64 / (1 << 20) as f64,
            report.total_bytes as f64 / (1 << 20) as f64,
        );
        if per_op {
            for s in &steps {
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
    Ok(())
}
