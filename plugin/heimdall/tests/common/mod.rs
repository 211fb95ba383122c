//! Shared helpers of the model tests: find models and goldens, run a model on the CPU.
#![allow(dead_code)]

use std::path::PathBuf;

use heimdall::assets::{goldens_dir, model_path};
use heimdall::npy::read_npy;
use heimdall::{LoadOptions, load_model};
use heimdall_cpu::{CpuModel, CpuOptions};
use heimdall_ir::Graph;

/// One golden case: the input tensors and, per model output, the reference if there is one.
pub struct Case {
    pub name: String,
    pub inputs: Vec<Vec<f32>>,
    pub outputs: Vec<Option<Vec<f32>>>,
}

/// The model's graph, fetching the model if needed (fails loudly when it cannot).
pub fn graph(name: &str, passes: bool) -> Graph {
    let path = model_path(name).unwrap_or_else(|e| panic!("{e}"));
    load_model(
        &path,
        LoadOptions {
            passes,
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The golden cases of a model (`assets/goldens/<name>/<case>/`).
pub fn cases(name: &str, n_outputs: usize) -> Vec<Case> {
    let dir = goldens_dir(name);
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("no goldens for {name} in {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(
        dirs.len() >= 2,
        "{name}: expected at least two golden cases, found {}",
        dirs.len()
    );
    dirs.into_iter()
        .map(|d| Case {
            name: d.file_name().unwrap().to_string_lossy().into_owned(),
            inputs: vec![read_npy(d.join("input_0.npy")).expect("input").data],
            outputs: (0..n_outputs)
                .map(|i| {
                    let p = d.join(format!("output_{i}.npy"));
                    p.exists()
                        .then(|| read_npy(&p).expect("golden output").data)
                })
                .collect(),
        })
        .collect()
}

/// Runs the graph on one input set and returns every output.
pub fn run(graph: &Graph, inputs: &[Vec<f32>], threads: usize) -> Vec<Vec<f32>> {
    let mut m = CpuModel::compile(graph, CpuOptions { threads }).expect("compile");
    for (i, x) in inputs.iter().enumerate() {
        m.set_input(i, x).expect("input");
    }
    m.run().expect("run");
    (0..graph.outputs.len())
        .map(|i| m.output(i).expect("output").to_vec())
        .collect()
}

/// A deterministic pseudo-random input in [-1, 1] for every input of the graph.
pub fn random_inputs(graph: &Graph, seed: u64) -> Vec<Vec<f32>> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    graph
        .inputs
        .iter()
        .map(|&t| {
            (0..graph.tensor(t).numel())
                .map(|_| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
                })
                .collect()
        })
        .collect()
}
