//! The heimdall engine facade: load a model file into the graph IR (running the load-time
//! passes), compile it for a backend, move tensors in and out as `.npy`.
//!
//! ```no_run
//! use heimdall::{load_model, LoadOptions};
//! use heimdall_cpu::{CpuModel, CpuOptions};
//!
//! let graph = load_model("assets/models/face_detection_short_range.tflite", LoadOptions::default())?;
//! let mut model = CpuModel::compile(&graph, CpuOptions::default())?;
//! model.set_input(0, &vec![0.0; 128 * 128 * 3])?;
//! model.run()?;
//! let scores = model.output(1)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

pub mod boundary;
pub mod npy;

use std::path::Path;

pub use heimdall_cpu as cpu;
pub use heimdall_ir as ir;
use heimdall_ir::Graph;
use heimdall_ir::passes::{PassReport, optimize};
pub use heimdall_onnx as onnx;
pub use heimdall_tflite as tflite;
use thiserror::Error;

/// Errors of loading a model or moving tensors.
#[derive(Debug, Error)]
pub enum Error {
    /// Reading a file failed.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The file's format is not known from its extension.
    #[error("{0}: unknown model format (expected a .tflite or .onnx file)")]
    UnknownFormat(String),
    /// The ONNX importer rejected the file.
    #[error("{path}: {error}")]
    Onnx {
        /// The file.
        path: String,
        /// Why.
        error: heimdall_onnx::OnnxError,
    },
    /// The TFLite importer rejected the file.
    #[error("{path}: {error}")]
    Import {
        /// The file.
        path: String,
        /// Why.
        error: heimdall_tflite::ImportError,
    },
    /// The passes produced an invalid graph (a bug: please report it with the model).
    #[error("{path}: after the load-time passes: {error}")]
    Passes {
        /// The file.
        path: String,
        /// Why.
        error: heimdall_ir::IrError,
    },
    /// A `.npy` file is malformed or not float32.
    #[error("{path}: {message}")]
    Npy {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The CPU backend refused the model or an input.
    #[error(transparent)]
    Cpu(#[from] heimdall_cpu::CpuError),
}

/// How to load a model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadOptions {
    /// Run the load-time passes (fold weights, fuse epilogues, fold pads, drop reshapes).
    pub passes: bool,
    /// Static shapes for model inputs, by name, in the file's own layout (e.g. NCHW
    /// `[1, 3, 512, 512]` for ONNX): required for inputs with dynamic dimensions.
    pub input_shapes: Vec<(String, Vec<usize>)>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            passes: true,
            input_shapes: Vec::new(),
        }
    }
}

/// A loaded model: the graph, what the passes did, and how its inputs and outputs map to the
/// file's own tensors (names, shapes, layouts).
#[derive(Clone, Debug)]
pub struct LoadedModel {
    /// The graph (NHWC).
    pub graph: Graph,
    /// What the passes did.
    pub report: PassReport,
    /// The model's boundary tensors in the file's layout.
    pub io: boundary::ModelIo,
}

/// Loads a model file (`.tflite` or `.onnx`) into the IR.
pub fn load_model(path: impl AsRef<Path>, options: LoadOptions) -> Result<Graph, Error> {
    load(path, options).map(|m| m.graph)
}

/// Loads a model file and reports what the passes did.
pub fn load_model_with_report(
    path: impl AsRef<Path>,
    options: LoadOptions,
) -> Result<(Graph, PassReport), Error> {
    load(path, options).map(|m| (m.graph, m.report))
}

/// Loads a model file with everything known about it.
pub fn load(path: impl AsRef<Path>, options: LoadOptions) -> Result<LoadedModel, Error> {
    let path = path.as_ref();
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|error| Error::Io {
        path: shown.clone(),
        error,
    })?;
    let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("model");
    match path.extension().and_then(|e| e.to_str()) {
        Some("onnx") => load_onnx_bytes(&bytes, name, &options).map_err(|e| match e {
            Error::Onnx { error, .. } => Error::Onnx {
                path: shown.clone(),
                error,
            },
            Error::Passes { error, .. } => Error::Passes {
                path: shown.clone(),
                error,
            },
            other => other,
        }),
        Some("tflite") => load_tflite_bytes(&bytes, name, options)
            .map(|(graph, report)| LoadedModel {
                io: boundary::ModelIo::of_graph(&graph),
                graph,
                report,
            })
            .map_err(|e| match e {
                Error::Import { error, .. } => Error::Import {
                    path: shown.clone(),
                    error,
                },
                Error::Passes { error, .. } => Error::Passes {
                    path: shown.clone(),
                    error,
                },
                other => other,
            }),
        _ => Err(Error::UnknownFormat(shown)),
    }
}

/// Imports ONNX bytes (with the given input shapes) and runs the passes if asked.
pub fn load_onnx_bytes(
    bytes: &[u8],
    name: &str,
    options: &LoadOptions,
) -> Result<LoadedModel, Error> {
    let import_options = heimdall_onnx::ImportOptions {
        input_shapes: options.input_shapes.clone(),
        ..Default::default()
    };
    let model =
        heimdall_onnx::import(bytes, name, &import_options).map_err(|error| Error::Onnx {
            path: name.to_string(),
            error,
        })?;
    let io = boundary::ModelIo::of_onnx(&model);
    let mut graph = model.graph;
    let report = if options.passes {
        optimize(&mut graph).map_err(|error| Error::Passes {
            path: name.to_string(),
            error,
        })?
    } else {
        PassReport::default()
    };
    Ok(LoadedModel { graph, report, io })
}

/// Imports TFLite bytes and runs the passes if asked.
pub fn load_tflite_bytes(
    bytes: &[u8],
    name: &str,
    options: LoadOptions,
) -> Result<(Graph, PassReport), Error> {
    let mut graph = heimdall_tflite::import(bytes, name).map_err(|error| Error::Import {
        path: name.to_string(),
        error,
    })?;
    let report = if options.passes {
        optimize(&mut graph).map_err(|error| Error::Passes {
            path: name.to_string(),
            error,
        })?
    } else {
        PassReport::default()
    };
    Ok((graph, report))
}
