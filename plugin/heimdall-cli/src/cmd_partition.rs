//! `heimdall partition MODEL --budget-ms X [--backend cpu|gpu] [--json]`: the chunks the
//! analyzer would make for a frame budget, with the measured times they come from.
//!
//! Every step is timed (median of `--runs` after `--warmup`): on the GPU backend with timestamp
//! queries (`GpuModel::profile`), CPU steps and, for the CPU times of GPU steps, on the one-thread
//! CPU backend, as the Bevy plugin does. The steps are then cut by
//! [`heimdall_coordinator::partition`] for a budget of `X` ms (plus `--relaxation-ms` for a unit's
//! last chunk). With `--backend cpu` the CPU backend's op times are packed the same way (what one
//! CPU worker would run per frame). `--profile-dir DIR` keeps the measured profile between runs
//! ([`ProfileStore`]), keyed by the model file's content and `"<backend>; <device>"` (`cpu; cpu (1
//! thread)`, or `gpu F32; <adapter description> (F32)`): the next run skips the measurement.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use heimdall::{LoadOptions, load_model};
use heimdall_coordinator::analyzer::{
    FrameBudget, ModelProfile, Partition, ProfileKey, ProfileStore,
};
use heimdall_coordinator::{Processor, StepCost, partition};
use heimdall_cpu::{CpuModel, CpuOptions};
use heimdall_gpu::{GpuContext, GpuModel, GpuOptions, Placement};
use serde_json::json;

use crate::Backend;

/// Arguments of `partition`.
#[derive(clap::Args)]
pub struct PartitionArgs {
    /// The model file (.tflite or .onnx).
    model: PathBuf,
    /// GPU time one frame leaves to the DNNs, ms (`1/f - T_render - margin`).
    #[arg(long)]
    budget_ms: f64,
    /// How far a unit's last chunk may exceed the budget, ms (Heimdall sec. 5.3).
    #[arg(long, default_value_t = 0.0)]
    relaxation_ms: f64,
    /// Backend whose step times are packed.
    #[arg(long, value_enum, default_value = "gpu")]
    backend: Backend,
    /// Storage precision on the GPU backend.
    #[arg(long, value_enum, default_value = "f32")]
    precision: crate::gpu_backend::PrecisionArg,
    /// Timed runs per step (after warm-up).
    #[arg(long, default_value_t = 10)]
    runs: usize,
    /// Warm-up runs.
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// Keep the measured profile in this directory and reuse it on the next run.
    #[arg(long)]
    profile_dir: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Static shape of an input with dynamic dimensions, e.g. `x=1x3x512x512` (repeatable).
    #[arg(long = "input-shape", value_parser = crate::input_shape::parse)]
    input_shapes: Vec<(String, Vec<usize>)>,
}

fn median_ms(mut v: Vec<Duration>) -> f64 {
    v.sort_unstable();
    v.get(v.len() / 2).map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

/// Per-op CPU times (one thread, as the plugin's workers run), median of `runs`.
fn cpu_times(
    graph: &heimdall_ir::Graph,
    inputs: &[Vec<f32>],
    warmup: usize,
    runs: usize,
) -> anyhow::Result<Vec<f64>> {
    let mut model = CpuModel::compile(graph, CpuOptions { threads: 1 })?;
    for (i, x) in inputs.iter().enumerate() {
        model.set_input(i, x)?;
    }
    for _ in 0..warmup {
        model.run()?;
    }
    let n = model.num_ops();
    let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(runs); n];
    let mut times = vec![Duration::ZERO; n];
    for _ in 0..runs.max(1) {
        model.run_range_timed(0..n, Some(&mut times))?;
        for (s, t) in samples.iter_mut().zip(&times) {
            s.push(*t);
        }
    }
    Ok(samples.into_iter().map(median_ms).collect())
}

/// The measured steps, how they were timed and the step names.
struct Measured {
    steps: Vec<StepCost>,
    names: Vec<&'static str>,
    timing: String,
}

fn measure(
    args: &PartitionArgs,
    ctx: Option<&GpuContext>,
    graph: &heimdall_ir::Graph,
    inputs: &[Vec<f32>],
    cpu_names: Vec<&'static str>,
) -> anyhow::Result<Measured> {
    let cpu = cpu_times(graph, inputs, args.warmup, args.runs)?;
    let Some(ctx) = ctx else {
        return Ok(Measured {
            // Packed like GPU steps: the chunks one CPU worker would run per frame.
            steps: cpu.iter().map(|&t| StepCost::gpu_and_cpu(t, t)).collect(),
            names: cpu_names,
            timing: "wall clock per op".into(),
        });
    };
    let model = crate::progress::step(format!("compiling {} for the GPU", graph.name), || {
        GpuModel::compile(ctx, graph, GpuOptions::new(args.precision.into()))
    })?;
    let refs: Vec<&[f32]> = inputs.iter().map(Vec::as_slice).collect();
    let profile = model.profile(&refs, args.warmup, args.runs.max(1))?;
    anyhow::ensure!(
        model.num_steps() == cpu.len(),
        "the GPU plan has {} steps and the CPU plan {}: they must match",
        model.num_steps(),
        cpu.len()
    );
    let steps = (0..model.num_steps())
        .map(|i| match model.placement()[i] {
            Placement::Gpu => StepCost::gpu_and_cpu(profile.steps[i].as_secs_f64() * 1e3, cpu[i]),
            Placement::Cpu => StepCost::cpu_only(cpu[i]),
        })
        .collect();
    Ok(Measured {
        steps,
        names: (0..model.num_steps()).map(|i| model.step_name(i)).collect(),
        timing: format!("{:?}", profile.source),
    })
}

/// Runs `partition`.
pub fn run(args: &PartitionArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.budget_ms.is_finite() && args.budget_ms > 0.0,
        "--budget-ms must be > 0"
    );
    anyhow::ensure!(
        args.relaxation_ms.is_finite() && args.relaxation_ms >= 0.0,
        "--relaxation-ms must be >= 0"
    );
    let bytes =
        std::fs::read(&args.model).with_context(|| format!("reading {}", args.model.display()))?;
    let graph = load_model(
        &args.model,
        LoadOptions {
            input_shapes: args.input_shapes.clone(),
            ..Default::default()
        },
    )?;
    let profiled = profile_steps(args, &bytes, &graph)?;
    let budget = FrameBudget {
        frame_period_ms: args.budget_ms,
        render_ms: 0.0,
        margin_ms: 0.0,
        relaxation_ms: args.relaxation_ms,
        chunk_overhead_ms: 0.0,
    };
    let part = partition(&profiled.steps, &budget);
    if args.json {
        print_json(args, &graph, &profiled, &part)
    } else {
        print_table(args, &graph, &profiled, &part);
        Ok(())
    }
}

/// The step costs `partition` packs, where they came from and what they were measured on.
struct Profiled {
    steps: Vec<StepCost>,
    names: Vec<&'static str>,
    /// How the steps were timed.
    timing: String,
    /// The profile store: `hit`, `miss` or `off`.
    cache: &'static str,
    /// `cpu`, or `gpu` and the precision.
    backend_label: String,
    /// The device's description, the profile store's key.
    device_key: String,
}

impl Profiled {
    /// Milliseconds of the steps that can run on the GPU (their GPU times), and of the
    /// CPU-only steps.
    fn totals(&self) -> (f64, f64) {
        // `+ 0.0`: an empty sum of f64 is -0.0.
        let gpu_total: f64 = self
            .steps
            .iter()
            .filter_map(|s| s.on(Processor::Gpu))
            .sum::<f64>()
            + 0.0;
        let cpu_only: f64 = self
            .steps
            .iter()
            .filter(|s| !s.processors.contains(Processor::Gpu))
            .map(|s| s.cpu_ms)
            .sum::<f64>()
            + 0.0;
        (gpu_total, cpu_only)
    }

    /// The name of step `i` (empty past the end).
    fn name(&self, i: usize) -> &'static str {
        self.names.get(i).copied().unwrap_or("")
    }
}

/// The step costs of `graph` (read from the file `bytes`) on the backend `args` names: from
/// the profile store where it holds them, else measured (and stored).
fn profile_steps(
    args: &PartitionArgs,
    bytes: &[u8],
    graph: &heimdall_ir::Graph,
) -> anyhow::Result<Profiled> {
    // A deterministic input in [-1, 1] (as `bench`).
    let inputs: Vec<Vec<f32>> = graph
        .inputs
        .iter()
        .map(|&t| crate::timing::pattern_input(graph.tensor(t).numel()))
        .collect();
    let backend_label = match args.backend {
        Backend::Cpu => "cpu".to_string(),
        Backend::Gpu => format!("gpu {:?}", args.precision),
    };
    let ctx = match args.backend {
        Backend::Cpu => None,
        Backend::Gpu => Some(GpuContext::create()?),
    };
    // The cache key: the device's description (profiles of one adapter do not fit another).
    let device_key = match &ctx {
        None => "cpu (1 thread)".to_string(),
        Some(c) => format!("{} ({:?})", c.describe(), args.precision),
    };
    let store = args.profile_dir.as_ref().map(ProfileStore::new);
    let key = ProfileKey::new(bytes, format!("{backend_label}; {device_key}"));
    let cached = match &store {
        Some(s) => s.load(&key)?,
        None => None,
    };
    // A stored profile must have one step per op of the plan (a changed importer may not).
    let cpu_names: Vec<&'static str> = {
        let m = CpuModel::compile(graph, CpuOptions { threads: 1 })?;
        (0..m.num_ops()).map(|i| m.op_name(i)).collect()
    };
    let cached = cached.filter(|p| p.steps.len() == cpu_names.len());
    let (steps, names, timing, cache) = match cached {
        Some(p) => (p.steps, cpu_names, "profile store".to_string(), "hit"),
        None => {
            let m = measure(args, ctx.as_ref(), graph, &inputs, cpu_names)?;
            if let Some(s) = &store {
                s.save(
                    &key,
                    &ModelProfile::new(graph.name.clone(), m.steps.clone()),
                )?;
            }
            let cache = if store.is_some() { "miss" } else { "off" };
            (m.steps, m.names, m.timing, cache)
        }
    };
    Ok(Profiled {
        steps,
        names,
        timing,
        cache,
        backend_label,
        device_key,
    })
}

/// Where chunks run: the CPU backend runs everything on the CPU.
fn processor_label(backend: Backend, p: Processor) -> &'static str {
    match (backend, p) {
        (Backend::Cpu, _) => "cpu",
        (Backend::Gpu, Processor::Gpu) => "gpu",
        (Backend::Gpu, Processor::Cpu) => "cpu",
    }
}

/// Prints the partition `part` of `graph`'s steps as JSON.
fn print_json(
    args: &PartitionArgs,
    graph: &heimdall_ir::Graph,
    p: &Profiled,
    part: &Partition,
) -> anyhow::Result<()> {
    let (gpu_total, cpu_only) = p.totals();
    let chunks: Vec<_> = part
        .chunks
        .iter()
        .map(|c| {
            json!({
                "ops": [c.ops.start, c.ops.end], "steps": c.ops.len(),
                "processor": processor_label(args.backend, c.processor), "measured_ms": c.est_ms,
                "oversized": c.oversized,
                "first_op": p.name(c.ops.start), "last_op": p.name(c.ops.end - 1),
            })
        })
        .collect();
    let doc = json!({
        "model": graph.name, "backend": p.backend_label, "device": p.device_key,
        "timing": p.timing, "runs": args.runs, "profile_cache": p.cache,
        "budget_ms": args.budget_ms, "relaxation_ms": args.relaxation_ms,
        "steps": p.steps.len(), "packed_ms": gpu_total, "cpu_only_ms": cpu_only,
        "chunks": chunks, "oversized_steps": part.oversized_steps,
    });
    println!("{}", serde_json::to_string_pretty(&doc)?);
    Ok(())
}

/// Prints the partition `part` of `graph`'s steps as a table of chunks.
fn print_table(args: &PartitionArgs, graph: &heimdall_ir::Graph, p: &Profiled, part: &Partition) {
    let (gpu_total, cpu_only) = p.totals();
    let (device_key, timing, cache) = (&p.device_key, &p.timing, p.cache);
    println!(
        "{} on {device_key} ({timing}, profile {cache}): {} steps, {gpu_total:.3} ms packed + \
         {cpu_only:.3} ms of CPU-only steps; budget {:.3} ms (+{:.3} ms relaxation): {} chunks",
        graph.name,
        p.steps.len(),
        args.budget_ms,
        args.relaxation_ms,
        part.chunks.len()
    );
    println!(
        "  {:>5} {:>11} {:<4} {:>5} {:>9}  ops",
        "chunk", "steps", "on", "count", "ms"
    );
    for (k, c) in part.chunks.iter().enumerate() {
        println!(
            "  {k:>5} {:>11} {:<4} {:>5} {:>9.3}  {}{}",
            format!("{}..{}", c.ops.start, c.ops.end),
            processor_label(args.backend, c.processor),
            c.ops.len(),
            c.est_ms,
            if p.names.is_empty() {
                String::new()
            } else {
                format!("{} .. {}", p.name(c.ops.start), p.name(c.ops.end - 1))
            },
            if c.oversized {
                "  (one step over the budget)"
            } else {
                ""
            }
        );
    }
    if !part.oversized_steps.is_empty() {
        println!(
            "steps over the budget (each its own chunk): {:?}",
            part.oversized_steps
        );
    }
}
