//! Running one ONNX backend node test (`model.onnx` + `test_data_set_0/*.pb`) on the CPU
//! backend, as ONNX's own runner does: outputs within `rtol 1e-3, atol 1e-7` per element.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use heimdall_cpu::{CpuModel, CpuOptions};
use heimdall_onnx::constant::{Const, Elem};
use heimdall_onnx::proto::{ModelProto, TensorProto};
use heimdall_onnx::{ImportOptions, Layout, import};
use prost::Message;

/// The fetched node tests (`scripts/fetch_onnx_node_tests.py`), fetching them if missing
/// (serialised across threads and processes); fails loudly when it cannot.
pub fn node_tests_dir() -> PathBuf {
    heimdall_testkit::onnx_node_tests_dir().unwrap_or_else(|e| panic!("{e}"))
}

/// Inputs (op type, input index) that heimdall requires to be load-time constants: the node
/// tests feed them as graph inputs, the harness passes their values at load.
const LOAD_TIME: &[(&str, usize)] = &[
    ("Resize", 1),
    ("Upsample", 1),
    ("Clip", 1),
    ("Pad", 1),
    ("BatchNormalization", 1),
    ("InstanceNormalization", 1),
];

fn read_tensor(path: &Path) -> Result<TensorProto, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    TensorProto::decode(bytes.as_slice()).map_err(|_| "non-tensor test data".to_string())
}

/// NCHW <-> NHWC for boundary tensors stored NHWC by the IR.
fn transpose4(x: &[f32], s: [usize; 4], perm: [usize; 4]) -> Vec<f32> {
    let st = [s[1] * s[2] * s[3], s[2] * s[3], s[3], 1];
    let os = perm.map(|p| s[p]);
    let mut out = Vec::with_capacity(x.len());
    for a in 0..os[0] {
        for b in 0..os[1] {
            for c in 0..os[2] {
                for d in 0..os[3] {
                    let i = [a, b, c, d];
                    out.push(x[(0..4).map(|k| i[k] * st[perm[k]]).sum::<usize>()]);
                }
            }
        }
    }
    out
}

/// Runs one node test: `Ok(())` on a match, `Err(reason)` otherwise.
pub fn run_node_test(dir: &Path) -> Result<(), String> {
    let bytes = std::fs::read(dir.join("model.onnx")).map_err(|e| e.to_string())?;
    let model = ModelProto::decode(bytes.as_slice()).map_err(|e| e.to_string())?;
    let graph = model.graph.clone().unwrap_or_default();
    let inits: Vec<String> = graph
        .initializer
        .iter()
        .filter_map(|t| t.name.clone())
        .collect();
    let inputs: Vec<String> = graph
        .input
        .iter()
        .filter_map(|v| v.name.clone())
        .filter(|n| !inits.contains(n))
        .collect();
    let data = dir.join("test_data_set_0");
    let mut options = ImportOptions::default();
    let mut runtime = Vec::new();
    for (i, name) in inputs.iter().enumerate() {
        let t = read_tensor(&data.join(format!("input_{i}.pb")))?;
        let c = Const::from_proto(&t).map_err(|e| format!("input {name}: {e}"))?;
        let load_time = graph.node.iter().any(|n| {
            n.input.iter().enumerate().any(|(k, x)| {
                x == name
                    && LOAD_TIME
                        .iter()
                        .any(|(op, from)| n.op_type.as_deref() == Some(*op) && k >= *from)
            })
        });
        let float = t.data_type == Some(1);
        if !float || load_time {
            options.input_values.push((name.clone(), c));
        } else {
            options.input_shapes.push((name.clone(), c.shape.clone()));
            runtime.push((name.clone(), c));
        }
    }
    let imported = import(&bytes, "node_test", &options).map_err(|e| format!("import: {e}"))?;
    let mut m = CpuModel::compile(&imported.graph, CpuOptions { threads: 1 })
        .map_err(|e| format!("compile: {e}"))?;
    for (name, c) in &runtime {
        let idx = imported
            .inputs
            .iter()
            .position(|b| &b.name == name)
            .ok_or_else(|| format!("input {name} not in the graph"))?;
        let b = &imported.inputs[idx];
        let x = c.as_f32();
        let x = if b.layout == Layout::Nhwc {
            let s = &b.shape;
            transpose4(&x, [s[0], s[1], s[2], s[3]], [0, 2, 3, 1])
        } else {
            x
        };
        m.set_input(idx, &x).map_err(|e| e.to_string())?;
    }
    m.run().map_err(|e| e.to_string())?;
    for (i, b) in imported.outputs.iter().enumerate() {
        let t = read_tensor(&data.join(format!("output_{i}.pb")))?;
        let expected = Const::from_proto(&t).map_err(|e| format!("output {i}: {e}"))?;
        if expected.elem != Elem::Float {
            return Err(format!(
                "non-float output type {}",
                t.data_type.unwrap_or(0)
            ));
        }
        if b.shape != expected.shape {
            return Err(format!(
                "output {i} shape {:?}, expected {:?}",
                b.shape, expected.shape
            ));
        }
        let ours = m.output(i).map_err(|e| e.to_string())?;
        let ours = if b.layout == Layout::Nhwc {
            let s = &b.shape;
            transpose4(ours, [s[0], s[2], s[3], s[1]], [0, 3, 1, 2])
        } else {
            ours.to_vec()
        };
        for (k, (&o, &e)) in ours.iter().zip(&expected.values).enumerate() {
            let (o, e) = (o as f64, e as f32 as f64);
            let ok = (o.is_nan() && e.is_nan()) || o == e || (o - e).abs() <= 1e-7 + 1e-3 * e.abs();
            if !ok {
                return Err(format!("output {i}[{k}] = {o}, expected {e}"));
            }
        }
    }
    Ok(())
}
