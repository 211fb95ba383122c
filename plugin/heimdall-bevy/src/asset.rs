//! Models as Bevy assets: an [`AssetLoader`] for `.tflite` and `.onnx` files that imports the
//! model into heimdall's graph IR (with the load-time passes). Compiling for the render device
//! happens later, in the render world.

use std::sync::Arc;

use bevy::asset::{AssetLoader, LoadContext, io::Reader};
use bevy::prelude::*;
use serde::{Deserialize, Serialize};

/// A model imported into heimdall's IR, ready to be compiled for a backend.
#[derive(Asset, TypePath, Clone, Debug)]
pub struct DnnModel {
    /// Name (the file stem).
    pub name: String,
    /// The optimised graph (NHWC).
    pub graph: Arc<heimdall_ir::Graph>,
}

impl DnnModel {
    /// Shape of input `i` (NHWC), if any.
    pub fn input_shape(&self, i: usize) -> Option<&[usize]> {
        let t = *self.graph.inputs.get(i)?;
        Some(&self.graph.tensor(t).shape)
    }
}

/// Loader settings (in `.meta` files): static shapes for dynamic ONNX inputs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DnnModelSettings {
    /// `(input name, shape in the file's layout)` pairs, as `--input-shape` on the CLI.
    pub input_shapes: Vec<(String, Vec<usize>)>,
}

/// Why a model file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum DnnModelLoadError {
    /// The file could not be read.
    #[error("reading the model file: {0}")]
    Io(#[from] std::io::Error),
    /// Import, validation or passes failed (corrupt file, unsupported op, bad shape).
    #[error("{0}")]
    Import(#[from] heimdall::Error),
}

/// Loads `.tflite` and `.onnx` files as [`DnnModel`]s.
#[derive(Default, TypePath)]
pub struct DnnModelLoader;

impl AssetLoader for DnnModelLoader {
    type Asset = DnnModel;
    type Settings = DnnModelSettings;
    type Error = DnnModelLoadError;

    async fn load(
        &self,
        reader: &mut dyn Reader,
        settings: &DnnModelSettings,
        load_context: &mut LoadContext<'_>,
    ) -> Result<DnnModel, DnnModelLoadError> {
        let mut bytes = Vec::new();
        reader.read_to_end(&mut bytes).await?;
        let path = load_context.path().path().to_path_buf();
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "model".into());
        let graph = import(&bytes, &name, path.extension(), settings)?;
        Ok(DnnModel {
            name,
            graph: Arc::new(graph),
        })
    }

    fn extensions(&self) -> &[&str] {
        &["tflite", "onnx"]
    }
}

/// Imports model bytes by extension (`onnx`, else TFLite).
pub fn import(
    bytes: &[u8],
    name: &str,
    extension: Option<&std::ffi::OsStr>,
    settings: &DnnModelSettings,
) -> Result<heimdall_ir::Graph, heimdall::Error> {
    let options = heimdall::LoadOptions {
        passes: true,
        input_shapes: settings.input_shapes.clone(),
    };
    if extension.is_some_and(|e| e.eq_ignore_ascii_case("onnx")) {
        Ok(heimdall::load_onnx_bytes(bytes, name, &options)?.graph)
    } else {
        Ok(heimdall::load_tflite_bytes(bytes, name, options)?.0)
    }
}
