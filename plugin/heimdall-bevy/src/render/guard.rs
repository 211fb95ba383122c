//! The accuracy guard in the render world (the stages are in [`crate::guard`]'s documentation):
//! the stored decision looked up as the model compiles ([`start`]), the calibration input taken
//! from the DNN's first inference or the app's image, the check on the compile task ([`run`]),
//! and the guarded model swapped in once the DNN is idle ([`swap_when_idle`]).

use std::sync::Arc;
use std::time::Instant;

use bevy::prelude::*;
use bevy::tasks::futures::check_ready;
use heimdall_cpu::CpuOptions;
use heimdall_gpu::guard::{compile_guarded, cpu_reference_with};
use heimdall_gpu::preprocess::preprocess_to_host;
use heimdall_gpu::{GpuContext, GpuOptions, Precision};
use heimdall_ir::Graph;

use super::background::BackgroundWork;
use super::cache::{GpuJob, compile_gpu_reusing};
use super::guard_store;
pub(crate) use super::state::{
    CalibrationFrame, GuardJob, GuardPhase, GuardPlan, GuardStart, Guarded,
};
use super::state::{
    Compiled, DnnQuery, DnnSetup, ExtractedDnn, ModelState, RenderDnns, RenderModel,
    min_interval_ms,
};
use crate::bridge::channel::{Outbox, RenderMessage};
use crate::guard::{GuardOutcome, GuardStatus};
use crate::settings::HeimdallSettings;

/// The guard's start for `graph` compiled in `precision` on `ctx`: the stored decision if the
/// store has one for this model, adapter, precision and settings, else pending.
pub(crate) fn start(
    ctx: &GpuContext,
    graph: &Graph,
    precision: Precision,
    plan: &GuardPlan,
) -> GuardStart {
    let Some(dir) = &plan.store else {
        return GuardStart::Pending { key: None };
    };
    let key = guard_store::key_of(graph, ctx);
    match guard_store::load(dir, &key, precision, &plan.config, graph) {
        Ok(Some(d)) => return GuardStart::Reused(Box::new(d)),
        Ok(None) => {}
        Err(why) => warn!(
            "heimdall: {}: f16 guard: the stored decision is not reused ({why}); checking again",
            graph.name
        ),
    }
    GuardStart::Pending { key: Some(key) }
}

/// Whether a camera frame (RGBA8) shows something to calibrate on: not a uniform frame (the black
/// or grey frames a webcam often gives while it starts), judged on up to 4096 pixels spread over
/// it: some channel spans at least 16 levels.
pub(crate) fn has_content(rgba: &[u8]) -> bool {
    let pixels = rgba.len() / 4;
    if pixels == 0 {
        return false;
    }
    let step = pixels.div_ceil(4096).max(1);
    let (mut lo, mut hi) = ([u8::MAX; 3], [0u8; 3]);
    for p in rgba.chunks_exact(4).step_by(step) {
        for c in 0..3 {
            lo[c] = lo[c].min(p[c]);
            hi[c] = hi[c].max(p[c]);
        }
    }
    (0..3).any(|c| hi[c].saturating_sub(lo[c]) >= 16)
}

/// The check (blocking; on the compile task): the calibration input made by the GPU
/// preprocessing, the CPU reference on it, the guard, the decision stored, and the model compiled
/// with it for the frame path.
pub(crate) fn run(job: GuardJob) -> Result<Box<Guarded>, String> {
    let [h, w, c] = job.cpu.input;
    let x = preprocess_to_host(
        &job.ctx,
        &job.frame.rgba,
        (job.frame.size.x, job.frame.size.y),
        &job.frame.crop,
        job.norm,
        [h, w, c],
    )
    .map_err(|e| format!("the calibration input: {e}"))?;
    // A camera feeds input 0; any other input gets zeros, as in the profile.
    let mut inputs = job.cpu.zeros();
    if let Some(first) = inputs.first_mut() {
        *first = x;
    }
    let refs: Vec<&[f32]> = inputs.iter().map(Vec::as_slice).collect();
    // One thread: the other cores are the frame's (the main and render threads, the workers).
    let reference = cpu_reference_with(&job.graph, &refs, CpuOptions { threads: 1 })
        .map_err(|e| e.to_string())?;
    let guarded = compile_guarded(
        &job.ctx,
        &job.graph,
        GpuOptions::new(job.precision),
        &refs,
        &reference,
        &job.plan.config,
    )
    .map_err(|e| e.to_string())?;
    let decision = guarded.decision;
    if let (Some(dir), Some(key)) = (&job.plan.store, &job.key) {
        let stored = guard_store::save(
            dir,
            key,
            &job.name,
            job.precision,
            &job.plan.config,
            &decision,
        );
        match stored {
            Ok(path) => info!(
                "heimdall: {}: f16 guard: decision stored in {}",
                job.name,
                path.display()
            ),
            Err(e) => warn!(
                "heimdall: {}: f16 guard: storing the decision: {e}",
                job.name
            ),
        }
    }
    let zeros = job.cpu.zeros();
    let refs: Vec<&[f32]> = zeros.iter().map(Vec::as_slice).collect();
    let gpu = compile_gpu_reusing(
        &GpuJob {
            ctx: &job.ctx,
            graph: &job.graph,
            precision: job.precision,
            overrides: decision.overrides.clone(),
            norm: job.norm,
            channels: c,
            cache: job.cache.0,
            roi: job.cache.1,
            min_interval_ms: job.min_interval_ms,
            inputs: &refs,
        },
        guarded.model,
    )
    .map_err(|e| e.to_string())?;
    Ok(Box::new(Guarded {
        compiled: Compiled::assemble(job.cpu, Some(gpu)),
        decision,
    }))
}

/// Advances DNN `d`'s `guard` (`e`: its main-world entity; extracted as `x`): takes the app's
/// calibration image where it waits for one, starts the check whose input arrived, and
/// collects the finished one (a failed check leaves the DNN in f32 and says why).
pub(crate) fn advance(
    (e, x, d, model): (Entity, &ExtractedDnn, &DnnSetup, &RenderModel),
    guard: &mut GuardPhase,
    ctx: Option<&GpuContext>,
    settings: &HeimdallSettings,
    outbox: &Outbox,
    work: &BackgroundWork,
) {
    if let GuardPhase::AwaitingInput { key } = &*guard
        && let Some(image) = x.calibration_image.clone()
    {
        *guard = match image {
            Ok(frame) => GuardPhase::Input {
                frame,
                key: key.clone(),
            },
            Err(why) => fail(e, &d.name, why, outbox),
        };
    }
    if matches!(guard, GuardPhase::Input { .. }) {
        start_check((e, x, d, model), guard, ctx, settings, outbox, work);
    }
    if let GuardPhase::Running(task) = &mut *guard
        && let Some(result) = check_ready(task)
    {
        *guard = match result {
            Ok(g) => GuardPhase::Ready(g),
            Err(why) => fail(e, &d.name, why, outbox),
        };
    }
}

/// Starts the check of DNN `d`, whose calibration input arrived (in `guard`), on the compile
/// task.
fn start_check(
    (e, x, d, model): (Entity, &ExtractedDnn, &DnnSetup, &RenderModel),
    guard: &mut GuardPhase,
    ctx: Option<&GpuContext>,
    settings: &HeimdallSettings,
    outbox: &Outbox,
    work: &BackgroundWork,
) {
    let GuardPhase::Input { frame, key } = std::mem::replace(guard, GuardPhase::Idle) else {
        return;
    };
    let (Some(ctx), Some(c), Some(config)) = (ctx, model.compiled(), settings.guard.clone()) else {
        return; // the device changed: recompiled anyway
    };
    let Some(graph) = x.graph.clone() else {
        return;
    };
    let job = GuardJob {
        name: d.name.clone(),
        graph,
        ctx: ctx.clone(),
        precision: settings.precision,
        norm: d.normalization,
        cache: d.conv_cache,
        min_interval_ms: min_interval_ms(settings, x.request_period_ms),
        plan: GuardPlan {
            config,
            store: settings.guard_store.clone(),
        },
        key,
        frame,
        cpu: c.cpu_part(),
    };
    info!(
        "heimdall: {}: f16 guard: checking the model on its calibration input (it runs \
         in f32 meanwhile)",
        d.name
    );
    let name = d.name.clone();
    *guard = GuardPhase::Running(work.spawn(async move {
        let (waits, since) = (heimdall_gpu::waits_on_this_thread(), Instant::now());
        let guarded = run(job);
        info!(
            "heimdall: {name}: f16 guard task {:.0} ms, {} GPU waits",
            since.elapsed().as_secs_f64() * 1e3,
            heimdall_gpu::waits_on_this_thread() - waits
        );
        guarded
    }));
    outbox.send(RenderMessage::Guard(e, GuardStatus::Checking));
}

/// Reports a guard that could not check its DNN (which stays in f32).
fn fail(e: Entity, name: &str, why: String, outbox: &Outbox) -> GuardPhase {
    error!("heimdall: {name}: f16 guard failed ({why}); the DNN stays in f32");
    outbox.send(RenderMessage::Guard(e, GuardStatus::Failed(why)));
    GuardPhase::Idle
}

/// Replaces the running model of every idle DNN whose guarded model is ready: the coordinator
/// registers it anew (its profile) at this frame's planning, and its status becomes decided.
/// Returns the coordinator ids the replaced models had.
pub(crate) fn swap_when_idle(
    dnns: &mut DnnQuery,
    guards: &mut Query<(Entity, &mut GuardPhase)>,
    book: &mut RenderDnns,
    outbox: &Outbox,
) -> Vec<heimdall_coordinator::ModelId> {
    let mut retired = Vec::new();
    for (r, mut guard) in guards.iter_mut() {
        let Ok((main, mut d)) = dnns.get_mut(r) else {
            continue;
        };
        if d.run.job.is_some() || !guard.swap_waiting() {
            continue;
        }
        let e = main.id();
        let GuardPhase::Ready(g) = std::mem::replace(&mut *guard, GuardPhase::Idle) else {
            continue;
        };
        let Guarded { compiled, decision } = *g;
        if let Some(gpu) = &compiled.gpu {
            info!(
                "heimdall: {}: the guarded model ({}) replaces the f32 one; compiled for {} in \
                 {:.0} ms",
                d.setup.name,
                decision.summary(),
                gpu.context().info.name,
                gpu.report().compile_time.as_secs_f64() * 1e3
            );
            if let Some(c) = &compiled.cache_decision {
                info!("heimdall: {}: convolution cache {c}", d.setup.name);
                outbox.send(RenderMessage::ConvCacheDecision {
                    dnn: e,
                    decision: c.clone(),
                    cached_ops: gpu.report().cached_ops.len(),
                });
            }
        }
        d.model.state = ModelState::Ready(Box::new(compiled));
        retired.extend(d.model.model_id.take());
        d.run.last_crop = None;
        book.newly_ready.push(e);
        outbox.send(RenderMessage::Guard(
            e,
            GuardStatus::Decided(GuardOutcome {
                decision: Arc::new(decision),
                reused: false,
            }),
        ));
    }
    retired
}

#[cfg(test)]
mod tests {
    use super::has_content;

    #[test]
    fn uniform_frames_are_no_calibration_input() {
        let black = vec![0u8; 64 * 48 * 4];
        assert!(!has_content(&black));
        let grey: Vec<u8> = (0..64 * 48)
            .flat_map(|i| [128, 128, 128 + (i % 7) as u8, 255])
            .collect();
        assert!(!has_content(&grey), "a little noise is still uniform");
        let mut edge = black.clone();
        for p in edge.chunks_exact_mut(4).skip(64 * 24) {
            p[1] = 200;
        }
        assert!(has_content(&edge));
        assert!(!has_content(&[]));
        // A large frame is sampled, not read whole: content anywhere in it is seen.
        let mut big = vec![0u8; 1920 * 1080 * 4];
        for p in big.chunks_exact_mut(4).skip(1920 * 540) {
            p[0] = 255;
        }
        assert!(has_content(&big));
    }
}
