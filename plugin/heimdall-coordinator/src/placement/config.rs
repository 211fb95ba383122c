//! The placement planner's settings.

/// Which rule moves DNNs between the GPU and the CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PlacementRule {
    /// The placement planner ([`super`]): every DNN placed at once over both processors' loads.
    #[default]
    Planner,
    /// The rule the planner replaced, kept as a baseline for comparison
    /// ([`crate::offload::decide`]): about once a second ([`PlacementConfig::min_dwell_ms`]) at
    /// most one model moves, only while a CPU slot can be spared, each CPU inference on one
    /// thread and whole.
    OffloadRule,
}

/// How the placement planner decides where each DNN runs (see [`super`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlacementConfig {
    /// Whether DNNs may move between the GPU and the CPU at all. Off (the `chunking` ablation and
    /// the offload ablations' "no offload"): every DNN stays on the GPU; only the steps the GPU
    /// cannot run go to the CPU.
    pub enabled: bool,
    /// The planner, or the rule it replaced (for comparisons).
    pub rule: PlacementRule,
    /// Period of the regular re-plan, ms. The planner also re-plans at once when the GPU budget
    /// collapses to none or comes back, when a model registers or retires, when a request
    /// pattern changes and when a measured cost drifts beyond the re-partition drift.
    pub interval_ms: f64,
    /// Hysteresis margin `m`: a DNN whose current placement is feasible moves only when the
    /// alternative is better by more than `m` (relative), and deadlines are checked with it
    /// (`latency * (1 + m) <= deadline`).
    pub margin: f64,
    /// A DNN stays at least this long where it was placed before it may move for a better
    /// placement, ms. A DNN that misses its deadline where it is, or whose processor has no room
    /// (no GPU budget at all), moves at once.
    pub min_dwell_ms: f64,
    /// Share of the GPU's DNN capacity (the frame budget over the frame period) the plan may
    /// fill.
    pub gpu_saturation: f64,
    /// Share of the CPU slots the plan may fill.
    pub cpu_saturation: f64,
    /// Continuous CPU work is cut into pieces of at most this long at its threads, ms, so that
    /// an event-driven DNN waits at most one piece for its slots (0: no cut).
    pub cpu_chunk_ms: f64,
    /// When nothing fits, every admitted DNN keeps at least this share of its requested rate
    /// (the floor of the water-filling).
    pub floor_fraction: f64,
}

impl Default for PlacementConfig {
    /// On, re-planned every 250 ms, margin 0.2, 1 s dwell, 90 % of the GPU's budget share, 85 %
    /// of the CPU slots, 8 ms CPU pieces, a floor of a tenth of the requested rate.
    fn default() -> Self {
        PlacementConfig {
            enabled: true,
            rule: PlacementRule::Planner,
            interval_ms: 250.0,
            margin: 0.2,
            min_dwell_ms: 1000.0,
            gpu_saturation: 0.9,
            cpu_saturation: 0.85,
            cpu_chunk_ms: 8.0,
            floor_fraction: 0.1,
        }
    }
}
