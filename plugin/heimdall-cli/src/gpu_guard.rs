//! The accuracy guard on the command line (`heimdall_gpu::guard`): with `--precision f16` or
//! `packed-f16`, `run` and `bench` check the model on a calibration input against the CPU
//! backend in f32 and switch the ops that miss the bound to f32 (`--no-guard`: off).

use std::path::Path;

use anyhow::{Context, bail};
use heimdall::LoadedModel;
use heimdall::npy::read_npy;
use heimdall_gpu::guard::{GuardConfig, GuardDecision, compile_guarded, cpu_reference};
use heimdall_gpu::{GpuContext, GpuModel, GpuOptions, Precision};
use heimdall_ir::Graph;
use heimdall_vision::{Crop, Normalization, RgbaImage};
use serde_json::{Value, json};

/// Compiles `graph` with `options`; when `calibration` is given and the precision is reduced,
/// under the guard (its decision printed on stderr and returned).
pub fn compile(
    ctx: &GpuContext,
    graph: &Graph,
    options: GpuOptions,
    calibration: Option<&[Vec<f32>]>,
) -> anyhow::Result<(GpuModel, Option<GuardDecision>)> {
    let Some(inputs) = calibration.filter(|_| options.precision != Precision::F32) else {
        let what = format!("compiling {} for the GPU", graph.name);
        let model = crate::progress::step(what, || GpuModel::compile(ctx, graph, options))?;
        return Ok((model, None));
    };
    let refs: Vec<&[f32]> = inputs.iter().map(Vec::as_slice).collect();
    let what = format!(
        "compiling {} for the GPU in {:?}, checked against the CPU (accuracy guard)",
        graph.name, options.precision
    );
    let guarded = crate::progress::step(what, || {
        let reference = cpu_reference(graph, &refs).context("f16 guard")?;
        compile_guarded(
            ctx,
            graph,
            options,
            &refs,
            &reference,
            &GuardConfig::default(),
        )
        .context("f16 guard")
    })?;
    eprintln!("{}", guarded.decision.log_line(&graph.name));
    Ok((guarded.model, Some(guarded.decision)))
}

/// The decision as JSON (what `bench --json` reports under `"guard"`).
pub fn to_json(d: &GuardDecision) -> Value {
    let ranges: Vec<[usize; 2]> = d.f32_ranges.iter().map(|r| [r.start, r.end]).collect();
    let finite =
        |v: &[f64]| -> Vec<Option<f64>> { v.iter().map(|e| e.is_finite().then_some(*e)).collect() };
    json!({
        "summary": d.summary(), "f32_ranges": ranges, "f32_ops": d.f32_ops(), "ops": d.ops,
        "whole_f32": d.whole_f32, "passed": d.passed, "trials": d.trials,
        "cap_reached": d.cap_reached, "bounds": d.bounds,
        "errors_before": finite(&d.errors_before), "errors_after": finite(&d.errors_after),
        "time_ms": d.time.as_secs_f64() * 1e3,
    })
}

/// The calibration inputs of `bench`: `path` (a PNG or JPEG resized to the model's image input
/// with `range`, or a float32 `.npy` of input 0 in the model's own layout); without it the
/// bundled photo `assets/images/astronaut.png` where the model's only input is an image
/// `[1, H, W, 3]`, else `fallback` (the benchmark's own inputs).
pub fn calibration_inputs(
    model: &LoadedModel,
    path: Option<&Path>,
    range: [f32; 2],
    fallback: &[Vec<f32>],
) -> anyhow::Result<Vec<Vec<f32>>> {
    let g = &model.graph;
    let image_shape = match (g.inputs.len(), g.inputs.first()) {
        (1, Some(&t)) => match g.tensor(t).shape[..] {
            [1, h, w, 3] => Some([h, w, 3]),
            _ => None,
        },
        _ => None,
    };
    let is_npy = path.is_some_and(|p| p.extension().is_some_and(|e| e == "npy"));
    if let Some(p) = path.filter(|_| is_npy) {
        if g.inputs.len() != 1 {
            bail!(
                "--calibration: a .npy gives one input, the model has {}",
                g.inputs.len()
            );
        }
        let t = read_npy(p).map_err(|e| anyhow::anyhow!("--calibration: {e}"))?;
        let io = &model.io.inputs[0];
        if t.shape != io.shape {
            bail!(
                "--calibration {}: the model's input `{}` has shape {:?}, the file has shape {:?}",
                p.display(),
                io.name,
                io.shape,
                t.shape
            );
        }
        return Ok(vec![io.to_ir(&t.data)]);
    }
    let image = match path {
        Some(p) => p.to_path_buf(),
        None if image_shape.is_some() => crate::assets::asset("images/astronaut.png")?,
        None => return Ok(fallback.to_vec()),
    };
    let Some(shape) = image_shape else {
        bail!(
            "--calibration {}: an image needs a model whose only input is an image [1, H, W, 3]; \
             give a .npy instead",
            image.display()
        );
    };
    let img = RgbaImage::load(&image).map_err(|e| anyhow::anyhow!("--calibration: {e}"))?;
    let x = img.to_tensor(
        &Crop::FULL,
        &Normalization::range(range[0], range[1]),
        shape,
    )?;
    Ok(vec![x])
}
