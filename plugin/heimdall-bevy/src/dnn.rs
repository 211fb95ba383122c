//! How an app describes a DNN (the [`Dnn`] component) and what it gets back: the typed
//! [`DnnStatus`], the latest raw [`DnnOutput`], and the [`DnnResult`] / [`DnnFailed`] entity
//! events, every result stamped with the camera frame it was computed from.

use std::sync::Arc;
use std::time::Duration;

use bevy::prelude::*;
use heimdall_coordinator::UtilityParams;
use heimdall_ir::conv_cache::ConvCacheConfig;
use heimdall_vision::image::{Crop, Normalization};

use crate::asset::DnnModel;
use crate::decoder::{DecoderHandle, DnnDecoder};
use crate::guard::{Calibration, GuardStatus};

/// Which part of the camera frame feeds the model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum InputCrop {
    /// The whole frame, stretched to the model's input size.
    Full,
    /// The whole frame, scaled to fit with its aspect kept and padded with zeros (MediaPipe's
    /// letterbox, as its detectors use).
    Letterbox,
    /// The [`RegionOfInterest`] on another entity (typically set by a detector's decoder, e.g.
    /// the face ROI a face-landmark model reads). Not requested while that entity has none.
    Roi(Entity),
}

/// A region of a camera frame that another DNN reads through [`InputCrop::Roi`]: MediaPipe's
/// rotated ROI and the border of the crop.
#[derive(Component, Clone, Copy, Debug, PartialEq, Reflect)]
#[reflect(opaque)]
#[reflect(Component, Debug, PartialEq, Clone)]
pub struct RegionOfInterest {
    /// The camera frame it was found in.
    pub frame_index: u64,
    /// The crop (model input uv to frame uv, and the border).
    pub crop: Crop,
}

/// The convolution cache of a DNN on the GPU (DeepMon, seed 004 §6.3): the camera frame is cut
/// into a grid of blocks, and where a block's colour histogram and cell means did not change
/// since the last run, the first layers keep last run's outputs instead of recomputing them.
///
/// It pays on a still camera (a desk, a room: most blocks unchanged between frames) with a
/// full-frame or letterbox crop; it cannot hit on a crop that moves every frame (a tracked
/// region of interest: the plugin invalidates the cache whenever the crop changes). It costs
/// persistent GPU memory (the cached layers' activations are kept between runs, and a second,
/// plain memory plan for the runs without it) and a little work per run (the histograms). When
/// the cache is used, the plugin calibrates it as the model compiles and switches it off by
/// itself while the scene moves too much for it to pay (probing every 30 runs); while off, the
/// model runs its plain memory plan, as without the cache. Add the plugin after
/// `DefaultPlugins.set(crate::render_plugin())` so that skipped work launches nothing (about half
/// the GPU time of a still scene on an H100 instead of a third). CPU inferences never use it.
///
/// **The default is [`ConvCache::Auto`]**: the cache where it can pay, nothing where it cannot.
/// A DNN with an [`InputCrop::Roi`] never gets it. Any other GPU DNN is compiled with it and
/// calibrated (a plain run, a run that recomputes everything and one that reuses everything:
/// the median of 9 of each on a GPU, a few milliseconds; the fastest of 2 of each on a CPU
/// device such as lavapipe, about four runs of the model), and the calibration decides
/// ([`heimdall_gpu::conv_cache::CacheVerdict`]): the cache is kept when a still scene, with
/// the expiry it allows, saves at least 10 % of a plain run (a model whose profiled full run
/// already takes as long as the expiry is dropped without a calibration); otherwise the plugin
/// compiles the model again without it (no kept memory, no histograms) and says why once, in an
/// info line and in `stats.json` (`models.<name>.conv_cache.decision`). What the default costs: that
/// calibration, a second compile where the cache is dropped, the kept memory where it is kept
/// (palm detection: 23 MB of kept activations and 4.2 MB of plain plan), and while the scene
/// moves a full run now and then to probe.
///
/// The decision is made once, as the model compiles, from the crop, the frame rate and the
/// request period then: the calibration is what the automatic switch needs anyway, so one
/// measurement serves both. Calibrating in the background while the model already ran uncached
/// would compete with the frame on the same queue (on a CPU device, on the same cores) and keep
/// two compiled models; deciding from the first real runs would need a still scene to see what
/// a run that reuses everything costs, which an app may not show for a long time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ConvCache {
    /// Every run computes every layer, and the model keeps no cache memory.
    Off,
    /// The cache where the calibration says it pays (see above), with these settings;
    /// `range` is replaced by what the DNN's [`Normalization`] makes of pixels. Never on a
    /// region of interest. The default, with DeepMon's settings ([`ConvCacheConfig::default`]).
    Auto(ConvCacheConfig),
    /// The cache whatever the calibration says (forced; the automatic switch still turns it off
    /// while the scene moves), with these settings; `range` is replaced by what the DNN's
    /// [`Normalization`] makes of pixels (the plugin fills it in). On a region of interest it
    /// is invalidated at every run, so it never hits there.
    On(ConvCacheConfig),
}

impl Default for ConvCache {
    /// [`ConvCache::auto`]. (`Auto` carries its settings, so this is not a `#[default]` unit
    /// variant: an app may tune the expiry, the grid or the thresholds and keep the decision.)
    fn default() -> Self {
        ConvCache::auto()
    }
}

impl ConvCache {
    /// On, with DeepMon's settings ([`ConvCacheConfig::default`]).
    pub fn on() -> Self {
        ConvCache::On(ConvCacheConfig::default())
    }

    /// Where it pays (the default), with DeepMon's settings ([`ConvCacheConfig::default`]).
    pub fn auto() -> Self {
        ConvCache::Auto(ConvCacheConfig::default())
    }

    /// Whether it is forced on ([`ConvCache::On`]).
    pub fn is_on(&self) -> bool {
        matches!(self, ConvCache::On(_))
    }

    /// Its settings (`None` when off).
    pub fn config(&self) -> Option<&ConvCacheConfig> {
        match self {
            ConvCache::Off => None,
            ConvCache::Auto(c) | ConvCache::On(c) => Some(c),
        }
    }
}

/// The backend's configuration from `settings` for input values normalised with `norm` from
/// pixels of `channels` channels: the histograms span what `norm` makes of pixels 0 and 255 on
/// those channels (their min and max).
pub(crate) fn cache_config(
    settings: &ConvCacheConfig,
    norm: &Normalization,
    channels: usize,
) -> ConvCacheConfig {
    let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
    for c in 0..channels.clamp(1, 4) {
        for v in [norm.apply(c, 0), norm.apply(c, 255)] {
            lo = lo.min(v);
            hi = hi.max(v);
        }
    }
    if !(lo.is_finite() && hi.is_finite() && lo < hi) {
        (lo, hi) = (0.0, 1.0);
    }
    ConvCacheConfig {
        range: [lo, hi],
        ..*settings
    }
}

/// When the DNN runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RequestMode {
    /// A new inference as soon as the previous result arrived.
    Continuous,
    /// Every `period` on average (requests fall on frames, at most one in flight; 100 ms at
    /// 60 Hz alternates 6 and 7 frames to keep 10 Hz).
    Every(Duration),
    /// Only when a [`RequestInference`] message names this entity (event-driven DNNs).
    OnDemand,
}

/// A DNN of the app: put this on an entity. It gets a [`DnnStatus`], then a [`DnnOutput`] and
/// its decoder's components with every result.
///
/// Reflected as an opaque value (its model handle, decoder and engine types are not
/// reflectable field by field).
#[derive(Component, Clone, Debug, Reflect)]
#[reflect(opaque)]
#[reflect(Component, Debug, Clone)]
#[require(DnnStatus, DnnPlacement, LastRequest, GuardStatus)]
pub struct Dnn {
    /// The model (`asset_server.load("models/x.tflite")`).
    pub model: Handle<DnnModel>,
    /// The entity holding the [`crate::camera::CameraSource`] it reads.
    pub source: Entity,
    /// Crop of the frame.
    pub crop: InputCrop,
    /// Pixel normalisation.
    pub normalization: Normalization,
    /// When it runs.
    pub request: RequestMode,
    /// Relative deadline of one inference.
    pub deadline: Option<Duration>,
    /// Utility parameters `L0`, `beta`, `gamma` (Heimdall sec. 6.2).
    pub utility: UtilityParams,
    /// Post-processing on a CPU worker (none: raw outputs only).
    pub decoder: Option<DecoderHandle>,
    /// The convolution cache on the GPU ([`ConvCache`]; [`ConvCache::Auto`] by default: where
    /// it pays). Changing it while the DNN runs recompiles the model, as a new model would.
    pub conv_cache: ConvCache,
    /// The calibration input of the accuracy guard in reduced precision ([`Calibration`]; the
    /// DNN's first real input by default; see [`crate::guard`]).
    pub calibration: Calibration,
}

impl Dnn {
    /// A continuous DNN on the whole frame with `[0, 1]` pixels, no deadline, raw outputs and
    /// the convolution cache where it pays ([`ConvCache::Auto`]).
    pub fn new(model: Handle<DnnModel>, source: Entity) -> Self {
        Dnn {
            model,
            source,
            crop: InputCrop::Full,
            normalization: Normalization::ZERO_TO_ONE,
            request: RequestMode::Continuous,
            deadline: None,
            utility: UtilityParams::default(),
            decoder: None,
            conv_cache: ConvCache::default(),
            calibration: Calibration::FirstFrame,
        }
    }

    /// Sets the crop.
    pub fn with_crop(mut self, crop: InputCrop) -> Self {
        self.crop = crop;
        self
    }

    /// Sets the normalisation.
    pub fn with_normalization(mut self, n: Normalization) -> Self {
        self.normalization = n;
        self
    }

    /// Sets the request mode.
    pub fn with_request(mut self, r: RequestMode) -> Self {
        self.request = r;
        self
    }

    /// Sets the deadline.
    pub fn with_deadline(mut self, d: Duration) -> Self {
        self.deadline = Some(d);
        self
    }

    /// Sets the utility parameters.
    pub fn with_utility(mut self, u: UtilityParams) -> Self {
        self.utility = u;
        self
    }

    /// Sets the convolution cache (the default is [`ConvCache::Auto`]; `ConvCache::Off` for a
    /// DNN whose camera always moves, `ConvCache::on()` to force it; see [`ConvCache`]).
    pub fn with_conv_cache(mut self, c: ConvCache) -> Self {
        self.conv_cache = c;
        self
    }

    /// Sets the accuracy guard's calibration input (the default is the DNN's first real input,
    /// [`Calibration::FirstFrame`]): e.g. `Calibration::Image(assets.load("images/x.png"))`.
    /// The guard runs once per model compile (see [`crate::guard`]).
    pub fn with_calibration(mut self, c: Calibration) -> Self {
        self.calibration = c;
        self
    }

    /// Sets the decoder.
    pub fn with_decoder(mut self, d: impl DnnDecoder) -> Self {
        self.decoder = Some(DecoderHandle::new(d));
        self
    }
}

/// When a DNN was last requested (required by [`Dnn`]; kept by the plugin).
#[derive(Component, Clone, Default, Debug, Reflect)]
#[reflect(Component, Debug, Default, Clone)]
pub struct LastRequest {
    pub(crate) at: Option<Duration>,
}

/// Asks for one inference of an [`RequestMode::OnDemand`] DNN.
#[derive(Message, Clone, Copy, Debug)]
pub struct RequestInference(pub Entity);

/// Where an inference ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Reflect)]
#[reflect(Debug, PartialEq, Clone)]
pub enum Backend {
    /// On the GPU, inside the frames' command encoders.
    Gpu,
    /// On a CPU worker.
    Cpu,
}

/// Why a DNN cannot run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Reflect)]
#[reflect(Debug, PartialEq, Clone)]
pub enum DnnError {
    /// The model file is missing, unreadable or not a model heimdall can import.
    #[error("loading the model: {0}")]
    Load(String),
    /// The model's input cannot take camera frames.
    #[error("the model cannot take camera frames: {0}")]
    Input(String),
    /// Compiling for the backend failed.
    #[error("compiling: {0}")]
    Compile(String),
    /// An inference failed on the device or a worker.
    #[error("running: {0}")]
    Run(String),
    /// Its decoder, CPU work or readback panicked (caught: the app and the other DNNs go on;
    /// [`crate::faults::RestartDnn`] compiles it again).
    #[error("{0}")]
    Panicked(String),
}

/// Where a DNN stands (on its entity, kept up to date by the plugin). Where a ready DNN runs
/// and at what rate is its [`DnnPlacement`].
#[derive(Component, Clone, Debug, Default, PartialEq, Eq, Reflect)]
#[reflect(Component, Debug, PartialEq, Default, Clone)]
pub enum DnnStatus {
    /// The model asset is loading.
    #[default]
    Loading,
    /// The model is being compiled and profiled for the backend.
    Compiling,
    /// Ready; inferences run on this backend (the CPU when the GPU cannot, or is forced off).
    Ready(Backend),
    /// It cannot run (the app keeps running; see [`DnnFailed`]).
    Failed(DnnError),
}

impl DnnStatus {
    /// Whether it is loading or compiling.
    pub fn is_pending(&self) -> bool {
        matches!(self, DnnStatus::Loading | DnnStatus::Compiling)
    }
}

/// Why a DNN runs on the CPU backend although the app has a GPU (on its entity from when it
/// is ready): its kernels need more than the device allows, e.g. more storage buffers per
/// shader stage than a phone's 4 (`heimdall_gpu::check_limits`, `docs/mobile-limits.md`). Its
/// status is `Ready(Backend::Cpu)`; `stats.json` has the reason as
/// `models.<name>.cpu_fallback`.
#[derive(Component, Clone, Debug, PartialEq, Eq, Reflect)]
#[reflect(Component, Debug, PartialEq, Clone)]
pub struct CpuFallback(pub String);

/// The latest result of a DNN (a component on its entity; also carried by [`DnnResult`]).
#[derive(Component, Clone, Debug, Reflect)]
#[reflect(opaque)]
#[reflect(Component, Debug, Clone)]
pub struct DnnOutput {
    /// Index of the camera frame the input came from.
    pub frame_index: u64,
    /// When that frame was captured (time since the plugin's clock started).
    pub capture_time: Duration,
    /// Capture to result available in the main world.
    pub latency: Duration,
    /// Raw outputs (NHWC f32, in the model's output order).
    pub tensors: Arc<Vec<Vec<f32>>>,
    /// Where it ran.
    pub backend: Backend,
    /// The crop that was used (model input uv to frame uv).
    pub crop: Crop,
    /// For an inference the GPU started and the coordinator then moved to the CPU: the step
    /// from which the CPU went on with the GPU's activations (`backend` is then `Cpu`). `None`
    /// when one processor ran it all (an offloaded inference restarted from its input
    /// included).
    pub resumed_from_step: Option<usize>,
}

/// A finished inference, triggered on the DNN's entity once its [`DnnOutput`] and its
/// decoder's components are in place (observe it with `On<DnnResult>`).
#[derive(EntityEvent, Clone, Debug)]
pub struct DnnResult {
    /// The DNN's entity.
    pub entity: Entity,
    /// The result.
    pub output: DnnOutput,
}

/// Where Heimdall's coordinator runs a DNN and at what rate (a component on its entity, kept up
/// to date by the plugin once the DNN is ready; `stats.json` has the same per DNN, see
/// [`crate::HeimdallStats::to_json`]).
///
/// The coordinator places every DNN on the GPU's share of the frame or on the CPU slots
/// ([`crate::HeimdallSettings::cpu_workers`]), from their measured costs on both; when neither
/// has room for every DNN at its requested rate, it grants some a lower rate (never below a
/// tenth of the request while another DNN runs above its own) and says so in
/// [`DnnPlacement::shortfall`]. An app can show that, or ask less of the DNN.
#[derive(Component, Clone, Debug, Default, PartialEq, Reflect)]
#[reflect(Component, Debug, PartialEq, Default, Clone)]
pub struct DnnPlacement {
    /// The processor its new inferences go to (`None` until the coordinator knows it; always
    /// the GPU in the `fifo` and `layers` modes, which do not place, except the CPU-only
    /// steps).
    pub backend: Option<Backend>,
    /// The CPU threads (slots) an inference of it occupies on the CPU: its CPU model's threads,
    /// chosen from its one-thread time when it compiled.
    pub cpu_threads: usize,
    /// The rate the app asks for, Hz (from the interval between its requests; `None` for an
    /// on-demand DNN or before the coordinator measured it).
    pub requested_rate_hz: Option<f64>,
    /// The rate the coordinator grants, Hz: the requested rate unless it runs short (then
    /// [`DnnPlacement::shortfall`] says why).
    pub granted_rate_hz: Option<f64>,
    /// The coordinator's expected latency of an inference where it runs, ms.
    pub expected_latency_ms: Option<f64>,
    /// Set while it is granted less than its requested rate: how much and why.
    pub shortfall: Option<RateShortfall>,
}

/// A DNN granted less than its requested rate ([`DnnPlacement::shortfall`]).
#[derive(Clone, Debug, PartialEq, Reflect)]
#[reflect(Debug, PartialEq, Clone)]
pub struct RateShortfall {
    /// What the app asks for, Hz.
    pub requested_hz: f64,
    /// What the coordinator grants, Hz.
    pub granted_hz: f64,
    /// Why, in words (e.g. that the GPU has no budget and the CPU is full).
    pub reason: String,
}

/// A DNN that cannot run, triggered on its entity when its [`DnnStatus`] becomes `Failed`.
#[derive(EntityEvent, Clone, Debug)]
pub struct DnnFailed {
    /// The DNN's entity.
    pub entity: Entity,
    /// Why.
    pub error: DnnError,
}
