//! `.npy` files of float32 tensors (the CLI's and the goldens' tensor format): `heimdall-npy`'s
//! reader and writer, with the facade's [`enum@Error`].

use std::path::Path;

use crate::Error;

pub use heimdall_npy::NpyTensor;

impl From<heimdall_npy::NpyError> for Error {
    fn from(e: heimdall_npy::NpyError) -> Error {
        match e {
            heimdall_npy::NpyError::Io { path, error } => Error::Io { path, error },
            heimdall_npy::NpyError::Format { path, message } => Error::Npy { path, message },
        }
    }
}

/// Reads a float32 `.npy` file (C order).
pub fn read_npy(path: impl AsRef<Path>) -> Result<NpyTensor, Error> {
    Ok(heimdall_npy::read_npy(path)?)
}

/// Writes a float32 `.npy` file (little-endian, C order); `data` must hold the shape's count of
/// values.
pub fn write_npy(path: impl AsRef<Path>, shape: &[usize], data: &[f32]) -> Result<(), Error> {
    Ok(heimdall_npy::write_npy(path, shape, data)?)
}
