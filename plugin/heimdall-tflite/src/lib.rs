//! TFLite flatbuffer importer: reads a `.tflite` model (schema version 3) into heimdall's graph
//! IR.
//!
//! The file is verified by the flatbuffers verifier before any field is read, every size is
//! bounded by the file's own length, and anything unsupported or inconsistent is an
//! [`ImportError`] that names the op index, the op name and what is wrong; no input makes the
//! importer panic (the fuzz tests in `plugin/heimdall/tests/hostile.rs` check this).
//!
//! Each TFLite op becomes exactly one IR op, in the file's order, so op indices of the imported
//! graph are the file's op indices until [`heimdall_ir::passes::optimize`] runs.
#![warn(missing_docs)]

mod builtin;
pub mod custom_options;
mod error;
mod ops;
#[allow(clippy::all, missing_docs, unsafe_op_in_unsafe_fn, mismatched_lifetime_syntaxes, unused_imports)]
#[rustfmt::skip]
mod schema_generated;
mod tensors;
#[cfg(test)]
mod tests;

pub use error::ImportError;
pub use tensors::{MAX_ACTIVATION_ELEMENTS, MAX_TENSOR_ELEMENTS};

use heimdall_ir::{Graph, TensorId};
use schema_generated::tflite;

/// Op counts of a model file, by op name, in the file's order of first appearance.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpCounts(pub Vec<(String, usize)>);

impl OpCounts {
    /// Total number of ops.
    pub fn total(&self) -> usize {
        self.0.iter().map(|(_, n)| n).sum()
    }

    /// Count of one op name (0 if absent).
    pub fn get(&self, name: &str) -> usize {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |(_, c)| *c)
    }
}

/// Reads a model file from bytes. `name` labels the graph (usually the file stem).
pub fn import(bytes: &[u8], name: &str) -> Result<Graph, ImportError> {
    let model = verified_model(bytes)?;
    let subgraphs = model
        .subgraphs()
        .ok_or(ImportError::Model("the model has no subgraphs".into()))?;
    if subgraphs.is_empty() {
        return Err(ImportError::Model("the model has no subgraphs".into()));
    }
    let sg = subgraphs.get(0);
    let tensors = tensors::import_tensors(&model, &sg, bytes)?;
    let nt = tensors.len();
    let ids = |v: Option<flatbuffers::Vector<'_, i32>>,
               what: &str|
     -> Result<Vec<TensorId>, ImportError> {
        v.map(|v| v.iter().collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .map(|i| {
                usize::try_from(i)
                    .ok()
                    .filter(|&i| i < nt)
                    .map(|i| TensorId(i as u32))
                    .ok_or_else(|| {
                        ImportError::Model(format!(
                            "{what} refers to tensor {i}, the subgraph has {nt}"
                        ))
                    })
            })
            .collect()
    };
    let inputs = ids(sg.inputs(), "subgraph inputs")?;
    let outputs = ids(sg.outputs(), "subgraph outputs")?;
    let mut graph = Graph {
        name: name.to_string(),
        tensors,
        ops: Vec::new(),
        inputs,
        outputs,
    };
    let codes = model
        .operator_codes()
        .ok_or(ImportError::Model("the model has no operator codes".into()))?;
    if let Some(operators) = sg.operators() {
        for (index, op) in operators.iter().enumerate() {
            let op = ops::import_op(&graph, &codes, &op, index, bytes)?;
            graph.ops.push(op);
        }
    }
    graph.validate()?;
    Ok(graph)
}

/// Counts the ops of a model file by name (builtin op names as in the schema; custom ops by
/// their custom code), without importing it.
pub fn op_counts(bytes: &[u8]) -> Result<OpCounts, ImportError> {
    let model = verified_model(bytes)?;
    let codes = model
        .operator_codes()
        .ok_or(ImportError::Model("the model has no operator codes".into()))?;
    let mut counts: Vec<(String, usize)> = Vec::new();
    for sg in model.subgraphs().into_iter().flatten() {
        for (index, op) in sg.operators().into_iter().flatten().enumerate() {
            let name = ops::op_name(&codes, &op, index)?;
            match counts.iter_mut().find(|(n, _)| *n == name) {
                Some((_, c)) => *c += 1,
                None => counts.push((name, 1)),
            }
        }
    }
    Ok(OpCounts(counts))
}

fn verified_model(bytes: &[u8]) -> Result<tflite::Model<'_>, ImportError> {
    if bytes.len() < 8 {
        return Err(ImportError::Model(format!(
            "file of {} bytes is too short to be a TFLite model",
            bytes.len()
        )));
    }
    if !tflite::model_buffer_has_identifier(bytes) {
        return Err(ImportError::Model(
            "missing the TFLite file identifier 'TFL3'".into(),
        ));
    }
    let opts = flatbuffers::VerifierOptions {
        max_depth: 64,
        max_tables: 4_000_000,
        max_apparent_size: 1 << 31,
        ignore_missing_null_terminator: false,
    };
    let model = tflite::root_as_model_with_opts(&opts, bytes)
        .map_err(|e| ImportError::Flatbuffer(e.to_string()))?;
    if model.version() != 3 {
        return Err(ImportError::Model(format!(
            "schema version {} is not supported (expected 3)",
            model.version()
        )));
    }
    Ok(model)
}
