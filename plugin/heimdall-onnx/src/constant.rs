//! Constants as the importer sees them: ONNX shapes (any rank) and values as f64, so that
//! shape arithmetic on int64 and weights in f32 share one representation. Decoded from
//! `TensorProto` with every size checked against the bytes actually present.

use crate::proto::TensorProto;

/// Element kind of a constant (what the ONNX type was, for integer arithmetic and casts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    /// Floating point (float, double, float16).
    Float,
    /// Integer (int8..int64, uint8..uint64).
    Int,
    /// Boolean.
    Bool,
}

/// A constant tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct Const {
    /// ONNX shape (row-major).
    pub shape: Vec<usize>,
    /// Values in row-major order.
    pub values: Vec<f64>,
    /// Element kind.
    pub elem: Elem,
}

/// ONNX `TensorProto.DataType` codes used here.
pub mod dtype {
    /// float32.
    pub const FLOAT: i32 = 1;
    /// uint8.
    pub const UINT8: i32 = 2;
    /// int8.
    pub const INT8: i32 = 3;
    /// uint16.
    pub const UINT16: i32 = 4;
    /// int16.
    pub const INT16: i32 = 5;
    /// int32.
    pub const INT32: i32 = 6;
    /// int64.
    pub const INT64: i32 = 7;
    /// bool.
    pub const BOOL: i32 = 9;
    /// float16.
    pub const FLOAT16: i32 = 10;
    /// float64.
    pub const DOUBLE: i32 = 11;
    /// uint32.
    pub const UINT32: i32 = 12;
    /// uint64.
    pub const UINT64: i32 = 13;
}

/// The element kind of an ONNX data type code, or `None` for types heimdall cannot hold.
pub fn elem_of(data_type: i32) -> Option<Elem> {
    use dtype::*;
    match data_type {
        FLOAT | FLOAT16 | DOUBLE => Some(Elem::Float),
        UINT8 | INT8 | UINT16 | INT16 | INT32 | INT64 | UINT32 | UINT64 => Some(Elem::Int),
        BOOL => Some(Elem::Bool),
        _ => None,
    }
}

impl Const {
    /// A constant of the given shape and values.
    pub fn new(shape: Vec<usize>, values: Vec<f64>, elem: Elem) -> Const {
        Const {
            shape,
            values,
            elem,
        }
    }

    /// A scalar.
    pub fn scalar(v: f64, elem: Elem) -> Const {
        Const::new(vec![], vec![v], elem)
    }

    /// A 1-D integer constant.
    pub fn ints(v: &[i64]) -> Const {
        Const::new(
            vec![v.len()],
            v.iter().map(|&x| x as f64).collect(),
            Elem::Int,
        )
    }

    /// The values as integers (saturating).
    pub fn as_i64(&self) -> Vec<i64> {
        self.values.iter().map(|&v| v as i64).collect()
    }

    /// The values as f32.
    pub fn as_f32(&self) -> Vec<f32> {
        self.values.iter().map(|&v| v as f32).collect()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.values.len()
    }

    /// Decodes a `TensorProto`; `what` names it in errors.
    pub fn from_proto(t: &TensorProto) -> Result<Const, String> {
        if !t.external_data.is_empty() || t.data_location == Some(1) {
            return Err("external data is not supported".into());
        }
        let dt = t.data_type.unwrap_or(0);
        let elem = elem_of(dt).ok_or_else(|| format!("data type {dt} is not supported"))?;
        let mut shape = Vec::with_capacity(t.dims.len());
        let mut numel = 1usize;
        for &d in &t.dims {
            let d = usize::try_from(d).map_err(|_| format!("negative dimension {d}"))?;
            numel = numel
                .checked_mul(d)
                .ok_or_else(|| format!("shape {:?} overflows", t.dims))?;
            shape.push(d);
        }
        let values: Vec<f64> = if let Some(raw) = &t.raw_data {
            decode_raw(raw, dt, numel)?
        } else {
            use dtype::*;
            let v: Vec<f64> = match dt {
                FLOAT => t.float_data.iter().map(|&x| x as f64).collect(),
                DOUBLE => t.double_data.clone(),
                INT64 => t.int64_data.iter().map(|&x| x as f64).collect(),
                // uint64 values are stored in uint64_data, not decoded here.
                UINT64 | UINT32 => return Err("uint32/uint64 typed data is not supported".into()),
                FLOAT16 => t
                    .int32_data
                    .iter()
                    .map(|&x| half_to_f32(x as u16) as f64)
                    .collect(),
                _ => t.int32_data.iter().map(|&x| x as f64).collect(),
            };
            v
        };
        if values.len() != numel {
            return Err(format!(
                "shape {shape:?} needs {numel} values, the file has {}",
                values.len()
            ));
        }
        Ok(Const {
            shape,
            values,
            elem,
        })
    }
}

/// Decodes little-endian `raw_data`; its length must be exactly `numel` elements.
fn decode_raw(raw: &[u8], dt: i32, numel: usize) -> Result<Vec<f64>, String> {
    use dtype::*;
    let size = match dt {
        BOOL | UINT8 | INT8 => 1,
        UINT16 | INT16 | FLOAT16 => 2,
        FLOAT | INT32 | UINT32 => 4,
        _ => 8,
    };
    if Some(raw.len()) != numel.checked_mul(size) {
        return Err(format!(
            "{numel} values of {size} bytes expected, raw data has {} bytes",
            raw.len()
        ));
    }
    Ok(raw
        .chunks_exact(size)
        .map(|b| match dt {
            BOOL | UINT8 => b[0] as f64,
            INT8 => b[0] as i8 as f64,
            UINT16 => u16::from_le_bytes([b[0], b[1]]) as f64,
            INT16 => i16::from_le_bytes([b[0], b[1]]) as f64,
            FLOAT16 => half_to_f32(u16::from_le_bytes([b[0], b[1]])) as f64,
            FLOAT => f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
            INT32 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
            UINT32 => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
            DOUBLE => f64::from_le_bytes(b.try_into().unwrap_or([0; 8])),
            UINT64 => u64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as f64,
            _ => i64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as f64,
        })
        .collect())
}

/// IEEE binary16 to binary32.
fn half_to_f32(bits: u16) -> f32 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = ((bits >> 10) & 0x1f) as i32;
    let mant = (bits & 0x3ff) as f32;
    sign * match exp {
        0 => mant * 2f32.powi(-24),
        31 if mant == 0.0 => f32::INFINITY,
        31 => f32::NAN,
        e => (1.0 + mant / 1024.0) * 2f32.powi(e - 15),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_and_typed_data_decode() {
        let t = TensorProto {
            dims: vec![2],
            data_type: Some(dtype::FLOAT),
            raw_data: Some([1.5f32.to_le_bytes(), (-2f32).to_le_bytes()].concat()),
            ..Default::default()
        };
        assert_eq!(Const::from_proto(&t).unwrap().values, vec![1.5, -2.0]);
        let t = TensorProto {
            dims: vec![3],
            data_type: Some(dtype::INT64),
            int64_data: vec![1, -1, 7],
            ..Default::default()
        };
        assert_eq!(Const::from_proto(&t).unwrap().as_i64(), vec![1, -1, 7]);
        let bad = TensorProto {
            dims: vec![1 << 40, 1 << 40],
            data_type: Some(dtype::FLOAT),
            ..Default::default()
        };
        assert!(Const::from_proto(&bad).is_err());
        assert_eq!(half_to_f32(0x3c00), 1.0);
    }
}
