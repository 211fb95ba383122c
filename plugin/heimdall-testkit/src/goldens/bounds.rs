//! The runtimes of the golden suite and their bounds.
//!
//! Every runtime compares with one metric and one bound per model format ([`Runtime::bound`]),
//! the same for every model: there is no per-model exception. The f16 runtimes meet theirs
//! through the accuracy guard (`heimdall_gpu::guard`), which keeps in f32 the ops of a model
//! that f16 storage cannot hold to the bound (pose_landmark_full, PP-OCRv6_det_small; see
//! `docs/gpu.md`). The bounds are those the per-backend suites had before they were merged
//! (CPU: `plugin/heimdall/tests/goldens.rs` and `onnx_goldens.rs`; GPU:
//! `plugin/heimdall-gpu/tests/models.rs` and `onnx_models.rs`).
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
    /// (`heimdall_gpu::DeviceProfile::MobileTypical`, see `docs/mobile-limits.md`).
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
