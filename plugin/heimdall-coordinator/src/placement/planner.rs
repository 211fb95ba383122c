//! The planner's decision: from the current placement, the moves that the machine forces, those
//! that repair what does not fit, and the returns to the GPU that keep a margin ("GPU first");
//! then each DNN's granted rate and, where it runs below its request, why.

use super::config::PlacementConfig;
use super::eval::{Ctx, Outcome};
use super::types::{DnnDemand, Machine, Plan, PlanEntry, Shortfall, ShortfallReason};
use crate::processor::Processor;

/// Trouble below this counts as none (floating-point noise).
const EPS: f64 = 1e-9;

fn other(p: Processor) -> Processor {
    match p {
        Processor::Gpu => Processor::Cpu,
        Processor::Cpu => Processor::Gpu,
    }
}

/// Places every DNN of `demands` on `machine` at `now_ms`; see [`super`] for the algorithm.
/// Deterministic: the same input gives the same plan (ties go by model id).
pub fn plan(demands: &[DnnDemand], machine: &Machine, cfg: &PlacementConfig, now_ms: f64) -> Plan {
    let ctx = Ctx::new(demands, machine, cfg);
    let n = demands.len();
    let mut assign: Vec<Processor> = demands.iter().map(|d| d.current).collect();
    let mut moved = vec![false; n];
    // 1. What the machine forces: a DNN goes where it can run at all (no GPU budget: every DNN
    //    that can run on the CPU goes there at once). On-demand DNNs live on the GPU where
    //    they can ("GPU first"); each of their jobs takes the processor that answers soonest.
    for i in 0..n {
        let p = assign[i];
        let home = if demands[i].on_demand && ctx.allowed(i, Processor::Gpu) {
            Processor::Gpu
        } else {
            p
        };
        if home != p || (!ctx.allowed(i, p) && ctx.allowed(i, other(p))) {
            assign[i] = if home != p { home } else { other(p) };
            moved[i] = true;
        }
    }
    let mut base = Outcome::with_len(n);
    let mut trial = Outcome::with_len(n);
    base.evaluate(&ctx, &assign);
    // 2. Repair: while some DNN falls short, take the move that loses the least latency per
    //    unit of load it frees, among those that help and hurt nobody.
    while base.total > EPS {
        let Some(i) = best_repair(&ctx, &assign, &moved, &base, &mut trial, now_ms) else {
            break;
        };
        assign[i] = other(assign[i]);
        moved[i] = true;
        base.evaluate(&ctx, &assign);
    }
    // 3. GPU first: a DNN on the CPU goes back where the GPU has room for it with the margin.
    let tight = ctx.tightened();
    let mut tight_base = Outcome::with_len(n);
    tight_base.evaluate(&tight, &assign);
    while let Some(i) = best_return(&tight, &assign, &moved, &tight_base, &mut trial, now_ms) {
        assign[i] = Processor::Gpu;
        moved[i] = true;
        tight_base.evaluate(&tight, &assign);
    }
    base.evaluate(&ctx, &assign);
    entries(&ctx, &assign, &base, now_ms)
}

/// Whether DNN `i` may move now: it was not moved in this plan, and it falls short where it is
/// or has stayed there at least the dwell time.
fn may_move(ctx: &Ctx<'_>, i: usize, moved: &[bool], troubled: bool, now_ms: f64) -> bool {
    let d = &ctx.d[i];
    !moved[i] && !d.on_demand && (troubled || now_ms - d.since_ms >= ctx.cfg.min_dwell_ms)
}

/// The repair move to make, if any (the DNN to move to its other processor).
fn best_repair(
    ctx: &Ctx<'_>,
    assign: &[Processor],
    moved: &[bool],
    base: &Outcome,
    trial: &mut Outcome,
    now_ms: f64,
) -> Option<usize> {
    let m = 1.0 + ctx.cfg.margin.max(0.0);
    let mut best: Option<(f64, usize)> = None;
    let mut next = assign.to_vec();
    for i in 0..ctx.d.len() {
        let (p, q) = (assign[i], other(assign[i]));
        let troubled = base.trouble[i] > EPS;
        if !ctx.allowed(i, q) || !may_move(ctx, i, moved, troubled, now_ms) {
            continue;
        }
        next[i] = q;
        trial.evaluate(ctx, &next);
        next[i] = p;
        // Better overall, by value: a DNN that was fine may fall short only for one worth more.
        if trial.total >= base.total - EPS {
            continue;
        }
        let helps_itself = if troubled {
            // Better there by more than the margin: its rate, or its deadline met.
            let rate_gain = match ctx.requested(i) {
                Some(_) => trial.granted[i] > base.granted[i] * m,
                None => false,
            };
            let on_time = ctx.d[i]
                .deadline_ms
                .is_some_and(|dl| base.latency[i] > dl && trial.latency[i] * m <= dl);
            rate_gain || on_time || trial.trouble[i] < base.trouble[i] / m - EPS
        } else {
            // It frees load for others and keeps its own rate and deadline with the margin.
            let rate_ok = ctx
                .requested(i)
                .is_none_or(|r| trial.granted[i] >= r * (1.0 - EPS));
            let dl_ok = ctx.d[i]
                .deadline_ms
                .is_none_or(|dl| trial.latency[i] * m <= dl);
            rate_ok && dl_ok
        };
        if !helps_itself {
            continue;
        }
        let freed = base.load_share(ctx, i, p).max(1e-6);
        let score = (trial.latency[i] - base.latency[i]) / freed;
        let key = (score, ctx.d[i].model);
        if best.is_none_or(|(s, b)| key.0 < s || (key.0 == s && key.1 < ctx.d[b].model)) {
            best = Some((score, i));
        }
    }
    best.map(|(_, i)| i)
}

/// The return to the GPU to make, if any: a DNN on the CPU whose dwell has passed goes back when,
/// with capacities and deadlines tightened by the margin, it falls short of nothing on the GPU
/// and nobody falls short more. Among several, the one whose CPU latency is largest against its
/// GPU latency.
fn best_return(
    tight: &Ctx<'_>,
    assign: &[Processor],
    moved: &[bool],
    base: &Outcome,
    trial: &mut Outcome,
    now_ms: f64,
) -> Option<usize> {
    let mut best: Option<(f64, usize)> = None;
    let mut next = assign.to_vec();
    for i in 0..tight.d.len() {
        if assign[i] != Processor::Cpu
            || !tight.allowed(i, Processor::Gpu)
            || !may_move(tight, i, moved, false, now_ms)
        {
            continue;
        }
        next[i] = Processor::Gpu;
        trial.evaluate(tight, &next);
        next[i] = Processor::Cpu;
        if trial.trouble[i] > EPS {
            continue;
        }
        let worse = (0..tight.d.len()).any(|j| j != i && trial.trouble[j] > base.trouble[j] + EPS);
        if worse {
            continue;
        }
        let ratio = base.latency[i] / trial.latency[i].max(1e-9);
        let id = tight.d[i].model;
        if best.is_none_or(|(r, b)| ratio > r || (ratio == r && id < tight.d[b].model)) {
            best = Some((ratio, i));
        }
    }
    best.map(|(_, i)| i)
}

/// The plan's entries from the final assignment and its outcome.
fn entries(ctx: &Ctx<'_>, assign: &[Processor], out: &Outcome, now_ms: f64) -> Plan {
    let mut entries: Vec<PlanEntry> = (0..ctx.d.len())
        .map(|i| {
            let p = assign[i];
            let requested = ctx.requested(i);
            let granted = requested.map(|_| out.granted[i]);
            let elsewhere = |q: Processor| {
                ctx.allowed(i, q).then(|| {
                    if q == p {
                        out.latency[i]
                    } else {
                        what_if(ctx, out, i, q)
                    }
                })
            };
            PlanEntry {
                model: ctx.d[i].model,
                processor: p,
                expected_latency_ms: out.latency[i],
                gpu_latency_ms: elsewhere(Processor::Gpu),
                cpu_latency_ms: elsewhere(Processor::Cpu),
                requested_hz: requested,
                granted_hz: granted,
                shortfall: shortfall(ctx, assign, out, i),
            }
        })
        .collect();
    entries.sort_by_key(|e| e.model);
    Plan {
        at_ms: now_ms,
        entries,
        gpu_budget: ctx.m.has_gpu_budget(),
        gpu_load: out.gpu_load / ctx.m.gpu_capacity().max(f64::MIN_POSITIVE),
        cpu_load: out.cpu_load,
    }
}

/// Latency of DNN `i` if it ran on `q` beside the others' loads, ms.
fn what_if(ctx: &Ctx<'_>, out: &Outcome, i: usize, q: Processor) -> f64 {
    let d = &ctx.d[i];
    match q {
        Processor::Gpu => {
            let c = ctx.m.gpu_capacity();
            let left = (c - out.gpu_load).max(0.05 * c);
            d.gpu_ms / left.max(f64::MIN_POSITIVE) + d.fallback_ms + ctx.gpu_pipeline_ms()
        }
        Processor::Cpu => {
            let slots = ctx.m.cpu_slots.max(1) as f64;
            d.cpu_threaded_ms + ctx.cfg.cpu_chunk_ms.max(0.0) * (out.cpu_load / slots).min(1.0)
        }
    }
}

/// Why DNN `i` runs below its request (or cannot meet its deadline anywhere), if it does.
fn shortfall(ctx: &Ctx<'_>, assign: &[Processor], out: &Outcome, i: usize) -> Option<Shortfall> {
    let d = &ctx.d[i];
    let requested = ctx.requested(i);
    let short = requested.is_some_and(|r| out.granted[i] < r * (1.0 - 1e-6));
    let unreachable = ctx.deadline_unreachable(i);
    if !short && !unreachable {
        return None;
    }
    let r = requested.unwrap_or(0.0);
    let granted = if requested.is_some() {
        out.granted[i]
    } else {
        0.0
    };
    let p = assign[i];
    // Whether `q` could serve it at all: it runs there and meets its deadline there alone.
    let usable = |q: Processor| {
        ctx.allowed(i, q) && d.deadline_ms.is_none_or(|dl| ctx.alone_latency(i, q) <= dl)
    };
    // The most it could reach alone anywhere: below that, capacity (not its own speed) cuts it.
    let reach = [Processor::Gpu, Processor::Cpu]
        .into_iter()
        .filter(|&q| ctx.allowed(i, q))
        .map(|q| 1000.0 / ctx.alone_service(i, q).max(1e-9))
        .fold(0.0, f64::max);
    let reason = if !ctx.allowed(i, p) && p == Processor::Gpu {
        ShortfallReason::GpuOnlyNoBudget
    } else if unreachable {
        ShortfallReason::DeadlineUnreachable
    } else if reach < r * (1.0 - 1e-6) && granted >= reach * (1.0 - 1e-6) {
        ShortfallReason::SlowerThanRequested
    } else if p == Processor::Cpu && !ctx.m.has_gpu_budget() && d.gpu_capable {
        ShortfallReason::NoGpuBudgetCpuFull
    } else if p == Processor::Gpu && !usable(Processor::Cpu) {
        ShortfallReason::GpuFull
    } else if p == Processor::Cpu && !usable(Processor::Gpu) {
        ShortfallReason::CpuFull
    } else if p == Processor::Cpu && granted >= 1000.0 / out.service[i].max(1e-9) * (1.0 - 1e-6) {
        ShortfallReason::GpuFullCpuTooSlow
    } else {
        ShortfallReason::BothFull
    };
    Some(Shortfall {
        requested_hz: r,
        granted_hz: granted,
        reason,
    })
}
