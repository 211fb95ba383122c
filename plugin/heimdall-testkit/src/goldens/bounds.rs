//! The runtimes of the golden suite, their bounds, and the explicit list of known exceptions.
//!
//! Every runtime compares with one metric and one bound per model format ([`Runtime::bound`]);
//! a model may get a different bound on a runtime only through an entry of [`EXCEPTIONS`], with
//! its reason and a bound that still fails on a regression. The bounds are those the per-backend
//! suites had before they were merged (CPU: `plugin/heimdall/tests/goldens.rs` and
//! `onnx_goldens.rs`; GPU: `plugin/heimdall-gpu/tests/models.rs` and `onnx_models.rs`).
//!
//! [`Runtime::bound`]: RuntimeKind::bound

use std::fmt;

/// A runtime the suite runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuntimeKind {
    /// The CPU backend (`heimdall-cpu`), two threads.
    Cpu,
    /// The GPU backend in f32.
    GpuF32,
    /// The GPU backend with f16 storage (native `shader-f16` where the device has it, else
    /// packed).
    GpuF16,
    /// The GPU backend with f16 storage packed in `u32` (no `shader-f16` needed).
    GpuPackedF16,
    /// The GPU backend in f32 on a device held to a phone's limits and features
    /// (`heimdall_gpu::DeviceProfile::Mobile`, see `docs/mobile-limits.md`).
    GpuMobileF32,
    /// The GPU backend with f16 storage on a device held to a phone's limits and features (no
    /// `shader-f16`: packed).
    GpuMobileF16,
}

impl fmt::Display for RuntimeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RuntimeKind::Cpu => "cpu",
            RuntimeKind::GpuF32 => "gpu-f32",
            RuntimeKind::GpuF16 => "gpu-f16",
            RuntimeKind::GpuPackedF16 => "gpu-packed-f16",
            RuntimeKind::GpuMobileF32 => "gpu-mobile-f32",
            RuntimeKind::GpuMobileF16 => "gpu-mobile-f16",
        })
    }
}

/// The file format of a golden model (picks the default bound).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A MediaPipe `.tflite` model; goldens from the TFLite interpreter
    /// (`scripts/make_goldens.py`), NHWC.
    Tflite,
    /// An `.onnx` model; goldens from ONNX Runtime (`scripts/make_onnx_goldens.py`), NCHW.
    Onnx,
}

/// How an output is compared with its golden.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Metric {
    /// [`crate::rel_l2`].
    RelL2,
    /// [`crate::rel_l2_floored`] with this floor per value (RMS).
    RelL2Floored(f64),
}

impl Metric {
    /// The error of `out` against `reference`.
    pub fn error(self, out: &[f32], reference: &[f32]) -> f64 {
        match self {
            Metric::RelL2 => crate::rel_l2(out, reference),
            Metric::RelL2Floored(floor) => crate::rel_l2_floored(out, reference, floor),
        }
    }
}

/// Floor of the GPU runtimes' metric on the TFLite goldens: some outputs are sigmoid flags of
/// about 1e-4 (see `assets/goldens/README.md`), which f16 storage cannot hold to a relative
/// 1e-2; the denominator is at least 1e-3 per value.
pub const GPU_TFLITE_FLOOR: f64 = 1e-3;

impl RuntimeKind {
    /// The metric and default bound of this runtime on goldens of `format`.
    ///
    /// | runtime | TFLite goldens | ONNX goldens |
    /// |---|---|---|
    /// | cpu | rel-L2 ≤ 1e-4 | rel-L2 ≤ 1e-4 |
    /// | gpu-f32 | floored rel-L2 ≤ 2e-4 | rel-L2 ≤ 1e-3 (lavapipe: ≤ 1.9e-5) |
    /// | gpu-f16, gpu-packed-f16 | floored rel-L2 ≤ 1e-2 | rel-L2 ≤ 1e-2 |
    ///
    /// The mobile runtimes have the bounds of their desktop counterparts.
    pub fn bound(self, format: Format) -> (Metric, f64) {
        use RuntimeKind::*;
        let floored = Metric::RelL2Floored(GPU_TFLITE_FLOOR);
        match (self, format) {
            (Cpu, _) => (Metric::RelL2, 1e-4),
            (GpuF32 | GpuMobileF32, Format::Tflite) => (floored, 2e-4),
            (GpuF32 | GpuMobileF32, Format::Onnx) => (Metric::RelL2, 1e-3),
            (GpuF16 | GpuPackedF16 | GpuMobileF16, Format::Tflite) => (floored, 1e-2),
            (GpuF16 | GpuPackedF16 | GpuMobileF16, Format::Onnx) => (Metric::RelL2, 1e-2),
        }
    }
}

/// What an exception does to a model's check on a runtime.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Allowance {
    /// The output (or every output) is held to this bound instead of the default.
    Bound(f64),
    /// The model is not run on the runtime at all (the reason says why).
    Skip,
}

/// A known exception: a model (by golden id) on some runtimes, an output or all of them, the
/// bound it is held to instead, and why.
#[derive(Clone, Copy, Debug)]
pub struct Exception {
    /// The runtimes it applies to.
    pub runtimes: &'static [RuntimeKind],
    /// The golden id ([`super::GoldenModel::id`]).
    pub model: &'static str,
    /// The output it applies to, or every output.
    pub output: Option<usize>,
    /// The bound instead of the default, or a skip.
    pub allowance: Allowance,
    /// Why, with the measurements.
    pub reason: &'static str,
}

const F16_RUNTIMES: &[RuntimeKind] = &[
    RuntimeKind::GpuF16,
    RuntimeKind::GpuPackedF16,
    RuntimeKind::GpuMobileF16,
];

/// Every known exception. The first entry that matches (runtime, model, output) applies.
pub const EXCEPTIONS: &[Exception] = &[
    Exception {
        runtimes: F16_RUNTIMES,
        model: "pose_landmark_full",
        output: Some(2),
        allowance: Allowance::Bound(2e-1),
        reason: "f16 storage: the segmentation logits (-1710..268) amplify rounding about a \
                 thousand times (TFLite's builtin and XNNPACK f32 kernels already differ by \
                 1.2e-4 there); the CPU backend with f16 storage emulated between ops \
                 (heimdall-gpu tests/f16_storage.rs) misses 1e-2 by itself (1.4e-1 synthetic, \
                 1.6e-2 astronaut) and the GPU's f16 result is as far as that emulation",
    },
    Exception {
        runtimes: F16_RUNTIMES,
        model: "pose_landmark_full",
        output: None,
        allowance: Allowance::Bound(5e-2),
        reason: "f16 storage: ill-conditioned model; rounding the first layer's output alone \
                 costs 5e-2 and keeping any half of the network in f32 still leaves more than \
                 1e-2, so no per-op choice short of f32 nearly everywhere meets 1e-2 (f32 meets \
                 2e-4 on every output)",
    },
    Exception {
        runtimes: F16_RUNTIMES,
        model: "pp_ocrv6_det_small",
        output: None,
        allowance: Allowance::Bound(5e-2),
        reason: "f16 storage: 2.5e-2 on the astronaut (1.8e-3 on the text page): the output is a \
                 probability map near zero almost everywhere on a photograph (RMS 0.09), so the \
                 f16 rounding of the backbone shows against a small norm. Not the ONNX-only \
                 kernels: with only their ops in f16 the error is 2.3e-3, only the convolutions \
                 4.4e-3, everything but the convolutions 1.8e-2 (GpuOptions::overrides)",
    },
];

/// The exception for (runtime, model, output), if any; `output: None` asks for a whole-model
/// skip.
pub fn exception(
    kind: RuntimeKind,
    model: &str,
    output: Option<usize>,
) -> Option<&'static Exception> {
    EXCEPTIONS.iter().find(|e| {
        e.runtimes.contains(&kind)
            && e.model == model
            && match output {
                None => e.allowance == Allowance::Skip,
                Some(o) => e.output.is_none_or(|x| x == o),
            }
    })
}
