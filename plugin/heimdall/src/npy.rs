//! `.npy` files of float32 tensors (the CLI's and the goldens' tensor format).

use std::path::Path;

use crate::Error;

/// A float32 tensor read from or written to `.npy`.
#[derive(Clone, Debug, PartialEq)]
pub struct NpyTensor {
    /// Shape (C order).
    pub shape: Vec<usize>,
    /// Values in C order.
    pub data: Vec<f32>,
}

/// Reads a float32 `.npy` file (little-endian, C order).
pub fn read_npy(path: impl AsRef<Path>) -> Result<NpyTensor, Error> {
    let path = path.as_ref();
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|error| Error::Io {
        path: shown.clone(),
        error,
    })?;
    let err = |message: String| Error::Npy {
        path: shown.clone(),
        message,
    };
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
    Ok(NpyTensor { shape, data })
}

/// Writes a float32 `.npy` file.
pub fn write_npy(path: impl AsRef<Path>, shape: &[usize], data: &[f32]) -> Result<(), Error> {
    use npyz::WriterBuilder;
    let path = path.as_ref();
    let shown = path.display().to_string();
    let io = |error: std::io::Error| Error::Io {
        path: shown.clone(),
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
