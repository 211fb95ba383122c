//! Shared helpers of the facade's model tests: load a MediaPipe model, run it on the CPU.
#![allow(dead_code)]

use heimdall::{LoadOptions, load_model};
use heimdall_cpu::{CpuModel, CpuOptions};
use heimdall_ir::Graph;

/// The model's graph, fetching the model if needed (fails loudly when it cannot).
pub fn graph(name: &str, passes: bool) -> Graph {
    let path = heimdall_testkit::model_path(name).unwrap_or_else(|e| panic!("{e}"));
    load_model(
        &path,
        LoadOptions {
            passes,
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The first golden case's input 0 (a photograph or a synthetic image).
pub fn golden_input(name: &str) -> Vec<f32> {
    heimdall_testkit::goldens::cases(name)
        .swap_remove(0)
        .inputs
        .swap_remove(0)
        .data
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
