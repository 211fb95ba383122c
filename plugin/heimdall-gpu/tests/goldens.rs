//! The golden suite (`heimdall_testkit::goldens`: every MediaPipe TFLite model and every ONNX
//! model against the reference engines' outputs) on the GPU backend, once per storage precision:
//! `gpu_f32`, `gpu_f16` (native `shader-f16` where the device has it, else packed) and
//! `gpu_packed_f16`, and in f32 and f16 again on a second device held to a phone's limits and
//! features (`gpu_mobile_f32`, `gpu_mobile_f16`: `heimdall_gpu::DeviceProfile::MobileTypical`, see
//! docs/mobile-limits.md). Bounds are the suite's
//! (`heimdall_testkit::goldens::RuntimeKind::bound`).
//!
//! The f16 runtimes compile as a user of f16 gets a model: through the accuracy guard
//! (`heimdall_gpu::guard::compile_guarded`, default settings), calibrated against the CPU
//! reference on a bundled photo that is none of the golden cases
//! (`heimdall_testkit::goldens::calibration_inputs`), so the goldens check the guard's choice on
//! inputs it has not seen. So that the guard cannot hide a broken f16 kernel, f16 as asked must
//! stay within [`AS_ASKED_CEILING`] on the calibration input and the guard may not fall back to
//! the whole model in f32.
//!
//! On top of the goldens, every step of every model must be a GPU step (no CPU fallback) and no
//! wgpu error may be raised. Needs a GPU adapter (lavapipe in CI); `HEIMDALL_SKIP_GPU=1` skips.

mod common;

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use heimdall::{LoadOptions, LoadedModel, load};
use heimdall_gpu::guard::{
    DEFAULT_BOUND, GuardConfig, compile_guarded, cpu_reference, ranges_text,
};
use heimdall_gpu::{GpuModel, GpuOptions, Placement, Precision};
use heimdall_testkit::goldens::{
    GoldenCase, GoldenModel, Runtime, RuntimeKind, calibration_inputs,
};
use heimdall_testkit::npy::Tensor;

/// The most an output of f16 as asked may miss the CPU reference by on the calibration input
/// before the guard repairs it: 10x the guard's bound. Beyond it f16 is broken, not imprecise
/// (pose_landmark_full, the worst model, misses by about 2x); the guard would otherwise turn a
/// broken f16 kernel into f32 ops and the goldens would pass.
const AS_ASKED_CEILING: f64 = 10.0 * DEFAULT_BOUND;

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

/// `inputs` (in the model file's layout) in the IR's layout, checked against the model's shapes.
fn ir_inputs(loaded: &LoadedModel, inputs: &[Tensor]) -> Result<Vec<Vec<f32>>, String> {
    let io = &loaded.io;
    if io.inputs.len() != inputs.len() {
        return Err(format!(
            "{} inputs given, the model has {}",
            inputs.len(),
            io.inputs.len()
        ));
    }
    inputs
        .iter()
        .zip(&io.inputs)
        .enumerate()
        .map(|(i, (t, model))| {
            if model.shape != t.shape {
                return Err(format!(
                    "input {i}: shape {:?}, given {:?}",
                    model.shape, t.shape
                ));
            }
            Ok(model.to_ir(&t.data))
        })
        .collect()
}

/// The CPU reference on the calibration inputs of `model` at `shape`, computed once for every
/// f16 runtime.
fn calibration_reference(
    model: &GoldenModel,
    shape: &[usize],
    loaded: &LoadedModel,
    inputs: &[&[f32]],
) -> Result<Arc<Vec<Vec<f32>>>, String> {
    shared_slot(&REFERENCES, model, shape)
        .get_or_init(|| {
            let start = std::time::Instant::now();
            let r = cpu_reference(&loaded.graph, inputs).map_err(|e| e.to_string())?;
            println!(
                "{}: CPU reference on the calibration input: {:.0} ms",
                model.id,
                start.elapsed().as_secs_f64() * 1e3
            );
            Ok(Arc::new(r))
        })
        .clone()
}

impl Gpu {
    /// Compiles `model` for the cases shaped like `like`: as asked in f32, through the guard in
    /// f16.
    fn compile(
        &self,
        model: &GoldenModel,
        loaded: &LoadedModel,
        like: &GoldenCase,
    ) -> Result<GpuModel, String> {
        let p = self.precision;
        let m = if p == Precision::F32 {
            GpuModel::compile(&self.gpu.ctx, &loaded.graph, GpuOptions::new(p))
                .map_err(|e| format!("compile: {e}"))?
        } else {
            self.compile_guarded(model, loaded, like)?
        };
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

    /// The guard's model, calibrated on the model's calibration photo shaped like `like`. The
    /// first f16 runtime to compile a model decides (the search, where one is needed); the
    /// others start from its decision, as a user who stored one does
    /// (`GuardDecision::overrides` as `GpuOptions::overrides`): their guard checks it on the
    /// calibration input with one run and searches again only if it misses there.
    fn compile_guarded(
        &self,
        model: &GoldenModel,
        loaded: &LoadedModel,
        like: &GoldenCase,
    ) -> Result<GpuModel, String> {
        let calibration = ir_inputs(loaded, &calibration_inputs(model, like))
            .map_err(|e| format!("calibration: {e}"))?;
        let refs: Vec<&[f32]> = calibration.iter().map(Vec::as_slice).collect();
        let shape = &like.inputs[0].shape;
        let reference = calibration_reference(model, shape, loaded, &refs)?;
        let guard = |options: GpuOptions| {
            compile_guarded(
                &self.gpu.ctx,
                &loaded.graph,
                options,
                &refs,
                &reference,
                &GuardConfig::default(),
            )
            .map_err(|e| format!("guard: {e}"))
        };
        let mut decided = None;
        let overrides = shared_slot(&DECISIONS, model, shape)
            .get_or_init(|| {
                let g = guard(GpuOptions::new(self.precision))?;
                let overrides = g.decision.overrides.clone();
                decided = Some(g);
                Ok(Arc::new(overrides))
            })
            .clone()?;
        let (guarded, how) = match decided {
            Some(g) => (g, "decided here".to_string()),
            None => {
                let mut options = GpuOptions::new(self.precision);
                options.overrides = overrides.to_vec();
                let how = format!(
                    "from the stored decision (f32: {})",
                    ranges_text(&overrides.iter().map(|o| o.0.clone()).collect::<Vec<_>>())
                );
                (guard(options)?, how)
            }
        };
        let d = &guarded.decision;
        let name = format!(
            "{} on {} ({})",
            model.id, self.kind, model.calibration.photo
        );
        println!("{} [{how}]", d.log_line(&name));
        if !d.passed || d.whole_f32 {
            return Err(format!("the guard found no f16 configuration: {d:#?}"));
        }
        if let Some((i, e)) = d
            .errors_before
            .iter()
            .enumerate()
            .find(|(_, e)| **e > AS_ASKED_CEILING)
        {
            return Err(format!(
                "f16 as asked misses the CPU reference by {e:.3e} on output {i} (more than \
                 {AS_ASKED_CEILING:.0e}: broken, not imprecise); the guard chose {}",
                d.summary()
            ));
        }
        Ok(guarded.model)
    }
}

/// What the tests of this binary share per (model, input shape), computed by the first test
/// that needs it while the others wait (they run at the same time).
type Shared<T> = Mutex<HashMap<(String, Vec<usize>), Arc<OnceLock<Result<Arc<T>, String>>>>>;

/// The CPU reference on each model's calibration input.
static REFERENCES: OnceLock<Shared<Vec<Vec<f32>>>> = OnceLock::new();

/// A guard decision's overrides (`GuardDecision::overrides`).
type Overrides = Vec<(Range<usize>, Precision)>;

/// The first f16 runtime's guard decision for each model: its overrides.
static DECISIONS: OnceLock<Shared<Overrides>> = OnceLock::new();

/// The slot of (`model`, `shape`) in `shared`.
fn shared_slot<T>(
    shared: &'static OnceLock<Shared<T>>,
    model: &GoldenModel,
    shape: &[usize],
) -> Arc<OnceLock<Result<Arc<T>, String>>> {
    shared
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry((model.id.to_string(), shape.to_vec()))
        .or_default()
        .clone()
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
        // Compiled once per input shape (the cases of a model share theirs).
        let mut compiled: Option<(Vec<usize>, LoadedModel, GpuModel)> = None;
        let mut results = Vec::new();
        for case in cases {
            let shape = case.inputs[0].shape.clone();
            if compiled.as_ref().is_none_or(|c| c.0 != shape) {
                let loaded = load_case(model, path, case)?;
                let m = self.compile(model, &loaded, case)?;
                compiled = Some((shape, loaded, m));
            }
            let (_, loaded, m) = compiled.as_ref().expect("compiled above");
            let io = &loaded.io;
            let inputs = ir_inputs(loaded, &case.inputs)?;
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
