//! `heimdall bench MODEL --conv-cache`: a sequence of inputs run with and without the
//! convolution cache, interleaved; the median time of each, the cache's hit rate and the
//! largest relative L2 error of the cached outputs against the uncached ones.
//!
//! Both models are compiled from the same graph, one plain and one with the cache. Each runs the
//! first input once (the cache computes everything; not counted), then the sequence in order,
//! `--repeat` times, the cache's state carried on. For each input the plain model runs, then
//! the cached one: every timed run follows a run of the other model.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use heimdall::{LoadOptions, LoadedModel, load};
use heimdall_cpu::{CpuModel, CpuOptions};
use heimdall_gpu::conv_cache::CacheCalibration;
use heimdall_gpu::{GpuContext, GpuModel, GpuOptions};
use heimdall_ir::conv_cache::{CacheCounts, CachePlan, ConvCacheConfig};
use serde_json::{Value, json};

use crate::Backend;
use crate::bench_decode::DecodeKind;
use crate::bench_inputs::{Generate, Source, frames, image_shape};
use crate::gpu_backend::PrecisionArg;

/// Parses `LO,HI` (two finite numbers, `LO < HI`).
pub fn parse_range(s: &str) -> Result<[f32; 2], String> {
    let (a, b) = s
        .split_once(',')
        .ok_or_else(|| format!("'{s}': expected LO,HI"))?;
    let num = |t: &str| {
        t.trim()
            .parse::<f32>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| format!("'{s}': '{t}' is not a finite number"))
    };
    let (lo, hi) = (num(a)?, num(b)?);
    if lo >= hi {
        return Err(format!("'{s}': LO must be below HI"));
    }
    Ok([lo, hi])
}

/// Parses `HxW` (two integers ≥ 1).
pub fn parse_grid(s: &str) -> Result<[u32; 2], String> {
    let (h, w) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("'{s}': expected HxW, e.g. 8x8"))?;
    let num = |t: &str| match t.trim().parse::<u32>() {
        Ok(v) if v >= 1 => Ok(v),
        _ => Err(format!("'{s}': '{t}' is not a positive integer")),
    };
    Ok([num(h)?, num(w)?])
}

/// What `bench --conv-cache` was asked.
pub struct CacheBench<'a> {
    /// The model file.
    pub model: &'a Path,
    /// Backend.
    pub backend: Backend,
    /// GPU storage precision.
    pub precision: PrecisionArg,
    /// CPU threads.
    pub threads: Option<usize>,
    /// Static input shapes.
    pub input_shapes: Vec<(String, Vec<usize>)>,
    /// The frames.
    pub source: Source<'a>,
    /// How generated frames are made.
    pub generate: Generate,
    /// Plays of the sequence.
    pub repeat: usize,
    /// The cache's settings (`range` is replaced by `range` below when that is `None`).
    pub config: ConvCacheConfig,
    /// `--cache-range`; `None`: the first input's min and max.
    pub range: Option<[f32; 2]>,
    /// JSON output.
    pub json: bool,
    /// `--decode`: compare the decoded results too.
    pub decode: Option<DecodeKind>,
    /// `--cache-auto` (GPU): calibrate and let the cache switch itself off and on.
    pub auto: bool,
}

/// Frames whose uncached outputs are compared pairwise (`max_rel_l2_between_frames`).
const MAX_PAIRWISE: usize = 64;

/// One model with and one without the cache, on either backend.
enum Pair {
    Cpu {
        plain: Box<CpuModel>,
        cached: Box<CpuModel>,
        threads: usize,
    },
    Gpu(Box<GpuPair>),
}

/// The GPU models on one device.
struct GpuPair {
    plain: GpuModel,
    cached: GpuModel,
    /// `--cache-auto`: what the calibration measured.
    calibration: Option<CacheCalibration>,
}

/// Runs with the cache off between two probes of the automatic switch (`--cache-auto`).
const AUTO_PROBE_EVERY: u32 = 30;

/// One timed GPU run ([`GpuModel::run_profiled`]: the GPU time of the run with timestamps, the
/// cache's decision included; otherwise the wall time of the run and its readback).
fn gpu_run(model: &GpuModel, inputs: &[&[f32]]) -> anyhow::Result<(Vec<Vec<f32>>, Duration)> {
    let start = Instant::now();
    let (out, gpu) = model.run_profiled(inputs)?;
    Ok((out, gpu.unwrap_or_else(|| start.elapsed())))
}

/// One timed run: outputs, time, and the cache's counts (cached model only).
type Run = (Vec<Vec<f32>>, Duration, Option<CacheCounts>);

fn cpu_run(model: &mut CpuModel, inputs: &[&[f32]], outputs: usize) -> anyhow::Result<Run> {
    for (i, x) in inputs.iter().enumerate() {
        model.set_input(i, x)?;
    }
    let start = Instant::now();
    model.run()?;
    let t = start.elapsed();
    let out = (0..outputs)
        .map(|i| model.output(i).map(<[f32]>::to_vec))
        .collect::<Result<_, _>>()?;
    Ok((out, t, model.conv_cache_counts()))
}

impl Pair {
    fn compile(
        b: &CacheBench,
        loaded: &LoadedModel,
        config: ConvCacheConfig,
        first: &[&[f32]],
    ) -> anyhow::Result<Pair> {
        let graph = &loaded.graph;
        match b.backend {
            Backend::Cpu => {
                let options = b
                    .threads
                    .map_or_else(CpuOptions::default, |threads| CpuOptions { threads });
                let plain = CpuModel::compile(graph, options)?;
                let mut cached = CpuModel::compile(graph, options)?;
                cached
                    .enable_conv_cache(config)
                    .context("turning the convolution cache on (CPU)")?;
                Ok(Pair::Cpu {
                    plain: Box::new(plain),
                    cached: Box::new(cached),
                    threads: options.threads,
                })
            }
            Backend::Gpu => {
                let ctx = GpuContext::create()?;
                let options = GpuOptions::new(b.precision.into());
                let what = format!("compiling {} with and without the cache", graph.name);
                let (plain, cached) = crate::progress::step(what, || {
                    let plain = GpuModel::compile(&ctx, graph, options.clone())?;
                    let cached = GpuModel::compile(&ctx, graph, options.with_conv_cache(config))
                        .context("compiling with the convolution cache (GPU)")?;
                    anyhow::Ok((plain, cached))
                })?;
                if cached.conv_cache().is_none() {
                    bail!(
                        "no op of this model can be cached on the GPU with these settings \
                         (--cache-layers {})",
                        layers_label(config.layers)
                    );
                }
                // The automatic switch: calibrated on the first frame (a full run of the
                // cache against a plain one and one that reuses everything).
                let calibration = match b.auto {
                    true => {
                        let c = cached
                            .calibrate_conv_cache(first, 2, 5)?
                            .context("--cache-auto needs GPU timestamps")?;
                        if let Some(cache) = cached.conv_cache() {
                            cache.set_auto(Some(c.policy(AUTO_PROBE_EVERY)));
                        }
                        Some(c)
                    }
                    false => None,
                };
                Ok(Pair::Gpu(Box::new(GpuPair {
                    plain,
                    cached,
                    calibration,
                })))
            }
        }
    }

    /// Runs the plain (`cached == false`) or the cached model.
    fn run(&mut self, cached: bool, inputs: &[&[f32]], outputs: usize) -> anyhow::Result<Run> {
        match self {
            Pair::Cpu {
                plain, cached: c, ..
            } => cpu_run(if cached { c } else { plain }, inputs, outputs),
            Pair::Gpu(g) => {
                let m = if cached { &g.cached } else { &g.plain };
                let (out, t) = gpu_run(m, inputs)?;
                Ok((out, t, if cached { m.conv_cache_counts() } else { None }))
            }
        }
    }

    fn calibration(&self) -> Option<CacheCalibration> {
        match self {
            Pair::Gpu(g) => g.calibration,
            Pair::Cpu { .. } => None,
        }
    }

    fn timing(&self) -> &'static str {
        match self {
            Pair::Cpu { .. } => "wall_run",
            Pair::Gpu(g) => {
                let ctx = g.plain.context();
                if ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY) {
                    "gpu_timestamps"
                } else {
                    "wall_run_readback"
                }
            }
        }
    }

    fn device(&self) -> String {
        match self {
            Pair::Cpu { threads, .. } => format!("cpu ({threads} threads)"),
            Pair::Gpu(g) => g.plain.context().describe(),
        }
    }

    fn cached_ops(&self, graph: &heimdall_ir::Graph, layers: usize) -> Vec<usize> {
        match self {
            // The CPU caches every op the plan marks cacheable.
            Pair::Cpu { .. } => CachePlan::new(graph, layers)
                .map(|p| (0..p.cacheable.len()).filter(|&i| p.cacheable[i]).collect())
                .unwrap_or_default(),
            Pair::Gpu(g) => g.cached.report().cached_ops.clone(),
        }
    }
}

fn layers_label(layers: usize) -> String {
    if layers == usize::MAX {
        "all".into()
    } else {
        layers.to_string()
    }
}

/// ‖a − b‖₂ / ‖b‖₂ over all outputs concatenated (0 when both are zero).
fn rel_l2(cached: &[Vec<f32>], plain: &[Vec<f32>]) -> f64 {
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (a, b) in cached.iter().zip(plain) {
        for (x, y) in a.iter().zip(b) {
            num += (f64::from(*x) - f64::from(*y)).powi(2);
            den += f64::from(*y).powi(2);
        }
    }
    if num == 0.0 {
        0.0
    } else if den == 0.0 {
        f64::INFINITY
    } else {
        (num / den).sqrt()
    }
}

fn median_ms(v: &[Duration]) -> f64 {
    crate::timing::summary(v.to_vec()).0
}

/// Loads the model and its frames (shared with the tests of the argument checks).
fn prepare(b: &CacheBench) -> anyhow::Result<(LoadedModel, Vec<Vec<f32>>)> {
    let loaded = load(
        b.model,
        LoadOptions {
            input_shapes: b.input_shapes.clone(),
            ..Default::default()
        },
    )
    .with_context(|| format!("loading {}", b.model.display()))?;
    image_shape(&loaded)?;
    let seq = frames(&loaded, &b.source, &b.generate)?;
    if seq.is_empty() {
        bail!("no input frames (--frames 0 or an empty --inputs)");
    }
    Ok((loaded, seq))
}

/// Runs `bench --conv-cache`.
pub fn run(b: &CacheBench) -> anyhow::Result<()> {
    if b.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    let (loaded, seq) = prepare(b)?;
    let graph = &loaded.graph;
    let config = cache_config(b, &seq[0])?;
    // Inputs beyond the image: the deterministic pattern of the plain `bench`.
    let others: Vec<Vec<f32>> = graph.inputs[1..]
        .iter()
        .map(|&t| crate::timing::pattern_input(graph.tensor(t).numel()))
        .collect();
    let inputs_of = |x: &[f32]| -> Vec<Vec<f32>> {
        std::iter::once(x.to_vec())
            .chain(others.iter().cloned())
            .collect()
    };
    let n_out = graph.outputs.len();
    // The first full run of both (the cache computes everything).
    let first = inputs_of(&seq[0]);
    let refs: Vec<&[f32]> = first.iter().map(Vec::as_slice).collect();
    let mut pair = Pair::compile(b, &loaded, config, &refs)?;
    let first_plain = pair.run(false, &refs, n_out)?.0;
    pair.run(true, &refs, n_out)?;
    let mut tally = Tally::new(first_plain);
    for rep in 0..b.repeat {
        for (k, x) in seq.iter().enumerate() {
            let run_index = rep * seq.len() + k;
            let xs = inputs_of(x);
            let refs: Vec<&[f32]> = xs.iter().map(Vec::as_slice).collect();
            // Plain, then cached, for every input: each run follows a run of the other model,
            // as a model's runs follow other work in an app. (Back-to-back runs of one model
            // find its data in the GPU's caches: on the H100 palm detection ran 0.36 ms after
            // itself and 0.44 ms after the other model, so an order that mixes both puts the
            // medians of both between two clusters.)
            let p = pair.run(false, &refs, n_out)?;
            let c = pair.run(true, &refs, n_out)?;
            tally.record(b, (run_index, k, rep), p, c)?;
        }
    }
    let summary = tally.summary();
    let cached_ops = pair.cached_ops(graph, config.layers);
    let doc = report(
        b,
        graph,
        &pair,
        &config,
        seq.len(),
        &tally,
        &summary,
        &cached_ops,
    );
    if b.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    let Summary {
        runs,
        mu,
        mc,
        hit_rate,
        own,
    } = summary;
    let max_rel = tally.max_rel;
    println!(
        "{} on {} ({} inputs x {} repeats = {runs} runs, timing {}): uncached median {mu:.3} ms, \
         cached median {mc:.3} ms ({:.2}x); hit rate {:.3} ({} cached ops, {:.1}% blocks dirty); \
         max rel L2 {max_rel:.2e} (uncached frames differ by up to {own:.2e})",
        graph.name,
        doc["device"].as_str().unwrap_or(""),
        seq.len(),
        b.repeat,
        pair.timing(),
        doc["speedup"].as_f64().unwrap_or(f64::NAN),
        hit_rate,
        cached_ops.len(),
        100.0 * tally.dirty_sum / runs as f64,
    );
    if let Some(k) = b.decode {
        let (min_iou, count_mismatches) = (tally.min_iou, tally.count_mismatches);
        println!(
            "decoded as {}: smallest IoU {min_iou:.3}, {count_mismatches} of {runs} runs with \
             another number of detections",
            k.label()
        );
    }
    Ok(())
}

/// The cache's settings: `b.config` with its value range from `--cache-range`, or else the
/// first input's (`first`) min and max, validated.
fn cache_config(b: &CacheBench, first: &[f32]) -> anyhow::Result<ConvCacheConfig> {
    let mut config = b.config;
    config.range = b.range.unwrap_or_else(|| {
        let (lo, hi) = first
            .iter()
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &v| {
                (lo.min(v), hi.max(v))
            });
        if lo < hi { [lo, hi] } else { [lo, lo + 1.0] }
    });
    config
        .validate()
        .map_err(|e| anyhow::anyhow!("cache settings: {e}"))?;
    Ok(config)
}

/// What the timed runs measured: each model's times, the cache's counts and the agreement of
/// the cached outputs with the uncached ones.
struct Tally {
    plain_t: Vec<Duration>,
    cached_t: Vec<Duration>,
    /// One JSON record per run.
    per_input: Vec<Value>,
    hit_sum: f64,
    dirty_sum: f64,
    max_rel: f64,
    min_iou: f64,
    count_mismatches: usize,
    /// Runs the automatic switch had the cache off for.
    inactive_runs: usize,
    /// The uncached outputs, for the model's own variation between frames (what a cached
    /// output, an earlier frame's where all is reused, can differ by); the first full run's
    /// included.
    plain_outputs: Vec<Vec<Vec<f32>>>,
}

/// The medians and means of a [`Tally`].
struct Summary {
    runs: usize,
    /// Median uncached time (ms).
    mu: f64,
    /// Median cached time (ms).
    mc: f64,
    hit_rate: f64,
    /// Largest relative L2 difference between the uncached outputs of two frames.
    own: f64,
}

impl Tally {
    /// No runs yet; `first_plain` the uncached outputs of the first (untimed) run.
    fn new(first_plain: Vec<Vec<f32>>) -> Tally {
        Tally {
            plain_t: Vec::new(),
            cached_t: Vec::new(),
            per_input: Vec::new(),
            hit_sum: 0.0,
            dirty_sum: 0.0,
            max_rel: 0.0,
            min_iou: 1.0,
            count_mismatches: 0,
            inactive_runs: 0,
            plain_outputs: vec![first_plain],
        }
    }

    /// Records run `run_index` (input `k` of repeat `rep`): the plain run `p` and the cached
    /// run `c` of one input.
    fn record(
        &mut self,
        b: &CacheBench,
        (run_index, k, rep): (usize, usize, usize),
        p: Run,
        c: Run,
    ) -> anyhow::Result<()> {
        // No counts: the automatic switch had the cache off for this run (a plain run).
        let active = c.2.is_some();
        self.inactive_runs += usize::from(!active);
        let counts = c.2.unwrap_or_default();
        let hit = counts.hit_rate();
        let dirty = counts.dirty_blocks as f64 / counts.blocks.max(1) as f64;
        let rel = rel_l2(&c.0, &p.0);
        self.hit_sum += hit;
        self.dirty_sum += dirty;
        self.max_rel = self
            .max_rel
            .max(if rel.is_nan() { f64::INFINITY } else { rel });
        let agreement = match b.decode {
            Some(kind) => Some(crate::bench_decode::compare(kind, &c.0, &p.0)?),
            None => None,
        };
        if let Some(a) = agreement {
            self.min_iou = self.min_iou.min(a.iou);
            self.count_mismatches += usize::from(!a.same_count);
        }
        self.plain_t.push(p.1);
        self.cached_t.push(c.1);
        if rep == 0 && self.plain_outputs.len() <= MAX_PAIRWISE {
            self.plain_outputs.push(p.0.clone());
        }
        self.per_input.push(json!({
            "run": run_index, "input": k, "repeat": rep,
            "uncached_ms": p.1.as_secs_f64() * 1e3, "cached_ms": c.1.as_secs_f64() * 1e3,
            "cache_active": active,
            "hit_rate": hit, "dirty_blocks": counts.dirty_blocks, "blocks": counts.blocks,
            "computed_tiles": counts.computed_tiles, "tiles": counts.tiles, "rel_l2": rel,
            "decoded_iou": agreement.map(|a| a.iou),
            "decoded_same_count": agreement.map(|a| a.same_count),
        }));
        Ok(())
    }

    /// The runs' medians, mean hit rate and the uncached outputs' own variation.
    fn summary(&self) -> Summary {
        let runs = self.plain_t.len();
        let mut own = 0.0f64;
        for (i, a) in self.plain_outputs.iter().enumerate() {
            for b in &self.plain_outputs[..i] {
                own = own.max(rel_l2(a, b));
            }
        }
        Summary {
            runs,
            mu: median_ms(&self.plain_t),
            mc: median_ms(&self.cached_t),
            hit_rate: self.hit_sum / runs as f64,
            own,
        }
    }
}

/// The JSON report of a `bench --conv-cache` of `graph` over `frames` frames.
#[allow(clippy::too_many_arguments)]
fn report(
    b: &CacheBench,
    graph: &heimdall_ir::Graph,
    pair: &Pair,
    config: &ConvCacheConfig,
    frames: usize,
    tally: &Tally,
    summary: &Summary,
    cached_ops: &[usize],
) -> Value {
    let Summary {
        runs,
        mu,
        mc,
        hit_rate,
        own,
    } = *summary;
    json!({
        "model": graph.name,
        "backend": match b.backend { Backend::Cpu => "cpu", Backend::Gpu => "gpu" },
        "device": pair.device(),
        "precision": match b.backend { Backend::Gpu => json!(format!("{:?}", b.precision)), Backend::Cpu => Value::Null },
        "timing": pair.timing(),
        "order": "plain then cached for each input (each run follows the other model's)",
        "frames": frames, "repeat": b.repeat, "runs": runs,
        "median_ms_uncached": mu, "median_ms_cached": mc,
        "speedup": if mc > 0.0 { mu / mc } else { f64::NAN },
        "hit_rate": hit_rate,
        "dirty_block_fraction": tally.dirty_sum / runs as f64,
        "max_rel_l2": tally.max_rel,
        "max_rel_l2_between_frames": own,
        "cache_off_runs": tally.inactive_runs,
        "calibration": pair.calibration().map(|c| json!({
            "plain_ms": c.plain_ms, "full_ms": c.full_ms, "hit_ms": c.hit_ms,
            "overhead": c.overhead(), "saving": c.saving(),
            "break_even": c.policy(AUTO_PROBE_EVERY).break_even,
        })),
        "cached_ops": cached_ops,
        "cache": {
            "bins": config.bins, "grid": config.grid, "threshold": config.threshold,
            "cell_threshold": config.cell_threshold, "expiry_runs": config.expiry_runs,
            "layers": if config.layers == usize::MAX { Value::Null } else { json!(config.layers) },
            "expiry_ms": config.expiry_ms, "range": config.range,
        },
        "decoded": b.decode.map(|k| json!({
            "kind": k.label(), "min_iou": tally.min_iou, "count_mismatches": tally.count_mismatches,
        })),
        "per_input": tally.per_input,
    })
}

/// The source of frames the flags name.
pub fn source<'a>(
    inputs: &'a [PathBuf],
    still: Option<&'a Path>,
    clip: Option<&'a Path>,
    frames: usize,
) -> anyhow::Result<Source<'a>> {
    match (inputs.is_empty(), still, clip) {
        (false, None, None) => Ok(Source::Npy(inputs)),
        (true, Some(image), None) => Ok(Source::Still { image, frames }),
        (true, None, Some(dir)) => Ok(Source::Clip { dir, frames }),
        (true, None, None) => bail!("--conv-cache needs its inputs: --inputs, --still or --clip"),
        _ => bail!("give one of --inputs, --still and --clip"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges_and_grids() {
        assert_eq!(parse_range("0,1").unwrap(), [0.0, 1.0]);
        assert_eq!(parse_range("-1, 1").unwrap(), [-1.0, 1.0]);
        assert!(parse_range("1,0").is_err());
        assert!(parse_range("1").is_err());
        assert!(parse_range("a,1").is_err());
        assert_eq!(parse_grid("8x6").unwrap(), [8, 6]);
        assert!(parse_grid("0x6").is_err());
        assert!(parse_grid("8").is_err());
    }

    #[test]
    fn rel_l2_of_outputs() {
        let a = vec![vec![1.0, 0.0], vec![0.0]];
        assert_eq!(rel_l2(&a, &a), 0.0);
        let b = vec![vec![1.0, 0.0], vec![1.0]];
        assert!((rel_l2(&b, &a) - 1.0).abs() < 1e-12);
        assert_eq!(rel_l2(&a, &[vec![0.0, 0.0], vec![0.0]]), f64::INFINITY);
    }
}
