//! The golden suite (`heimdall_testkit::goldens`: every MediaPipe TFLite model and every ONNX
//! model against the reference engines' outputs) on the CPU backend, two threads. Bounds and
//! known exceptions are the suite's (`heimdall_testkit::goldens::RuntimeKind::Cpu`: rel-L2 ≤ 1e-4
//! on every output, no exception). Inputs and outputs cross the IR boundary through
//! [`heimdall::boundary`] (NCHW files, NHWC graph), as in the CLI.

use std::path::Path;

use heimdall::{LoadOptions, LoadedModel, load};
use heimdall_cpu::{CpuModel, CpuOptions};
use heimdall_testkit::goldens::{GoldenCase, GoldenModel, Runtime, RuntimeKind};
use heimdall_testkit::npy::Tensor;

/// The CPU backend as a runtime of the suite.
struct Cpu;

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

impl Runtime for Cpu {
    fn kind(&self) -> RuntimeKind {
        RuntimeKind::Cpu
    }

    fn run(
        &self,
        model: &GoldenModel,
        path: &Path,
        cases: &[GoldenCase],
    ) -> Result<Vec<Vec<Tensor>>, String> {
        let mut results = Vec::new();
        for case in cases {
            let loaded = load_case(model, path, case)?;
            let io = &loaded.io;
            let mut m = CpuModel::compile(&loaded.graph, CpuOptions { threads: 2 })
                .map_err(|e| format!("compile: {e}"))?;
            for (i, t) in case.inputs.iter().enumerate() {
                if io.inputs[i].shape != t.shape {
                    return Err(format!(
                        "input {i}: shape {:?}, golden {:?}",
                        io.inputs[i].shape, t.shape
                    ));
                }
                m.set_input(i, &io.inputs[i].to_ir(&t.data))
                    .map_err(|e| format!("input {i}: {e}"))?;
            }
            m.run().map_err(|e| format!("run: {e}"))?;
            let outputs = io.outputs.iter().enumerate().map(|(i, o)| {
                let data = m.output(i).map_err(|e| format!("output {i}: {e}"))?;
                Ok(Tensor {
                    shape: o.shape.clone(),
                    data: o.from_ir(data),
                })
            });
            results.push(outputs.collect::<Result<_, String>>()?);
        }
        Ok(results)
    }
}

fn cpu() -> Option<Cpu> {
    Some(Cpu)
}

heimdall_testkit::golden_suite!(cpu);
