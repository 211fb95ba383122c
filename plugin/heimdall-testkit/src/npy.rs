//! Reading the goldens' `.npy` tensors (float32, C order).
//!
//! The product's reader and writer are `heimdall::npy` (the CLI's tensor format); this crate
//! cannot depend on the facade (the facade's tests depend on this crate), so the goldens are
//! read here with the same library (`npyz`) and the same checks.

use std::path::Path;

/// A float32 tensor: its shape (C order) and values.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    /// Shape (C order).
    pub shape: Vec<usize>,
    /// Values in C order.
    pub data: Vec<f32>,
}

/// Reads a float32 `.npy` file (C order); the error names the file.
pub fn read_npy(path: impl AsRef<Path>) -> Result<Tensor, String> {
    let path = path.as_ref();
    let err = |m: String| format!("{}: {m}", path.display());
    let bytes = std::fs::read(path).map_err(|e| err(e.to_string()))?;
    let npy = npyz::NpyFile::new(&bytes[..]).map_err(|e| err(format!("not a .npy file: {e}")))?;
    if npy.order() != npyz::Order::C {
        return Err(err("Fortran-ordered arrays are not supported".into()));
    }
    match npy.dtype() {
        npyz::DType::Plain(t) if t.type_char() == npyz::TypeChar::Float && t.size_field() == 4 => {}
        other => return Err(err(format!("dtype {} is not float32", other.descr()))),
    }
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    let data: Vec<f32> = npy
        .into_vec()
        .map_err(|e| err(format!("cannot read the data: {e}")))?;
    if data.len() != shape.iter().product::<usize>() {
        return Err(err(format!("shape {shape:?} but {} values", data.len())));
    }
    Ok(Tensor { shape, data })
}
