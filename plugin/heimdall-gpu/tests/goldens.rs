//! The golden suite (`heimdall_testkit::goldens`: every MediaPipe TFLite model and every ONNX
//! model against the reference engines' outputs) on the GPU backend, once per storage precision:
//! `gpu_f32`, `gpu_f16` (native `shader-f16` where the device has it, else packed) and
//! `gpu_packed_f16`, and in f32 and f16 again on a second device held to a phone's limits and
//! features (`gpu_mobile_f32`, `gpu_mobile_f16`: `heimdall_gpu::DeviceProfile::Mobile`, see
//! docs/mobile-limits.md). Bounds and known exceptions are the suite's
//! (`heimdall_testkit::goldens::RuntimeKind::bound` and `EXCEPTIONS`). On top of the goldens,
//! every step of every model must be a GPU step (no CPU fallback) and no wgpu error may be
//! raised. Needs a GPU adapter (lavapipe in CI); `HEIMDALL_SKIP_GPU=1` skips.

mod common;

use std::path::Path;

use heimdall::{LoadOptions, LoadedModel, load};
use heimdall_gpu::{GpuModel, GpuOptions, Placement, Precision};
use heimdall_testkit::goldens::{GoldenCase, GoldenModel, Runtime, RuntimeKind};
use heimdall_testkit::npy::Tensor;

/// The GPU backend in one storage precision, on the shared test device.
struct Gpu {
    gpu: &'static common::Gpu,
    precision: Precision,
    kind: RuntimeKind,
}

/// Loads `model` for `case` (its dynamic input sized by the case's input 0).
fn load_case(model: &GoldenModel, path: &Path, case: &GoldenCase) -> Result<LoadedModel, String> {
    let input_shapes = model
        .dynamic_input
        .map(|name| vec![(name.to_string(), case.inputs[0].shape.clone())])
        .unwrap_or_default();
    let options = LoadOptions {
        passes: model.passes,
        input_shapes,
    };
    load(path, options).map_err(|e| e.to_string())
}

impl Gpu {
    fn compile(&self, model: &GoldenModel, loaded: &LoadedModel) -> Result<GpuModel, String> {
        let p = self.precision;
        let m = GpuModel::compile(&self.gpu.ctx, &loaded.graph, GpuOptions::new(p))
            .map_err(|e| format!("compile: {e}"))?;
        let r = m.report();
        println!(
            "{} {p:?} (as {:?}): compile {:.0} ms, {} pipelines, {} dispatches, activations peak {} KiB of {} KiB, weights {} KiB",
            model.id,
            r.precision,
            r.compile_time.as_secs_f64() * 1e3,
            r.pipelines,
            r.dispatches,
            r.peak_bytes / 1024,
            r.total_bytes / 1024,
            r.weight_bytes / 1024
        );
        let cpu_steps = m
            .placement()
            .iter()
            .filter(|s| **s != Placement::Gpu)
            .count();
        if cpu_steps > 0 {
            return Err(format!("{cpu_steps} steps are not GPU steps"));
        }
        Ok(m)
    }
}

impl Runtime for Gpu {
    fn kind(&self) -> RuntimeKind {
        self.kind
    }

    fn run(
        &self,
        model: &GoldenModel,
        path: &Path,
        cases: &[GoldenCase],
    ) -> Result<Vec<Vec<Tensor>>, String> {
        // Compiled once per input shape (the TFLite models' cases share theirs).
        let mut compiled: Option<(Vec<usize>, LoadedModel, GpuModel)> = None;
        let mut results = Vec::new();
        for case in cases {
            let shape = case.inputs[0].shape.clone();
            if compiled.as_ref().is_none_or(|c| c.0 != shape) {
                let loaded = load_case(model, path, case)?;
                let m = self.compile(model, &loaded)?;
                compiled = Some((shape, loaded, m));
            }
            let (_, loaded, m) = compiled.as_ref().expect("compiled above");
            let io = &loaded.io;
            let mut inputs = Vec::new();
            for (i, t) in case.inputs.iter().enumerate() {
                if io.inputs[i].shape != t.shape {
                    return Err(format!(
                        "input {i}: shape {:?}, golden {:?}",
                        io.inputs[i].shape, t.shape
                    ));
                }
                inputs.push(io.inputs[i].to_ir(&t.data));
            }
            let refs: Vec<&[f32]> = inputs.iter().map(Vec::as_slice).collect();
            let start = std::time::Instant::now();
            let out = m.run(&refs).map_err(|e| format!("run: {e}"))?;
            println!(
                "  {}: {:.0} ms run",
                case.name,
                start.elapsed().as_secs_f64() * 1e3
            );
            self.gpu.assert_no_errors();
            let outputs = io.outputs.iter().zip(&out).map(|(o, data)| Tensor {
                shape: o.shape.clone(),
                data: o.from_ir(data),
            });
            results.push(outputs.collect());
        }
        Ok(results)
    }
}

fn runtime(precision: Precision, kind: RuntimeKind) -> Option<Gpu> {
    common::gpu().map(|gpu| Gpu {
        gpu,
        precision,
        kind,
    })
}

fn f32() -> Option<Gpu> {
    runtime(Precision::F32, RuntimeKind::GpuF32)
}

fn f16() -> Option<Gpu> {
    runtime(Precision::F16, RuntimeKind::GpuF16)
}

fn packed_f16() -> Option<Gpu> {
    runtime(Precision::PackedF16, RuntimeKind::GpuPackedF16)
}

fn mobile(precision: Precision, kind: RuntimeKind) -> Option<Gpu> {
    common::gpu_mobile().map(|gpu| Gpu {
        gpu,
        precision,
        kind,
    })
}

fn mobile_f32() -> Option<Gpu> {
    mobile(Precision::F32, RuntimeKind::GpuMobileF32)
}

/// f16 asked of a device without `shader-f16`: the backend stores packed f16 (the compile
/// report's precision says so).
fn mobile_f16() -> Option<Gpu> {
    mobile(Precision::F16, RuntimeKind::GpuMobileF16)
}

mod gpu_f32 {
    heimdall_testkit::golden_suite!(super::f32);
}

mod gpu_f16 {
    heimdall_testkit::golden_suite!(super::f16);
}

mod gpu_packed_f16 {
    heimdall_testkit::golden_suite!(super::packed_f16);
}

mod gpu_mobile_f32 {
    heimdall_testkit::golden_suite!(super::mobile_f32);
}

mod gpu_mobile_f16 {
    heimdall_testkit::golden_suite!(super::mobile_f16);
}
