//! `heimdall bench MODEL`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use heimdall::{LoadOptions, LoadedModel, load};
use heimdall_cpu::{CpuModel, CpuOptions};
use serde_json::json;

use crate::Backend;
use crate::timing::summary;

/// Arguments of `bench`.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// The model file (.tflite or .onnx); not needed with `--probe`.
    #[arg(required_unless_present = "probe")]
    model: Option<PathBuf>,
    /// Backend.
    #[arg(long, value_enum, default_value = "cpu")]
    backend: Backend,
    /// Storage precision on the GPU backend.
    #[arg(long, value_enum, default_value = "f32")]
    precision: crate::gpu_backend::PrecisionArg,
    /// GPU with `--precision f16` or `packed-f16`: do not run the accuracy guard. By default
    /// the guard checks the model on a calibration input (`--calibration`) against the CPU
    /// backend (f32), switches the ops that miss the bound (rel-L2 1e-2) to f32 and benchmarks
    /// that configuration; its decision is printed on stderr (and under `"guard"` in `--json`).
    #[arg(long)]
    no_guard: bool,
    /// The accuracy guard's calibration input: a PNG or JPEG resized to the model's image input
    /// (values in `--input-range`), or a float32 `.npy` of input 0 in the model's own layout.
    /// Default: `assets/images/astronaut.png` for models whose only input is an image, else the
    /// benchmark's own input.
    #[arg(long, conflicts_with = "no_guard")]
    calibration: Option<PathBuf>,
    /// GPU with a reduced precision: keep these op ranges in f32 instead of running the guard
    /// (e.g. `1..15,20..22`: the `f32_ranges` a guard decided before, applied without its
    /// search).
    #[arg(long = "f32-ops", value_parser = parse_ranges, conflicts_with_all = ["no_guard", "calibration"])]
    f32_ops: Option<OpRanges>,
    /// Timed runs (after warm-up).
    #[arg(long, default_value_t = 50)]
    runs: usize,
    /// Warm-up runs.
    #[arg(long, default_value_t = 5)]
    warmup: usize,
    /// CPU threads (default: available cores, at most 4).
    #[arg(long)]
    threads: Option<usize>,
    /// Also report the median time of each op.
    #[arg(long)]
    per_op: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// GPU: measure the device's FP32 FMA peak and copy bandwidth, and a 1x1 convolution
    /// (128x128x256 -> 256) in f32 and f16 against that peak, instead of a model.
    #[arg(long)]
    probe: bool,
    /// GPU: persist wgpu's pipeline cache in this file (Vulkan). Without it, a temporary file
    /// serves the cold-vs-warm compile measurement and is removed afterwards.
    #[arg(long)]
    pipeline_cache: Option<PathBuf>,
    /// Static shape of an input with dynamic dimensions, e.g. `x=1x3x512x512` (repeatable).
    #[arg(long = "input-shape", value_parser = crate::input_shape::parse)]
    input_shapes: Vec<(String, Vec<usize>)>,
    /// Compare the model with and without the convolution cache over a sequence of inputs
    /// (`--inputs`, `--still` or `--clip`), interleaved: median times, hit rate, largest
    /// relative L2 error of the cached outputs.
    #[arg(long, conflicts_with_all = ["probe", "per_op"])]
    conv_cache: bool,
    /// `--conv-cache`: also decode the cached and uncached outputs as the vision pipelines do
    /// and compare them (`decoded`: the smallest IoU and the runs whose detection counts differ).
    #[arg(long, value_enum, requires = "conv_cache")]
    decode: Option<crate::bench_decode::DecodeKind>,
    /// `--conv-cache` on the GPU: calibrate on the first frame and let the cache switch itself
    /// off while the hit rate is under its break-even, probing every 30 runs to come back.
    #[arg(long, requires = "conv_cache")]
    cache_auto: bool,
    /// `--conv-cache`: the sequence of inputs, float32 `.npy` files of the model's input 0 in
    /// its own layout, run in this order.
    #[arg(long, num_args = 1.., requires = "conv_cache", conflicts_with_all = ["still", "clip"])]
    inputs: Vec<PathBuf>,
    /// `--conv-cache`: a still image (PNG or JPEG) resized to the model's input, `--frames`
    /// times, each frame with its own noise (`--noise`).
    #[arg(long, requires = "conv_cache", conflicts_with = "clip")]
    still: Option<PathBuf>,
    /// `--conv-cache`: the first `--frames` frames of a clip (a directory with `clip.json`, or
    /// the name of one in `assets/clips/`), resized to the model's input.
    #[arg(long, requires = "conv_cache")]
    clip: Option<PathBuf>,
    /// `--still`/`--clip`: standard deviation of the Gaussian noise added to every frame, in
    /// pixel units (0..255), scaled to `--input-range`; deterministic.
    #[arg(long, default_value_t = 0.0, conflicts_with = "inputs")]
    noise: f32,
    /// `--still`/`--clip`: number of frames.
    #[arg(long, default_value_t = 10)]
    frames: usize,
    /// `--still`/`--clip`/`--calibration IMAGE`: the model's input range `LO,HI` (pixel 0 maps
    /// to LO, 255 to HI).
    #[arg(long = "input-range", value_parser = crate::cmd_bench_cache::parse_range, default_value = "0,1", allow_hyphen_values = true)]
    input_range: [f32; 2],
    /// `--conv-cache`: how many times the sequence is played (the cache's state carries on).
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Convolution cache: histogram bins per channel.
    #[arg(long, default_value_t = 16)]
    cache_bins: u32,
    /// Convolution cache: blocks `HxW` the input is cut into.
    #[arg(long, value_parser = crate::cmd_bench_cache::parse_grid, default_value = "8x8")]
    cache_grid: [u32; 2],
    /// Convolution cache: chi-square distance at or under which a block counts as unchanged.
    #[arg(long, default_value_t = 0.05)]
    cache_threshold: f32,
    /// Convolution cache: largest change of a block's 4x4 cell means (fraction of the range) at
    /// or under which it counts as unchanged (1: off).
    #[arg(long, default_value_t = 0.02)]
    cache_cell_threshold: f32,
    /// Convolution cache: only ops with an index below this are cached (default: all).
    #[arg(long)]
    cache_layers: Option<usize>,
    /// Convolution cache: a block is recomputed at the latest this many ms after it was (0:
    /// never).
    #[arg(long, default_value_t = 1000)]
    cache_expiry_ms: u32,
    /// Convolution cache: a block is recomputed at the latest this many runs after it was (0:
    /// never). Expiry by runs makes a benchmark independent of the machine's speed.
    #[arg(long, default_value_t = 0)]
    cache_expiry_runs: u32,
    /// Convolution cache: every block is recomputed every this many runs (0: never).
    #[arg(long, default_value_t = 0)]
    cache_refresh_runs: u32,
    /// Convolution cache: the value range `LO,HI` its histograms span (default: the first
    /// input's min and max).
    #[arg(long, value_parser = crate::cmd_bench_cache::parse_range, allow_hyphen_values = true)]
    cache_range: Option<[f32; 2]>,
}

/// Runs `bench`.
pub fn run(args: &BenchArgs) -> anyhow::Result<()> {
    if args.probe {
        return crate::gpu_backend::probe(args.json);
    }
    let Some(model) = &args.model else {
        anyhow::bail!("bench needs a model file (or --probe)");
    };
    if args.conv_cache {
        return run_conv_cache(args, model);
    }
    let loaded = load(
        model,
        LoadOptions {
            input_shapes: args.input_shapes.clone(),
            ..Default::default()
        },
    )?;
    let graph = &loaded.graph;
    // A deterministic input in [-1, 1].
    let inputs: Vec<Vec<f32>> = graph
        .inputs
        .iter()
        .map(|&t| crate::timing::pattern_input(graph.tensor(t).numel()))
        .collect();
    if args.backend == Backend::Gpu {
        return run_gpu(args, &loaded, &inputs);
    }
    run_cpu(args, graph, &inputs)
}

/// `bench --conv-cache` of `model` ([`crate::cmd_bench_cache`]).
fn run_conv_cache(args: &BenchArgs, model: &std::path::Path) -> anyhow::Result<()> {
    crate::cmd_bench_cache::run(&crate::cmd_bench_cache::CacheBench {
        model,
        backend: args.backend,
        precision: args.precision,
        threads: args.threads,
        input_shapes: args.input_shapes.clone(),
        source: crate::cmd_bench_cache::source(
            &args.inputs,
            args.still.as_deref(),
            args.clip.as_deref(),
            args.frames,
        )?,
        generate: crate::bench_inputs::Generate {
            range: args.input_range,
            noise: args.noise,
        },
        repeat: args.repeat,
        config: heimdall_ir::conv_cache::ConvCacheConfig {
            bins: args.cache_bins,
            grid: args.cache_grid,
            threshold: args.cache_threshold,
            cell_threshold: args.cache_cell_threshold,
            layers: args.cache_layers.unwrap_or(usize::MAX),
            expiry_ms: args.cache_expiry_ms,
            expiry_runs: args.cache_expiry_runs,
            refresh_runs: args.cache_refresh_runs,
            ..Default::default()
        },
        range: args.cache_range,
        json: args.json,
        decode: args.decode,
        auto: args.cache_auto,
    })
}

/// `bench --backend gpu` of `loaded` on `inputs` ([`crate::gpu_backend::bench`]), with the
/// accuracy guard's calibration inputs unless it is off.
fn run_gpu(args: &BenchArgs, loaded: &LoadedModel, inputs: &[Vec<f32>]) -> anyhow::Result<()> {
    let guard = if args.no_guard || args.f32_ops.is_some() {
        None
    } else {
        Some(crate::gpu_guard::calibration_inputs(
            loaded,
            args.calibration.as_deref(),
            args.input_range,
            inputs,
        )?)
    };
    crate::gpu_backend::bench(
        &loaded.graph,
        inputs,
        &crate::gpu_backend::GpuBench {
            precision: args.precision,
            warmup: args.warmup,
            runs: args.runs,
            per_op: args.per_op,
            json: args.json,
            pipeline_cache: args.pipeline_cache.clone(),
            guard,
            f32_ops: args.f32_ops.clone().map(|r| r.0).unwrap_or_default(),
        },
    )
}

/// `bench --backend cpu` of `graph` on `inputs`: the whole run's median, p90 and max time, and
/// each op's median with `--per-op`.
fn run_cpu(
    args: &BenchArgs,
    graph: &heimdall_ir::Graph,
    inputs: &[Vec<f32>],
) -> anyhow::Result<()> {
    let options = args
        .threads
        .map_or_else(CpuOptions::default, |threads| CpuOptions { threads });
    let mut model = CpuModel::compile(graph, options)?;
    for (i, data) in inputs.iter().enumerate() {
        model.set_input(i, data)?;
    }
    for _ in 0..args.warmup {
        model.run()?;
    }
    let (totals, per_op) = time_cpu(args, &mut model)?;
    let (median, p90, max) = summary(totals);
    let threads = options.threads;
    let ops: Vec<_> = if args.per_op {
        per_op
            .into_iter()
            .enumerate()
            .map(|(k, v)| json!({"index": k, "op": model.op_name(k), "median_ms": summary(v).0}))
            .collect()
    } else {
        Vec::new()
    };
    if args.json {
        let mut doc = json!({"model": graph.name, "backend": "cpu", "threads": threads, "runs": args.runs, "median_ms": median, "p90_ms": p90, "max_ms": max});
        if args.per_op {
            doc["ops"] = json!(ops);
        }
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!(
            "{} on cpu ({threads} threads, {} runs): median {median:.3} ms, p90 {p90:.3} ms, max {max:.3} ms",
            graph.name, args.runs
        );
        for o in &ops {
            println!(
                "  {:>4} {:<26} {:>8.4} ms",
                o["index"],
                o["op"].as_str().unwrap_or(""),
                o["median_ms"].as_f64().unwrap_or(0.0)
            );
        }
    }
    Ok(())
}

/// The timed runs of `model`: each run's time and, with `--per-op`, each op's times.
fn time_cpu(
    args: &BenchArgs,
    model: &mut CpuModel,
) -> anyhow::Result<(Vec<Duration>, Vec<Vec<Duration>>)> {
    let n_ops = model.num_ops();
    let mut totals = Vec::with_capacity(args.runs);
    let mut per_op: Vec<Vec<Duration>> = vec![Vec::with_capacity(args.runs); n_ops];
    let mut times = vec![Duration::ZERO; n_ops];
    for _ in 0..args.runs.max(1) {
        let start = Instant::now();
        if args.per_op {
            model.run_range_timed(0..n_ops, Some(&mut times))?;
        } else {
            model.run()?;
        }
        totals.push(start.elapsed());
        if args.per_op {
            for (k, t) in times.iter().enumerate() {
                per_op[k].push(*t);
            }
        }
    }
    Ok((totals, per_op))
}

/// Op index ranges (`--f32-ops`).
#[derive(Clone, Debug, PartialEq)]
pub struct OpRanges(pub Vec<std::ops::Range<usize>>);

/// Parses `A..B[,C..D...]` (op index ranges, end exclusive).
fn parse_ranges(s: &str) -> Result<OpRanges, String> {
    s.split(',')
        .map(|r| {
            let (a, b) = r
                .trim()
                .split_once("..")
                .ok_or_else(|| format!("'{r}' is not a range A..B"))?;
            let (a, b): (usize, usize) = (
                a.parse().map_err(|e| format!("'{r}': {e}"))?,
                b.parse().map_err(|e| format!("'{r}': {e}"))?,
            );
            if a >= b {
                return Err(format!("'{r}' is empty"));
            }
            Ok(a..b)
        })
        .collect::<Result<_, _>>()
        .map(OpRanges)
}

#[cfg(test)]
mod tests {
    use super::{OpRanges, parse_ranges};

    #[test]
    fn op_ranges_parse_and_bad_ones_are_refused() {
        assert_eq!(
            parse_ranges("1..15, 20..22"),
            Ok(OpRanges(vec![1..15, 20..22]))
        );
        for bad in ["", "3", "5..5", "7..2", "a..3", "1..15,"] {
            assert!(parse_ranges(bad).is_err(), "{bad}");
        }
    }
}
