//! Tensors and their constant data.

use heimdall_ir::sparse::{DimMeta, Sparsity};
use heimdall_ir::{Constant, DType, TensorInfo};

use crate::error::ImportError;
use crate::schema_generated::tflite;

/// Upper bound on the elements of any one tensor (activations are allocated by backends from
/// these shapes, so a hostile file must not be able to ask for unbounded memory).
pub const MAX_TENSOR_ELEMENTS: usize = 1 << 26;

/// Upper bound on the elements of all non-constant tensors together (1 GiB of f32).
pub const MAX_ACTIVATION_ELEMENTS: usize = 1 << 28;

/// Imports every tensor of the subgraph; constants get their data decoded to f32.
pub(crate) fn import_tensors(
    model: &tflite::Model<'_>,
    sg: &tflite::SubGraph<'_>,
    file: &[u8],
) -> Result<Vec<TensorInfo>, ImportError> {
    let buffers = model.buffers();
    let Some(tensors) = sg.tensors() else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(tensors.len().min(file.len()));
    let mut activations = 0usize;
    for (index, t) in tensors.iter().enumerate() {
        let name = t.name().unwrap_or("").to_string();
        let err = |message: String| ImportError::Tensor {
            index,
            name: name.clone(),
            message,
        };
        let (shape, numel) = tensor_shape(&t).map_err(&err)?;
        let dtype = tensor_dtype(&t).map_err(&err)?;
        let data = buffer_data(buffers.as_ref(), t.buffer(), file).map_err(&err)?;
        let constant = data
            .map(|bytes| decode_constant(&t, bytes, dtype, &shape, numel))
            .transpose()
            .map_err(&err)?;
        if constant.is_none() {
            activations = activations.saturating_add(numel);
            if activations > MAX_ACTIVATION_ELEMENTS {
                return Err(err(format!(
                    "activations exceed {MAX_ACTIVATION_ELEMENTS} elements in total"
                )));
            }
        }
        out.push(TensorInfo {
            name,
            shape,
            dtype,
            constant,
        });
    }
    Ok(out)
}

/// The shape of tensor `t` (rank normalised to at most 4) and its element count, bounded by
/// [`MAX_TENSOR_ELEMENTS`].
fn tensor_shape(t: &tflite::Tensor<'_>) -> Result<(Vec<usize>, usize), String> {
    let shape: Vec<usize> = t
        .shape()
        .map(|s| s.iter().collect::<Vec<i32>>())
        .unwrap_or_default()
        .into_iter()
        .map(|d| usize::try_from(d).map_err(|_| format!("negative or unknown dimension {d}")))
        .collect::<Result<_, _>>()?;
    let shape = normalise_rank(shape)?;
    let numel = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .filter(|&n| n <= MAX_TENSOR_ELEMENTS);
    let Some(numel) = numel else {
        return Err(format!(
            "shape {shape:?} has more than {MAX_TENSOR_ELEMENTS} elements"
        ));
    };
    Ok((shape, numel))
}

/// The element type of tensor `t`: float or integer, quantized only as float.
fn tensor_dtype(t: &tflite::Tensor<'_>) -> Result<DType, String> {
    let dtype = match t.type_() {
        tflite::TensorType::FLOAT32 => DType::F32,
        tflite::TensorType::FLOAT16 => DType::F16,
        tflite::TensorType::INT32 => DType::I32,
        tflite::TensorType::INT64 => DType::I64,
        other => {
            return Err(format!(
                "element type {other:?} is not supported (float models only)"
            ));
        }
    };
    if t.quantization()
        .and_then(|q| q.scale())
        .is_some_and(|s| !s.is_empty())
        && dtype != DType::F32
        && dtype != DType::F16
    {
        return Err("quantized tensors are not supported".into());
    }
    Ok(dtype)
}

/// The constant value of tensor `t` (of `shape`, `numel` elements of `dtype`) from its buffer
/// `bytes`, dense or sparse, checked against the shape.
fn decode_constant(
    t: &tflite::Tensor<'_>,
    bytes: &[u8],
    dtype: DType,
    shape: &[usize],
    numel: usize,
) -> Result<Constant, String> {
    let sparsity = t
        .sparsity()
        .map(|s| import_sparsity(&s, numel))
        .transpose()?;
    let stored = if !bytes.len().is_multiple_of(dtype.size()) {
        return Err(format!(
            "{} data bytes is not a whole number of {dtype:?} values",
            bytes.len()
        ));
    } else {
        bytes.len() / dtype.size()
    };
    if sparsity.is_none() && stored != numel {
        return Err(format!(
            "shape {shape:?} needs {numel} values, the buffer holds {stored}"
        ));
    }
    if stored > numel {
        return Err(format!("{stored} stored values for {numel} elements"));
    }
    // A sparse tensor expands to its dense shape at load: bound that expansion by the data
    // actually stored, so a tiny file cannot ask for gigabytes.
    if sparsity.is_some() && numel > 64 * stored.max(1024) {
        return Err(format!(
            "sparse tensor of {numel} elements stores only {stored} values"
        ));
    }
    let (values, fp16) = decode(bytes, dtype);
    Ok(Constant {
        values,
        fp16,
        sparsity,
    })
}

/// Drops leading unit dimensions beyond rank 4 (TFLite allows rank 5 with batch dims of 1).
fn normalise_rank(mut shape: Vec<usize>) -> Result<Vec<usize>, String> {
    while shape.len() > heimdall_ir::graph::MAX_RANK && shape[0] == 1 {
        shape.remove(0);
    }
    if shape.len() > heimdall_ir::graph::MAX_RANK {
        return Err(format!(
            "rank {} is more than {}",
            shape.len(),
            heimdall_ir::graph::MAX_RANK
        ));
    }
    Ok(shape)
}

/// The bytes of a buffer, inside the flatbuffer or (schema 3c) at an offset of the file.
fn buffer_data<'a>(
    buffers: Option<&flatbuffers::Vector<'a, flatbuffers::ForwardsUOffset<tflite::Buffer<'a>>>>,
    index: u32,
    file: &'a [u8],
) -> Result<Option<&'a [u8]>, String> {
    if index == 0 {
        return Ok(None);
    }
    let buffers = buffers.ok_or("refers to a buffer but the model has none")?;
    let i = index as usize;
    if i >= buffers.len() {
        return Err(format!(
            "buffer {index} does not exist ({} buffers)",
            buffers.len()
        ));
    }
    let b = buffers.get(i);
    if b.offset() > 1 {
        let start = usize::try_from(b.offset()).map_err(|_| "buffer offset overflows")?;
        let size = usize::try_from(b.size()).map_err(|_| "buffer size overflows")?;
        let end = start
            .checked_add(size)
            .filter(|&e| e <= file.len())
            .ok_or_else(|| {
                format!("buffer {index} ({size} bytes at {start}) lies outside the file")
            })?;
        return Ok(Some(&file[start..end]));
    }
    match b.data() {
        Some(d) if !d.is_empty() => Ok(Some(d.bytes())),
        _ => Ok(None),
    }
}

fn decode(bytes: &[u8], dtype: DType) -> (Vec<f32>, Option<Vec<u16>>) {
    match dtype {
        DType::F32 => (
            bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            None,
        ),
        DType::F16 => {
            let bits: Vec<u16> = bytes
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect();
            (
                bits.iter()
                    .map(|&b| half::f16::from_bits(b).to_f32())
                    .collect(),
                Some(bits),
            )
        }
        DType::I32 => (
            bytes
                .chunks_exact(4)
                .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f32)
                .collect(),
            None,
        ),
        DType::I64 => (
            bytes
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")) as f32)
                .collect(),
            None,
        ),
    }
}

/// Integer values of a constant int tensor, read straight from the buffer (exact for i32/i64).
pub(crate) fn int_values(model_tensor: &TensorInfo) -> Option<Vec<i64>> {
    let c = model_tensor.constant.as_ref()?;
    match model_tensor.dtype {
        DType::I32 | DType::I64 => Some(c.values.iter().map(|&v| v as i64).collect()),
        _ => None,
    }
}

fn import_sparsity(s: &tflite::SparsityParameters<'_>, numel: usize) -> Result<Sparsity, String> {
    let ints = |v: Option<flatbuffers::Vector<'_, i32>>| -> Result<Vec<usize>, String> {
        v.map(|v| v.iter().collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .map(|i| usize::try_from(i).map_err(|_| format!("negative sparsity index {i}")))
            .collect()
    };
    let traversal_order = ints(s.traversal_order())?;
    let block_map = ints(s.block_map())?;
    let mut dims = Vec::new();
    for d in s.dim_metadata().into_iter().flatten() {
        dims.push(match d.format() {
            tflite::DimensionType::DENSE => {
                let n = usize::try_from(d.dense_size()).map_err(|_| "negative dense size")?;
                if n > numel {
                    return Err(format!(
                        "dense size {n} exceeds the tensor's {numel} elements"
                    ));
                }
                DimMeta::Dense(n)
            }
            tflite::DimensionType::SPARSE_CSR => DimMeta::Csr {
                segments: index_vector(&d, true)
                    .ok_or("sparse dimension without array_segments")?,
                indices: index_vector(&d, false).ok_or("sparse dimension without array_indices")?,
            },
            other => return Err(format!("unknown dimension format {other:?}")),
        });
    }
    if traversal_order.len() > 8 {
        return Err(format!(
            "{} sparse levels is too many",
            traversal_order.len()
        ));
    }
    Ok(Sparsity {
        traversal_order,
        block_map,
        dims,
    })
}

fn index_vector(d: &tflite::DimensionMetadata<'_>, segments: bool) -> Option<Vec<u32>> {
    let (i32v, u16v, u8v) = if segments {
        (
            d.array_segments_as_int_32_vector(),
            d.array_segments_as_uint_16_vector(),
            d.array_segments_as_uint_8_vector(),
        )
    } else {
        (
            d.array_indices_as_int_32_vector(),
            d.array_indices_as_uint_16_vector(),
            d.array_indices_as_uint_8_vector(),
        )
    };
    if let Some(v) = i32v {
        return v.values()?.iter().map(|x| u32::try_from(x).ok()).collect();
    }
    if let Some(v) = u16v {
        return Some(v.values()?.iter().map(u32::from).collect());
    }
    if let Some(v) = u8v {
        return Some(v.values()?.iter().map(u32::from).collect());
    }
    None
}
