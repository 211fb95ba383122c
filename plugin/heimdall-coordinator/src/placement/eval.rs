//! What an assignment of DNNs to processors gives each DNN: its granted rate (water-filling of
//! each processor's capacity by value, with a floor), its service time and latency there
//! (processor sharing by value on the GPU, the wait for a piece on the CPU), and how far it falls
//! short of its request or deadline (its *trouble*).
//!
//! Everything is kept in preallocated buffers: the planner evaluates a few dozen assignments per
//! plan and must decide in microseconds.

use super::config::PlacementConfig;
use super::types::{DnnDemand, Machine};
use crate::processor::Processor;

/// Least share of the GPU's capacity a DNN is assumed to get, however loaded the GPU.
const MIN_SHARE: f64 = 0.05;

/// The fixed inputs of one plan: the demands, the machine, the settings and the DNNs' priority
/// order.
pub(super) struct Ctx<'a> {
    pub d: &'a [DnnDemand],
    pub m: &'a Machine,
    pub cfg: &'a PlacementConfig,
    /// Indices in priority order: value descending, then the tighter deadline, then model id.
    pub order: Vec<usize>,
    /// Usable GPU capacity (share of wall time) and CPU capacity (slots).
    pub gpu_cap: f64,
    pub cpu_cap: f64,
    /// Deadlines are checked against `deadline / tight` (1, or `1 + margin` for moves that must
    /// keep a margin).
    pub tight: f64,
    /// Weight of each DNN's trouble: 1 for the lowest value, 2 for the next value, and so on.
    pub weight: Vec<f64>,
    /// Whether each DNN's deadline is shorter than its fastest inference anywhere.
    pub unreachable: Vec<bool>,
}

impl<'a> Ctx<'a> {
    pub fn new(d: &'a [DnnDemand], m: &'a Machine, cfg: &'a PlacementConfig) -> Self {
        let mut order: Vec<usize> = (0..d.len()).collect();
        order.sort_by(|&a, &b| {
            let dl = |k: usize| d[k].deadline_ms.unwrap_or(f64::INFINITY);
            d[b].value
                .total_cmp(&d[a].value)
                .then(dl(a).total_cmp(&dl(b)))
                .then(d[a].model.cmp(&d[b].model))
        });
        let mut weight = vec![1.0; d.len()];
        let mut level = 0.0;
        let mut last = f64::NAN;
        for &i in order.iter().rev() {
            if d[i].value != last {
                level += 1.0;
                last = d[i].value;
            }
            weight[i] = level;
        }
        let mut ctx = Ctx {
            d,
            m,
            cfg,
            order,
            gpu_cap: cfg.gpu_saturation.max(0.0) * m.gpu_capacity(),
            cpu_cap: cfg.cpu_saturation.max(0.0) * m.cpu_slots.max(1) as f64,
            tight: 1.0,
            weight,
            unreachable: Vec::new(),
        };
        ctx.unreachable = (0..d.len()).map(|i| ctx.deadline_unreachable(i)).collect();
        ctx
    }

    /// The same context with capacities and deadlines shrunk by `1 + margin`.
    pub fn tightened(&self) -> Ctx<'a> {
        let t = 1.0 + self.cfg.margin.max(0.0);
        Ctx {
            order: self.order.clone(),
            gpu_cap: self.gpu_cap / t,
            cpu_cap: self.cpu_cap / t,
            tight: t,
            weight: self.weight.clone(),
            unreachable: self.unreachable.clone(),
            ..*self
        }
    }

    /// Whether DNN `i` may run on `p` at all.
    pub fn allowed(&self, i: usize, p: Processor) -> bool {
        match p {
            Processor::Gpu => self.d[i].gpu_capable && self.m.has_gpu_budget(),
            Processor::Cpu => self.d[i].cpu_capable,
        }
    }

    /// The requested rate of DNN `i`, Hz (`None`: on demand or not known).
    pub fn requested(&self, i: usize) -> Option<f64> {
        let d = &self.d[i];
        if d.on_demand {
            return None;
        }
        d.period_ms.filter(|p| *p > 0.0).map(|p| 1000.0 / p)
    }

    /// The rate at which on-demand DNN `i` asks (counted as load, never cut), Hz.
    fn demand_rate(&self, i: usize) -> f64 {
        let d = &self.d[i];
        match d.period_ms {
            Some(p) if d.on_demand && p > 0.0 => 1000.0 / p,
            _ => 0.0,
        }
    }

    /// Threads DNN `i` occupies on the CPU (at most the slots).
    pub fn threads(&self, i: usize) -> f64 {
        self.d[i].cpu_threads.clamp(1, self.m.cpu_slots.max(1)) as f64
    }

    /// Load per Hz of DNN `i` on `p`: GPU share of wall time, or CPU slots.
    pub fn load_per_hz(&self, i: usize, p: Processor) -> f64 {
        let d = &self.d[i];
        match p {
            Processor::Gpu => d.gpu_ms / 1000.0,
            Processor::Cpu => d.cpu_threaded_ms * self.threads(i) / 1000.0,
        }
    }

    /// The CPU load per Hz of DNN `i`'s fallback steps while it runs on the GPU, slots.
    fn fallback_per_hz(&self, i: usize) -> f64 {
        self.d[i].fallback_ms * self.threads(i) / 1000.0
    }

    /// Service time of DNN `i` on `p` with nobody else there, ms.
    pub fn alone_service(&self, i: usize, p: Processor) -> f64 {
        let d = &self.d[i];
        match p {
            Processor::Gpu => {
                d.gpu_ms / self.m.gpu_capacity().max(f64::MIN_POSITIVE) + d.fallback_ms
            }
            Processor::Cpu => d.cpu_threaded_ms,
        }
    }

    /// The GPU's pipeline latency beyond the service time: half a frame on average to the next
    /// window and the frame its outputs are read in, ms.
    pub fn gpu_pipeline_ms(&self) -> f64 {
        0.5 * self.m.frame_period_ms
    }

    /// The CPU piece an event may wait for, ms.
    fn cpu_piece_ms(&self) -> f64 {
        self.cfg.cpu_chunk_ms.max(0.0)
    }

    /// Latency of DNN `i` on `p` alone, ms.
    pub fn alone_latency(&self, i: usize, p: Processor) -> f64 {
        match p {
            Processor::Gpu => self.alone_service(i, p) + self.gpu_pipeline_ms(),
            Processor::Cpu => self.alone_service(i, p),
        }
    }

    /// Whether DNN `i`'s deadline (if any) is shorter than its fastest inference anywhere.
    pub fn deadline_unreachable(&self, i: usize) -> bool {
        let Some(dl) = self.d[i].deadline_ms else {
            return false;
        };
        let fastest = [Processor::Gpu, Processor::Cpu]
            .into_iter()
            .filter(|&p| self.allowed(i, p))
            .map(|p| self.alone_latency(i, p))
            .fold(f64::INFINITY, f64::min);
        dl < fastest
    }
}

/// The outcome of one assignment.
#[derive(Clone, Debug, Default)]
pub(super) struct Outcome {
    /// Granted rate per DNN, Hz (NaN: no rate asked).
    pub granted: Vec<f64>,
    /// Service time and latency per DNN where it is assigned, ms.
    pub service: Vec<f64>,
    pub latency: Vec<f64>,
    /// Shortfall against the request (a share of it) plus lateness against the deadline (a
    /// share of it, at most 1), per DNN.
    pub trouble: Vec<f64>,
    /// GPU load (share of wall time) and CPU load (slots) at the granted rates.
    pub gpu_load: f64,
    pub cpu_load: f64,
    /// Sum of `trouble`, each weighted by its DNN's value level ([`Ctx::weight`]).
    pub total: f64,
    /// Scratch: the load of each DNN on its processor.
    load: Vec<f64>,
}

impl Outcome {
    pub fn with_len(n: usize) -> Self {
        Outcome {
            granted: vec![0.0; n],
            service: vec![0.0; n],
            latency: vec![0.0; n],
            trouble: vec![0.0; n],
            load: vec![0.0; n],
            ..Outcome::default()
        }
    }

    /// Evaluates `assign` (one processor per DNN) into `self`.
    pub fn evaluate(&mut self, ctx: &Ctx<'_>, assign: &[Processor]) {
        let n = ctx.d.len();
        // Rates reachable alone (one inference at a time: at most one per service time; the
        // GPU's pipeline, the wait for the next window and the readback, overlaps the next
        // request's wait and is no shortfall), then the capacity shared out by value.
        for (i, &p) in assign.iter().enumerate() {
            self.granted[i] = match ctx.requested(i) {
                Some(r) => r.min(1000.0 / ctx.alone_service(i, p).max(1e-9)),
                None => f64::NAN,
            };
        }
        let gpu_fixed: f64 = (0..n)
            .filter(|&i| assign[i] == Processor::Gpu)
            .map(|i| ctx.demand_rate(i) * ctx.load_per_hz(i, Processor::Gpu))
            .sum();
        self.water_fill(ctx, assign, Processor::Gpu, gpu_fixed);
        let cpu_fixed: f64 = (0..n)
            .map(|i| match assign[i] {
                Processor::Cpu => ctx.demand_rate(i) * ctx.load_per_hz(i, Processor::Cpu),
                Processor::Gpu => {
                    let rate = if self.granted[i].is_nan() {
                        ctx.demand_rate(i)
                    } else {
                        self.granted[i]
                    };
                    rate * ctx.fallback_per_hz(i)
                }
            })
            .sum();
        self.water_fill(ctx, assign, Processor::Cpu, cpu_fixed);
        self.loads(ctx, assign, gpu_fixed, cpu_fixed);
        self.latencies(ctx, assign);
        self.total = 0.0;
        for i in 0..n {
            let mut t = 0.0;
            if let Some(r) = ctx.requested(i) {
                t += (1.0 - self.granted[i] / r).max(0.0);
            }
            if let Some(dl) = ctx.d[i].deadline_ms
                && !ctx.unreachable[i]
            {
                t += (self.latency[i] * ctx.tight / dl - 1.0).clamp(0.0, 1.0);
            }
            self.trouble[i] = t;
            self.total += ctx.weight[i] * t;
        }
    }

    /// Water-filling of `p`'s capacity over the rate DNNs assigned to it: each first gets its
    /// floor (a share of its request, at most what it can reach), then the rest goes by value,
    /// DNNs of equal value and deadline raised together, each up to what it can reach.
    fn water_fill(&mut self, ctx: &Ctx<'_>, assign: &[Processor], p: Processor, fixed: f64) {
        let cap = match p {
            Processor::Gpu => ctx.gpu_cap,
            Processor::Cpu => ctx.cpu_cap,
        };
        let mut avail = (cap - fixed).max(0.0);
        let floor = ctx.cfg.floor_fraction.clamp(0.0, 1.0);
        let on = |i: usize| assign[i] == p && ctx.requested(i).is_some();
        // Floors first.
        let mut floors = 0.0;
        for i in (0..ctx.d.len()).filter(|&i| on(i)) {
            let r = ctx.requested(i).unwrap_or(0.0);
            floors += ctx.load_per_hz(i, p) * (floor * r).min(self.granted[i]);
        }
        if floors >= avail {
            let scale = if floors > 0.0 { avail / floors } else { 0.0 };
            for i in (0..ctx.d.len()).filter(|&i| on(i)) {
                let r = ctx.requested(i).unwrap_or(0.0);
                self.granted[i] = (floor * r).min(self.granted[i]) * scale;
            }
            return;
        }
        avail -= floors;
        // Then by value, a class of equal value and deadline at a time.
        let order = &ctx.order;
        let mut k = 0;
        while k < order.len() {
            let same = |a: usize, b: usize| {
                ctx.d[a].value == ctx.d[b].value && ctx.d[a].deadline_ms == ctx.d[b].deadline_ms
            };
            let mut end = k + 1;
            while end < order.len() && same(order[k], order[end]) {
                end += 1;
            }
            let class = &order[k..end];
            let want: f64 = class
                .iter()
                .filter(|&&i| on(i))
                .map(|&i| {
                    let r = ctx.requested(i).unwrap_or(0.0);
                    ctx.load_per_hz(i, p) * (self.granted[i] - (floor * r).min(self.granted[i]))
                })
                .sum();
            let frac = if want <= avail || want <= 0.0 {
                1.0
            } else {
                avail / want
            };
            for &i in class.iter().filter(|&&i| on(i)) {
                let r = ctx.requested(i).unwrap_or(0.0);
                let f = (floor * r).min(self.granted[i]);
                self.granted[i] = f + frac * (self.granted[i] - f);
            }
            avail = (avail - want).max(0.0);
            k = end;
        }
    }

    /// Each DNN's load at its granted rate, and the processors' totals.
    fn loads(&mut self, ctx: &Ctx<'_>, assign: &[Processor], gpu_fixed: f64, cpu_fixed: f64) {
        self.gpu_load = gpu_fixed;
        self.cpu_load = cpu_fixed;
        for (i, &p) in assign.iter().enumerate() {
            let rate = if self.granted[i].is_nan() {
                ctx.demand_rate(i)
            } else {
                self.granted[i]
            };
            self.load[i] = rate * ctx.load_per_hz(i, p);
            if self.granted[i].is_nan() {
                continue; // counted in the fixed loads
            }
            match p {
                Processor::Gpu => self.gpu_load += self.load[i],
                Processor::Cpu => self.cpu_load += self.load[i],
            }
        }
    }

    /// Service times and latencies at the loads: on the GPU, a DNN gets the capacity the DNNs
    /// of higher value leave (half of what its equals use); on the CPU it runs at its threads
    /// (its service time) after it may wait for a piece, more likely the fuller the slots (its
    /// latency only: the wait overlaps the previous inference's wait for its next request).
    fn latencies(&mut self, ctx: &Ctx<'_>, assign: &[Processor]) {
        let c = ctx.m.gpu_capacity();
        let slots = ctx.m.cpu_slots.max(1) as f64;
        let order = &ctx.order;
        let mut higher = 0.0;
        let mut k = 0;
        while k < order.len() {
            let v = ctx.d[order[k]].value;
            let mut end = k + 1;
            while end < order.len() && ctx.d[order[end]].value == v {
                end += 1;
            }
            let class = &order[k..end];
            let same: f64 = class
                .iter()
                .filter(|&&i| assign[i] == Processor::Gpu)
                .map(|&i| self.load[i])
                .sum();
            for &i in class {
                let d = &ctx.d[i];
                let (service, latency) = match assign[i] {
                    Processor::Gpu => {
                        let share = (c - higher - 0.5 * (same - self.load[i])).max(MIN_SHARE * c);
                        let s = d.gpu_ms / share.max(f64::MIN_POSITIVE) + d.fallback_ms;
                        (s, s + ctx.gpu_pipeline_ms())
                    }
                    Processor::Cpu => {
                        // The wait for a piece comes before the inference starts: it is latency,
                        // not service time. Counted in the service time, it capped the rate of
                        // every CPU DNN below its request on slots that were far from full (a
                        // 9 ms hand model at 90 Hz granted 72 Hz, enforced by admission).
                        let others = (self.cpu_load - self.load[i]).max(0.0);
                        let wait = ctx.cpu_piece_ms() * (others / slots).min(1.0);
                        (d.cpu_threaded_ms, d.cpu_threaded_ms + wait)
                    }
                };
                self.service[i] = service;
                self.latency[i] = latency;
                if !self.granted[i].is_nan() {
                    self.granted[i] = self.granted[i].min(1000.0 / service.max(1e-9));
                }
            }
            higher += same;
            k = end;
        }
    }

    /// The load DNN `i` puts on its processor, as a share of that processor's capacity.
    pub fn load_share(&self, ctx: &Ctx<'_>, i: usize, p: Processor) -> f64 {
        let cap = match p {
            Processor::Gpu => ctx.m.gpu_capacity(),
            Processor::Cpu => ctx.m.cpu_slots.max(1) as f64,
        };
        self.load[i] / cap.max(f64::MIN_POSITIVE)
    }
}
