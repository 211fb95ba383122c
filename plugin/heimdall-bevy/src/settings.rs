//! Plugin settings: frame-rate target, coordination mode, policy, CPU workers, margins.
//!
//! [`HeimdallSettings`] is a main-world resource: edit it while the app runs and the render
//! world takes the new values at the next extract ([`crate::render`] copies it whenever it
//! changed). Most settings apply from the next frame; the few that shape what the plugin
//! builds at start-up (its threads, its GPU context, the backend) say so, and a change to one
//! of them is logged as a warning and not applied (see [`HeimdallSettings::STARTUP_ONLY`]).

use std::path::PathBuf;

use bevy::prelude::*;
use heimdall_coordinator::{PlacementRule, SchedulingPolicy};
use heimdall_gpu::Precision;
use heimdall_gpu::guard::GuardConfig;

/// How DNN work is fitted around the scene.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Reflect)]
#[reflect(Debug, PartialEq, Default, Clone)]
pub enum CoordinationMode {
    /// Heimdall's coordinator: chunks sized to the GPU time each frame leaves, ranked by utility.
    #[default]
    Heimdall,
    /// The uncoordinated baseline: each requested inference is encoded whole, as soon as it is
    /// requested, into the current frame.
    Fifo,
    /// `k` layers of each running model per frame (the naive pseudo-preemption baseline).
    Layers(usize),
}

impl CoordinationMode {
    /// Parses `heimdall`, `fifo` or `layers:K`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "heimdall" | "Heimdall" => Some(Self::Heimdall),
            "fifo" | "Fifo" => Some(Self::Fifo),
            _ => s
                .strip_prefix("layers:")
                .and_then(|k| k.parse().ok())
                .filter(|&k| k > 0)
                .map(Self::Layers),
        }
    }

    /// Name used in reports (`heimdall`, `fifo`, `layers:K`).
    pub fn name(&self) -> String {
        match self {
            Self::Heimdall => "heimdall".into(),
            Self::Fifo => "fifo".into(),
            Self::Layers(k) => format!("layers:{k}"),
        }
    }
}

/// The frame rate the scene must keep.
#[derive(Clone, Copy, Debug, PartialEq, Default, Reflect)]
#[reflect(Debug, PartialEq, Default, Clone)]
pub enum FrameRateTarget {
    /// The primary window's monitor refresh rate (60 Hz when unknown or headless).
    #[default]
    FollowDisplay,
    /// A fixed rate in Hz.
    Fixed(f64),
}

/// Settings of [`crate::HeimdallPlugin`] (a main-world resource, copied into the render world
/// whenever it changes: edit it at run time and the plugin follows from the next frame, except
/// for the fields listed in [`HeimdallSettings::STARTUP_ONLY`], which keep their start-up
/// values, with a warning).
///
/// Reflected (`Reflect`, `#[reflect(Resource)]`) for inspectors and scripts; the policy, the
/// precision, the guard and the placement rule are not reflected (types of the engine crates;
/// settings built from reflection take their default values).
#[derive(Resource, Clone, Debug, Reflect)]
#[reflect(Resource, Debug, Default, Clone)]
pub struct HeimdallSettings {
    /// Frame rate the scene must keep; the DNN budget is `1/f - T_render - margin`.
    pub frame_rate: FrameRateTarget,
    /// Coordination mode (changing it at run time takes effect at the next decision, with the
    /// mode's policy).
    pub mode: CoordinationMode,
    /// Policy of the `Heimdall` mode: [`SchedulingPolicy::max_total_utility`] (the default),
    /// [`SchedulingPolicy::max_min_utility`], [`SchedulingPolicy::least_slack_time`], or an
    /// app's own [`heimdall_coordinator::Policy`] through [`SchedulingPolicy::new`]
    /// ([`SchedulingPolicy::by_name`] for a command line). A new value replaces the
    /// coordinator's policy at the next frame.
    #[reflect(ignore)]
    pub policy: SchedulingPolicy,
    /// The CPU slots for inference: the cores the plugin's worker pool may keep busy with CPU-only
    /// steps and with inferences the coordinator places on the CPU (a multi-threaded inference
    /// occupies one slot per thread). `None` (the default): the cores left to the app, see
    /// [`HeimdallSettings::cpu_slots`]; `Some(n)`: `n` (at least 1). Start-up only (the worker
    /// pool's threads).
    pub cpu_workers: Option<usize>,
    /// An on-demand DNN ([`crate::dnn::RequestMode::OnDemand`], a style transfer on a tap) whose
    /// CPU inference spans more than two pieces of continuous work may run on all the CPU slots,
    /// not half of them: on a phone's two slots the event's inference runs on both (multistyle26:
    /// 36–47 ms against 53–62 ms on one, H200 host under `taskset -c 0-3`), waiting at most one
    /// piece of continuous work (or an on-demand inference already running) to start (the default,
    /// `true`). `false`: half the slots, as continuous models (for comparison). Read when a model
    /// is compiled.
    pub events_take_all_slots: bool,
    /// Safety margin of the frame budget, ms.
    pub margin_ms: f64,
    /// Learn an extra margin from the wall clock (`Heimdall` mode): a frame later than 1.25
    /// periods while DNN chunks ran widens it, on-time frames narrow it (see
    /// `render/pacing.rs`). Off by default: on an H100 it has not yet paced better than the
    /// fixed `margin_ms` (docs/emoji.md).
    pub adaptive_margin: bool,
    /// Relaxation of the last chunk, ms (Heimdall sec. 5.3).
    pub relaxation_ms: f64,
    /// Storage precision on the GPU (f16 by default; in reduced precision each DNN is held to
    /// its accuracy by [`HeimdallSettings::guard`]). A change applies to the models compiled
    /// after it (new DNNs, a changed model, a [`crate::faults::RestartDnn`]); running models
    /// keep theirs.
    #[reflect(ignore)]
    pub precision: Precision,
    /// The accuracy guard of reduced precision ([`crate::guard`]): a GPU DNN compiled in f16 or
    /// packed f16 runs in f32 until the guard has checked it on a calibration input against
    /// the CPU backend in f32 and switched to f32 the ops that break these bounds; then the
    /// guarded model replaces the f32 one. `None`: off (every DNN in `precision` as it is, no
    /// check). On by default, with [`GuardConfig::default`] (floored relative L2 ≤ 1e-2 per
    /// output, the golden suites' f16 bound). Like [`HeimdallSettings::precision`], a change
    /// applies to the models compiled after it.
    #[reflect(ignore)]
    pub guard: Option<GuardConfig>,
    /// Where the guard's decisions are kept between runs (one JSON file per model and
    /// adapter, keyed as [`heimdall_coordinator::ProfileStore`] keys profiles: a content hash
    /// of the imported model and the adapter's description). A DNN whose decision is stored
    /// there is compiled with it at once (no f32 period, no search); delete the file to check
    /// again. `None` (the default): nothing is written, every start checks again (a few
    /// compiles and runs of the model on the compile task). An app that starts often sets a
    /// cache directory of its own, e.g. `Some("heimdall-cache".into())` (relative paths are
    /// relative to the working directory). Read when a model is compiled.
    pub guard_store: Option<PathBuf>,
    /// Run every model on the CPU backend even when the GPU could (the no-compute path).
    /// Start-up only (the backend is chosen once per render device).
    pub force_cpu: bool,
    /// Let the coordinator move whole models to CPU workers when the GPU is overloaded.
    pub offload: bool,
    /// Which rule moves DNNs between the GPU and the CPU when `offload` is on: the placement
    /// planner (the default), or the rule it replaced, which moves one model about once a second
    /// and only when the GPU is overloaded (for comparison, and where a test needs a model kept
    /// on the GPU while it has a budget).
    #[reflect(ignore)]
    pub placement_rule: PlacementRule,
    /// Hand out CPU work the moment a worker finishes (the default): between its frames the
    /// render world lends its coordinator to the workers (`render/cpu_lane.rs`), so a slot freed
    /// mid-frame takes the next piece at once. `false`: CPU work goes out only at each frame's
    /// decision, at most one piece per slot per frame (for comparison).
    pub cpu_on_completion: bool,
    /// With `cpu_on_completion`, lend the coordinator to the workers from the end of the frame's
    /// DNN encoding (the default): while the render thread prepares, draws and presents the
    /// scene and waits for the next update (most of a frame), a worker that finishes takes its
    /// next piece at once; the render world has the coordinator only for its own preparation,
    /// decision and encoding. `false`: only from the end of the render frame
    /// (`RenderSystems::Cleanup`) to the next preparation, so a piece that ends while the frame
    /// is drawn leaves its slot idle until then (for comparison).
    pub cpu_lend_after_encode: bool,
    /// Deliver results a second time each update, at the start of `PostUpdate` (the default):
    /// a result that a CPU worker or the readback finishes while the update runs reaches its
    /// entity before the frame is extracted, so the frame rendered next shows it, instead of
    /// waiting for the next update's `PreUpdate` (a whole frame later). `false`: results arrive
    /// only in `PreUpdate` (for comparison, or for an app that wants every result before its
    /// `Update` systems and none after).
    pub late_delivery: bool,
    /// Submit each frame's DNN work ahead of the scene's passes (the default): the GPU runs it
    /// first and its outputs are read back as soon as it is done, so a result reaches the world
    /// one frame after its last chunk even while the scene's GPU time fills most of the period.
    /// `false` records it after the scene in the frame's own submission, whose buffers map only
    /// once the whole frame has finished (for comparison).
    pub dnn_work_first: bool,
    /// Free a DNN for its next inference as soon as its outputs are read back (the default),
    /// not when the frame's GPU timestamps come back after the scene: a DNN asked every frame
    /// then runs every frame instead of every other one. `false`: the earlier behaviour.
    pub free_at_readback: bool,
    /// The plugin's background work (compilation, profiling, the convolution cache's
    /// calibration, the f16 guard's checks) waits for the GPU without holding wgpu's device locks
    /// (the default; [`heimdall_gpu::GpuContext::shared_device`]). `false`: wgpu's blocking poll,
    /// which holds the lock every `Queue::submit` needs until the GPU is idle, so the app's frames
    /// wait behind it while models start (for comparison). Start-up only (the GPU context).
    pub nonblocking_gpu_waits: bool,
    /// Decode GPU results on two decode threads (the default; one DNN's results in the order
    /// they were read), so the readback thread only reads and one DNN's long decode (PP-OCR's
    /// text boxes, 3 ms) does not delay the results read after it. `false`: decode on the
    /// readback thread, one result after another (for comparison). Start-up only (the decode
    /// threads).
    pub parallel_decode: bool,
    /// The most GPU time, ms, of the plugin's background runs (each model's profile and
    /// convolution cache calibration at start-up) submitted before it waits for them
    /// ([`heimdall_gpu::GpuContext::background_burst_ms`]; default
    /// [`heimdall_gpu::context::DEFAULT_BACKGROUND_BURST_MS`], 1 ms). Each wait also waits for
    /// the frames queued before it, so a larger burst makes the models ready sooner and delays
    /// the frames queued behind it more; 0: one run per wait. Start-up only (the GPU context).
    pub background_burst_ms: f64,
    /// Where to write the coordinator's Chrome trace on exit (also written by
    /// `overlay::OverlayPlugin`'s key, feature `overlay`).
    pub trace_path: Option<PathBuf>,
}

impl Default for HeimdallSettings {
    fn default() -> Self {
        HeimdallSettings {
            frame_rate: FrameRateTarget::FollowDisplay,
            mode: CoordinationMode::Heimdall,
            policy: SchedulingPolicy::default(),
            cpu_workers: None,
            events_take_all_slots: true,
            margin_ms: 1.0,
            adaptive_margin: false,
            relaxation_ms: 0.5,
            precision: Precision::F16,
            guard: Some(GuardConfig::default()),
            guard_store: None,
            force_cpu: false,
            offload: true,
            placement_rule: PlacementRule::Planner,
            cpu_on_completion: true,
            cpu_lend_after_encode: true,
            late_delivery: true,
            dnn_work_first: true,
            free_at_readback: true,
            nonblocking_gpu_waits: true,
            parallel_decode: true,
            background_burst_ms: heimdall_gpu::context::DEFAULT_BACKGROUND_BURST_MS,
            trace_path: None,
        }
    }
}

impl HeimdallSettings {
    /// The fields that only apply at start-up (and when a lost render device is replaced):
    /// they shape the threads, the GPU context and the backend the plugin builds once. A
    /// change at run time is logged as a warning and not applied.
    pub const STARTUP_ONLY: [&'static str; 5] = [
        "cpu_workers",
        "force_cpu",
        "nonblocking_gpu_waits",
        "parallel_decode",
        "background_burst_ms",
    ];

    /// The fields of [`HeimdallSettings::STARTUP_ONLY`] that differ between `self` and `other`.
    pub fn startup_only_changes(&self, other: &HeimdallSettings) -> Vec<&'static str> {
        let differs = [
            self.cpu_workers != other.cpu_workers,
            self.force_cpu != other.force_cpu,
            self.nonblocking_gpu_waits != other.nonblocking_gpu_waits,
            self.parallel_decode != other.parallel_decode,
            self.background_burst_ms.to_bits() != other.background_burst_ms.to_bits(),
        ];
        Self::STARTUP_ONLY
            .into_iter()
            .zip(differs)
            .filter_map(|(name, d)| d.then_some(name))
            .collect()
    }

    /// `self` with the [`HeimdallSettings::STARTUP_ONLY`] fields of `running`.
    pub fn keeping_startup_fields_of(mut self, running: &HeimdallSettings) -> HeimdallSettings {
        self.cpu_workers = running.cpu_workers;
        self.force_cpu = running.force_cpu;
        self.nonblocking_gpu_waits = running.nonblocking_gpu_waits;
        self.parallel_decode = running.parallel_decode;
        self.background_burst_ms = running.background_burst_ms;
        self
    }

    /// The policy the coordinator runs in this mode: [`HeimdallSettings::policy`] in the
    /// `Heimdall` mode, the baselines' own policies in the others.
    pub fn coordinator_policy(&self) -> SchedulingPolicy {
        match self.mode {
            CoordinationMode::Heimdall => self.policy.clone(),
            CoordinationMode::Fifo => SchedulingPolicy::fifo(),
            CoordinationMode::Layers(k) => SchedulingPolicy::layers_per_frame(k),
        }
    }

    /// The name of the policy the coordinator runs in this mode (as reports show it).
    pub fn policy_name(&self) -> String {
        match self.mode {
            CoordinationMode::Heimdall => self.policy.name().to_string(),
            CoordinationMode::Fifo => "fifo".into(),
            CoordinationMode::Layers(k) => format!("layers:{k}"),
        }
    }

    /// The CPU slots the coordinator plans with and the worker pool counts:
    /// [`HeimdallSettings::cpu_workers`] when set, else [`auto_cpu_slots`] of the cores this
    /// process may run on.
    pub fn cpu_slots(&self) -> usize {
        match self.cpu_workers {
            Some(n) => n.max(1),
            None => auto_cpu_slots(
                std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
            ),
        }
    }

    /// The frame rate in Hz, given the display's rate when known.
    pub fn frame_rate_hz(&self, display_hz: Option<f64>) -> f64 {
        match self.frame_rate {
            FrameRateTarget::Fixed(f) if f > 0.0 => f,
            _ => display_hz.filter(|f| *f > 1.0).unwrap_or(60.0),
        }
    }
}

/// Cores the CPU slots leave to the app's own threads: Bevy's main thread, its render thread, and
/// the plugin's readback thread with its decode threads, as the partial load they are. Measured
/// on the H200 host under `taskset -c 0-3` (docs/measurements/contention/): the whole process
/// kept 1.95 cores busy with one slot always busy, and 1.3 cores with every DNN on the GPU, so
/// these threads take 1.0–1.3 cores together; two cores cover them (three, the rule before,
/// left one slot of four cores and starved the DNNs while a core idled).
pub const RESERVED_CORES: usize = 2;

/// The CPU slots of a process that may run on `cores` cores
/// (`std::thread::available_parallelism`, which honours `taskset` and cgroup quotas): the cores
/// left after [`RESERVED_CORES`], at least 1. A 16-core host gets 14, a process limited to 4
/// cores (a phone's big cores) 2.
pub fn auto_cpu_slots(cores: usize) -> usize {
    cores.saturating_sub(RESERVED_CORES).max(1)
}

/// An opt-in helper: Bevy's default `RenderPlugin` with one change, wgpu's validation of
/// indirect dispatches off ([`render_plugin_from`] of `RenderPlugin::default()`).
///
/// `DefaultPlugins.set(heimdall_bevy::render_plugin())` *replaces* the `RenderPlugin` of
/// `DefaultPlugins` (Bevy's default one): an app that configures its own `RenderPlugin`
/// (backends, features, limits, a device it made) passes that one through
/// [`render_plugin_from`] instead, which changes nothing else. Without either, the plugin
/// works as well, with the validation pass on (each cached convolution dispatch then costs a
/// little more; see [`render_plugin_from`]).
pub fn render_plugin() -> bevy::render::RenderPlugin {
    render_plugin_from(bevy::render::RenderPlugin::default())
}

/// `plugin` with wgpu's validation of indirect dispatches off (unless
/// `WGPU_VALIDATION_INDIRECT_CALL` is set, and kept on Windows, where DX12 needs the validation
/// pass to report `num_workgroups`); everything else of `plugin` is kept as the app set it:
///
/// ```no_run
/// use bevy::prelude::*;
/// use bevy::render::RenderPlugin;
/// use bevy::render::settings::{Backends, WgpuSettings};
///
/// let mine = RenderPlugin {
///     render_creation: WgpuSettings { backends: Some(Backends::VULKAN), ..default() }.into(),
///     ..default()
/// };
/// App::new().add_plugins(DefaultPlugins.set(heimdall_bevy::render_plugin_from(mine)));
/// ```
///
/// Exactly what changes: `instance_flags` of a `RenderCreation::Automatic` creation lose
/// `wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL`. A `RenderCreation::Manual` creation (a
/// device the app made) is returned as it is. wgpu validates each indirect dispatch with a
/// compute pass of its own; without it, a cached convolution ([`crate::Dnn::with_conv_cache`])
/// launches only the work groups it must compute (on an H100, face detection on a still scene:
/// 0.138 ms instead of 0.175 ms; uncached 0.258 ms). The plugin reads the flags back from the
/// `RenderPlugin` it finds.
pub fn render_plugin_from(mut plugin: bevy::render::RenderPlugin) -> bevy::render::RenderPlugin {
    use bevy::render::settings::RenderCreation;
    if let RenderCreation::Automatic(wgpu) = &mut plugin.render_creation
        && !cfg!(target_os = "windows")
        && std::env::var_os("WGPU_VALIDATION_INDIRECT_CALL").is_none()
    {
        wgpu.instance_flags
            .remove(wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL);
    }
    plugin
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_name_round_trip() {
        for s in ["heimdall", "fifo", "layers:3"] {
            assert_eq!(CoordinationMode::parse(s).unwrap().name(), s);
        }
        assert_eq!(CoordinationMode::parse("layers:0"), None);
        assert_eq!(CoordinationMode::parse("nope"), None);
    }

    #[test]
    fn cpu_slots_are_the_cores_left_to_the_app_or_the_setting() {
        assert_eq!(auto_cpu_slots(16), 14);
        assert_eq!(auto_cpu_slots(4), 2);
        assert_eq!(auto_cpu_slots(3), 1);
        assert_eq!(auto_cpu_slots(2), 1);
        assert_eq!(auto_cpu_slots(0), 1);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(
            HeimdallSettings::default().cpu_slots(),
            auto_cpu_slots(cores)
        );
        let set = |n| HeimdallSettings {
            cpu_workers: Some(n),
            ..Default::default()
        };
        assert_eq!(set(6).cpu_slots(), 6);
        assert_eq!(set(0).cpu_slots(), 1, "at least one slot");
    }

    /// `render_plugin_from` keeps what the app set and only drops the indirect validation.
    #[test]
    fn render_plugin_from_keeps_the_apps_render_settings() {
        use bevy::render::RenderPlugin;
        use bevy::render::settings::{Backends, RenderCreation, WgpuSettings};
        let mine = RenderPlugin {
            render_creation: WgpuSettings {
                backends: Some(Backends::VULKAN),
                features: wgpu::Features::TIMESTAMP_QUERY,
                instance_flags: wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL
                    | wgpu::InstanceFlags::DEBUG,
                ..default()
            }
            .into(),
            synchronous_pipeline_compilation: true,
            ..default()
        };
        let out = render_plugin_from(mine);
        assert!(out.synchronous_pipeline_compilation);
        let RenderCreation::Automatic(w) = &out.render_creation else {
            panic!("the creation changed kind");
        };
        assert_eq!(w.backends, Some(Backends::VULKAN));
        assert_eq!(w.features, wgpu::Features::TIMESTAMP_QUERY);
        assert!(w.instance_flags.contains(wgpu::InstanceFlags::DEBUG));
        let dropped = !cfg!(target_os = "windows")
            && std::env::var_os("WGPU_VALIDATION_INDIRECT_CALL").is_none();
        assert_eq!(
            w.instance_flags
                .contains(wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL),
            !dropped
        );
    }

    /// The start-up-only fields are found and kept; the others follow the new value.
    #[test]
    fn startup_only_fields_are_found_and_kept() {
        let running = HeimdallSettings::default();
        let edited = HeimdallSettings {
            force_cpu: true,
            cpu_workers: Some(7),
            margin_ms: 4.0,
            ..default()
        };
        assert_eq!(
            edited.startup_only_changes(&running),
            vec!["cpu_workers", "force_cpu"]
        );
        let applied = edited.keeping_startup_fields_of(&running);
        assert!(!applied.force_cpu);
        assert_eq!(applied.cpu_workers, None);
        assert_eq!(applied.margin_ms, 4.0);
    }
}
