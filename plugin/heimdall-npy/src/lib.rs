//! `.npy` files of float32 tensors: the `heimdall` CLI's tensor format and the golden
//! references' files (`assets/goldens/`, written by NumPy). One reader and one writer, over
//! `npyz`; the engine's facade (`heimdall::npy`) and the test kit (`heimdall_testkit::npy`)
//! both use these.
//!
//! Only what heimdall's tensors are is accepted: float32, C order. Anything else is an
//! [`NpyError`] naming the file, never a panic.
#![warn(missing_docs)]

use std::path::Path;

/// A float32 tensor read from or written to `.npy`.
#[derive(Clone, Debug, PartialEq)]
pub struct NpyTensor {
    /// Shape (C order).
    pub shape: Vec<usize>,
    /// Values in C order.
    pub data: Vec<f32>,
}

/// Why a `.npy` file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    /// The file could not be read or written.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The file is not a float32, C-order `.npy` tensor.
    #[error("{path}: {message}")]
    Format {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

/// Reads a float32 `.npy` file (C order; either byte order, as `npyz` reads it).
pub fn read_npy(path: impl AsRef<Path>) -> Result<NpyTensor, NpyError> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|error| NpyError::Io {
        path: path.display().to_string(),
        error,
    })?;
    parse_npy(&bytes).map_err(|message| NpyError::Format {
        path: path.display().to_string(),
        message,
    })
}

/// Parses the bytes of a float32 `.npy` file (C order); the error says what is wrong.
pub fn parse_npy(bytes: &[u8]) -> Result<NpyTensor, String> {
    let npy = npyz::NpyFile::new(bytes).map_err(|e| format!("not a .npy file: {e}"))?;
    if npy.order() != npyz::Order::C {
        return Err("Fortran-ordered arrays are not supported".into());
    }
    match npy.dtype() {
        npyz::DType::Plain(t) if t.type_char() == npyz::TypeChar::Float && t.size_field() == 4 => {}
        other => return Err(format!("dtype {} is not float32", other.descr())),
    }
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    let data: Vec<f32> = npy
        .into_vec()
        .map_err(|e| format!("cannot read the data: {e}"))?;
    if data.len() != shape.iter().product::<usize>() {
        return Err(format!("shape {shape:?} but {} values", data.len()));
    }
    Ok(NpyTensor { shape, data })
}

/// Writes a float32 `.npy` file (little-endian, C order); `data` must hold the shape's count of
/// values.
pub fn write_npy(path: impl AsRef<Path>, shape: &[usize], data: &[f32]) -> Result<(), NpyError> {
    use npyz::WriterBuilder;
    let path = path.as_ref();
    if data.len() != shape.iter().product::<usize>() {
        return Err(NpyError::Format {
            path: path.display().to_string(),
            message: format!("shape {shape:?} but {} values", data.len()),
        });
    }
    let io = |error: std::io::Error| NpyError::Io {
        path: path.display().to_string(),
        error,
    };
    let file = std::fs::File::create(path).map_err(io)?;
    let mut w = npyz::WriteOptions::<f32>::new()
        .default_dtype()
        .shape(&shape.iter().map(|&d| d as u64).collect::<Vec<_>>())
        .writer(std::io::BufWriter::new(file))
        .begin_nd()
        .map_err(io)?;
    w.extend(data.iter().copied()).map_err(io)?;
    w.finish().map_err(io)?;
    Ok(())
}
