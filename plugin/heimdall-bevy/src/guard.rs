//! The f16 accuracy guard of the plugin (`heimdall_gpu::guard` in a Bevy app).
//!
//! The plugin compiles GPU DNNs in f16 storage by default ([`HeimdallSettings::precision`]),
//! which most models take with a margin and some cannot (pose_landmark_full misses the f16
//! bound by 10–30×). With [`HeimdallSettings::guard`] on (the default), a GPU DNN in reduced
//! precision goes through these stages, each one shown by its [`GuardStatus`]:
//!
//! 1. **Stored decision** ([`HeimdallSettings::guard_store`]): if a decision for this model on
//!    this adapter, precision and bound is stored, the model is compiled with it at once
//!    ([`GuardStatus::Decided`] with `reused`), and nothing below happens.
//! 2. **f32 until decided** ([`GuardStatus::Pending`]): the model is compiled in f32 (without
//!    the convolution cache) and runs like any DNN, so no result it delivers depends on
//!    f16; its results are f32 results.
//! 3. **Calibration input** ([`Calibration`]): by default the DNN's first real input, the
//!    first camera frame with content (not uniform) it runs on, after its own preprocessing
//!    (its crop or region of interest, the resize, its
//!    [`Normalization`](heimdall_vision::image::Normalization)), made again by the same GPU
//!    kernel into a buffer of its own and read back
//!    (`heimdall_gpu::preprocess::preprocess_to_host`); or an image the app gives.
//! 4. **The check**, on the compile task (a background thread; the render and main threads
//!    never wait for it): the CPU backend's f32 outputs on that input, then
//!    `heimdall_gpu::guard::compile_guarded`: the model compiled as asked and run once; if an
//!    output misses its bound, the sensitivity search finds the op ranges to run in f32. The
//!    decision is logged once (`GuardDecision::log_line`) and written to the store if one is
//!    set. The model is then compiled for the frame path with the decided f32 ranges
//!    (`GpuOptions::overrides`), with the DNN's convolution cache, warmed and profiled.
//! 5. **The swap** ([`GuardStatus::Decided`]): once the DNN is idle (no inference of the f32
//!    model in flight), the guarded model replaces the f32 one; the coordinator gets its
//!    profile as for a model compiled anew.
//!
//! If the check fails (the CPU reference cannot run the model, a compile error), the DNN keeps
//! its f32 model ([`GuardStatus::Failed`]). An f32 DNN, a DNN on the CPU backend, or any DNN
//! with the guard off is [`GuardStatus::Off`].
//!
//! [`HeimdallSettings::precision`]: crate::HeimdallSettings::precision
//! [`HeimdallSettings::guard`]: crate::HeimdallSettings::guard
//! [`HeimdallSettings::guard_store`]: crate::HeimdallSettings::guard_store

use std::sync::Arc;

use bevy::prelude::*;
pub use heimdall_gpu::guard::{GuardConfig, GuardDecision};

/// The calibration input of a DNN's accuracy guard ([`crate::Dnn::with_calibration`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Calibration {
    /// The DNN's first real input: the first camera frame it runs on, after its own crop (or
    /// region of interest), resize and normalisation (the default). Uniform frames (the black
    /// or grey frames a webcam gives while it starts) are skipped: the first frame with content.
    #[default]
    FirstFrame,
    /// An image (e.g. `assets.load("images/person.png")`), preprocessed as the model's input:
    /// the DNN's normalisation, and its crop for [`crate::dnn::InputCrop::Full`] and
    /// [`crate::dnn::InputCrop::Letterbox`]; for [`crate::dnn::InputCrop::Roi`] the whole image
    /// (give one cropped as the region would be). Use one like the frames the model will see
    /// (the guard bounds the error on this input, not on every input). The guard waits for
    /// the image to load; one that fails to load, or is not 8-bit RGBA-convertible, fails the
    /// guard ([`GuardStatus::Failed`]: the DNN stays in f32).
    Image(Handle<Image>),
}

/// Where a DNN's accuracy guard stands (a component on every [`crate::Dnn`], kept by the
/// plugin; see the [module documentation](self)).
#[derive(Component, Clone, Debug, Default, PartialEq, Reflect)]
#[reflect(opaque)]
#[reflect(Component, Debug, PartialEq, Default, Clone)]
pub enum GuardStatus {
    /// No guard: the DNN runs in f32 as asked, on the CPU backend, or the guard is off (also
    /// the state before the model is compiled).
    #[default]
    Off,
    /// The model runs in f32 until the guard has decided; the guard waits for its calibration
    /// input (the DNN's first inference, or the app's image). A DNN that is never asked to run
    /// (a second hand's landmarks while one hand is in view) stays here.
    Pending,
    /// The guard is checking the model on its calibration input (on the compile task); the model
    /// runs in f32 meanwhile.
    Checking,
    /// The guarded model runs.
    Decided(GuardOutcome),
    /// The guard could not check the model (why); the DNN keeps running in f32.
    Failed(String),
}

/// A guard's decision as a DNN runs it.
#[derive(Clone, Debug, PartialEq)]
pub struct GuardOutcome {
    /// The decision: the op ranges in f32, the errors before and after, the bounds.
    pub decision: Arc<GuardDecision>,
    /// Taken from [`crate::HeimdallSettings::guard_store`] (no check this run: its errors are
    /// those measured when it was stored).
    pub reused: bool,
}

impl GuardStatus {
    /// The decision, once decided.
    pub fn decision(&self) -> Option<&GuardDecision> {
        match self {
            GuardStatus::Decided(o) => Some(&o.decision),
            _ => None,
        }
    }

    /// `off`, `pending`, `checking`, `decided` or `failed` (as in `stats.json`).
    pub fn state_name(&self) -> &'static str {
        match self {
            GuardStatus::Off => "off",
            GuardStatus::Pending => "pending",
            GuardStatus::Checking => "checking",
            GuardStatus::Decided(_) => "decided",
            GuardStatus::Failed(_) => "failed",
        }
    }
}
