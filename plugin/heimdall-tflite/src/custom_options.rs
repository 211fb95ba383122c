//! The options of TFLite custom ops: parsing the flexbuffer options of the MediaPipe custom ops
//! (version 2) of face_landmark_with_attention.
//!
//! `Landmarks2TransformMatrix` and `TransformTensorBilinear` store their options as a flexbuffer
//! map in the operator's `custom_options` (`custom_options_format` FLEXBUFFERS); version 2 of
//! `TransformLandmarks` stores none. Keys are looked up by name, unknown keys are ignored, as
//! MediaPipe's parsers do.
//!
//! The bytes come from untrusted model files, and the `flexbuffers` crate (25.12.19) indexes
//! slices with addresses and lengths read from the buffer without checking them
//! (`reader/mod.rs` `read_usize`, `reader/map.rs` `lazy_strcmp`, unchecked `address + width ·
//! length` sums), so it can panic on malformed input. Every parser here therefore first checks,
//! with overflow-checked arithmetic, that each region the crate is about to read (the root, the
//! map's values, type bytes and keys, and any vector it reads) lies inside the buffer, and only
//! then lets the crate decode it. Malformed input yields `Err`, never a panic.

use flexbuffers::{FlexBufferType, MapReader, Reader};
use heimdall_ir::{
    Landmarks2TransformMatrixAttrs, TransformLandmarksAttrs, TransformTensorBilinearAttrs,
};

/// The operator-code version of the MediaPipe custom ops whose semantics heimdall implements
/// (version 1 has other options and semantics: no pixel-centre correction, rank-4 landmarks, a
/// `scale` option); the importer refuses the others.
pub const MEDIAPIPE_OP_VERSION: i32 = 2;

/// Parses the options of `Landmarks2TransformMatrix` (version 2).
///
/// Required keys: `subset_idxs` (vector of non-negative ints, not empty), `left_rotation_idx`,
/// `right_rotation_idx` (non-negative ints), `output_height`, `output_width` (positive ints),
/// `scale_x`, `scale_y` (finite positive numbers). Optional: `target_rotation_radians`
/// (number, default 0). Index ranges are checked against the landmarks tensor by
/// `heimdall_ir::ops::landmarks_to_transform::infer`.
pub fn parse_landmarks_to_transform_matrix(
    custom_options: &[u8],
) -> Result<Landmarks2TransformMatrixAttrs, String> {
    const OP: &str = "Landmarks2TransformMatrix options";
    let map = RootMap::open(custom_options).map_err(|e| format!("{OP}: {e}"))?;
    let req = |key: &str| map.require(key).map_err(|e| format!("{OP}: {e}"));

    let subset_idxs = map
        .int_vector(req("subset_idxs")?)
        .map_err(|e| format!("{OP}: subset_idxs: {e}"))?
        .into_iter()
        .enumerate()
        .map(|(i, v)| index_value(v).map_err(|e| format!("{OP}: subset_idxs[{i}]: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    if subset_idxs.is_empty() {
        return Err(format!("{OP}: subset_idxs is empty"));
    }
    let index = |key: &str| -> Result<usize, String> {
        map.int(req(key)?)
            .and_then(index_value)
            .map_err(|e| format!("{OP}: {key}: {e}"))
    };
    let size = |key: &str| -> Result<usize, String> {
        map.int(req(key)?)
            .and_then(size_value)
            .map_err(|e| format!("{OP}: {key}: {e}"))
    };
    let scale = |key: &str| -> Result<f32, String> {
        let v = map
            .float(req(key)?)
            .map_err(|e| format!("{OP}: {key}: {e}"))?;
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err(format!("{OP}: {key} must be finite and > 0, got {v}"))
        }
    };
    let target_rotation_radians = match map.get("target_rotation_radians") {
        None => 0.0,
        Some(slot) => {
            let v = map
                .float(slot)
                .map_err(|e| format!("{OP}: target_rotation_radians: {e}"))?;
            if !v.is_finite() {
                return Err(format!(
                    "{OP}: target_rotation_radians must be finite, got {v}"
                ));
            }
            v
        }
    };
    Ok(Landmarks2TransformMatrixAttrs {
        subset_idxs,
        left_rotation_idx: index("left_rotation_idx")?,
        right_rotation_idx: index("right_rotation_idx")?,
        target_rotation_radians,
        output_height: size("output_height")?,
        output_width: size("output_width")?,
        scale_x: scale("scale_x")?,
        scale_y: scale("scale_y")?,
    })
}

/// Parses the options of `TransformTensorBilinear` (version 2).
///
/// Required keys: `output_height`, `output_width` (positive ints).
pub fn parse_transform_tensor_bilinear(
    custom_options: &[u8],
) -> Result<TransformTensorBilinearAttrs, String> {
    const OP: &str = "TransformTensorBilinear options";
    let map = RootMap::open(custom_options).map_err(|e| format!("{OP}: {e}"))?;
    let size = |key: &str| -> Result<usize, String> {
        map.require(key)
            .and_then(|slot| map.int(slot))
            .and_then(size_value)
            .map_err(|e| format!("{OP}: {key}: {e}"))
    };
    Ok(TransformTensorBilinearAttrs {
        output_height: size("output_height")?,
        output_width: size("output_width")?,
    })
}

/// Parses the options of `TransformLandmarks` (version 2).
///
/// Version 2 has no options: the model stores an empty `custom_options`, and MediaPipe's
/// version-2 parser ignores whatever bytes are there, so this accepts any input.
pub fn parse_transform_landmarks(custom_options: &[u8]) -> Result<TransformLandmarksAttrs, String> {
    let _ = custom_options;
    Ok(TransformLandmarksAttrs {})
}

/// A non-negative int that indexes a landmark.
fn index_value(v: i64) -> Result<usize, String> {
    usize::try_from(v).map_err(|_| format!("must be a non-negative index, got {v}"))
}

/// A positive int that sizes a tensor dimension (at most `i32::MAX`, like MediaPipe's
/// `AsInt32`).
fn size_value(v: i64) -> Result<usize, String> {
    if (1..=i64::from(i32::MAX)).contains(&v) {
        Ok(v as usize)
    } else {
        Err(format!("must be in 1..=2147483647, got {v}"))
    }
}

/// Reads the unsigned little-endian integer of `width` bytes at `addr`, if it is in `buf`.
fn read_uint(buf: &[u8], addr: usize, width: usize) -> Option<u64> {
    let bytes = buf.get(addr..addr.checked_add(width)?)?;
    let mut v = [0u8; 8];
    v[..width].copy_from_slice(bytes);
    Some(u64::from_le_bytes(v))
}

/// `addr - offset-stored-at-addr`: the target of a flexbuffer reference.
fn deref(buf: &[u8], addr: usize, width: usize) -> Option<usize> {
    let off = usize::try_from(read_uint(buf, addr, width)?).ok()?;
    addr.checked_sub(off)
}

/// Decodes a packed type byte into (type, byte width of the value / of the child elements).
fn unpack(byte: u8) -> Option<(FlexBufferType, usize)> {
    let ty = FlexBufferType::try_from(byte >> 2).ok()?;
    Some((ty, 1usize << (byte & 3)))
}

/// Whether a value of this type is stored by offset (what the crate dereferences).
fn is_reference(ty: FlexBufferType) -> bool {
    !matches!(
        ty,
        FlexBufferType::Null
            | FlexBufferType::Int
            | FlexBufferType::UInt
            | FlexBufferType::Float
            | FlexBufferType::Bool
    )
}

/// Where a value of the root map sits: its address after dereferencing, type and width.
#[derive(Clone, Copy, Debug)]
struct Slot {
    /// Position of the key in the map.
    index: usize,
    ty: FlexBufferType,
    /// Address of the value's data (after following the offset of a reference).
    addr: usize,
    /// Byte width of the value (of its elements, for a vector).
    width: usize,
}

/// The root map of an options buffer, checked so that looking keys up with the crate and
/// reading their values' slots cannot leave the buffer.
struct RootMap<'a> {
    buf: &'a [u8],
    map: MapReader<&'a [u8]>,
    values_addr: usize,
    values_width: usize,
    len: usize,
}

impl<'a> RootMap<'a> {
    fn open(buf: &'a [u8]) -> Result<Self, String> {
        const BAD: &str = "malformed flexbuffer";
        if buf.len() < 3 {
            return Err(format!("{BAD}: {} bytes is too short", buf.len()));
        }
        // Root: last byte = root width, second last = packed type, value just before.
        let end = buf.len();
        let root_width = usize::from(buf[end - 1]);
        if ![1, 2, 4, 8].contains(&root_width) {
            return Err(format!("{BAD}: root width {root_width}"));
        }
        let (ty, width) = unpack(buf[end - 2]).ok_or_else(|| format!("{BAD}: root type byte"))?;
        if ty != FlexBufferType::Map {
            return Err(format!("the root is a {ty:?}, not a map"));
        }
        let slot = (end - 2)
            .checked_sub(root_width)
            .ok_or_else(|| format!("{BAD}: root out of bounds"))?;
        let addr = deref(buf, slot, root_width).ok_or_else(|| format!("{BAD}: root offset"))?;

        // Map layout: [keys offset][keys width][length] | values (width each) | type bytes,
        // keys vector of `len` offsets of `keys_width` bytes.
        let header = addr
            .checked_sub(3 * width)
            .ok_or_else(|| format!("{BAD}: map header out of bounds"))?;
        let keys_addr = deref(buf, header, width).ok_or_else(|| format!("{BAD}: keys offset"))?;
        let keys_width = read_uint(buf, header + width, width)
            .filter(|w| [1, 2, 4, 8].contains(w))
            .ok_or_else(|| format!("{BAD}: keys width"))? as usize;
        let len = read_uint(buf, header + 2 * width, width)
            .and_then(|l| usize::try_from(l).ok())
            .ok_or_else(|| format!("{BAD}: map length"))?;
        let values_end = len
            .checked_mul(width)
            .and_then(|n| n.checked_add(len))
            .and_then(|n| n.checked_add(addr));
        let keys_end = len
            .checked_mul(keys_width)
            .and_then(|n| n.checked_add(keys_addr));
        if !matches!((values_end, keys_end), (Some(v), Some(k)) if v <= end && k <= end) {
            return Err(format!("{BAD}: map of {len} entries exceeds the buffer"));
        }

        // Everything the crate reads to get here and to look keys up is now known in bounds.
        let map = Reader::get_root(buf)
            .and_then(|r| r.get_map())
            .map_err(|e| format!("{BAD}: {e:?}"))?;
        if map.len() != len {
            return Err(format!("{BAD}: map length"));
        }
        Ok(RootMap {
            buf,
            map,
            values_addr: addr,
            values_width: width,
            len,
        })
    }

    /// The slot of `key`, if present and well formed.
    fn get(&self, key: &str) -> Option<Slot> {
        let index = self.map.index_key(key)?;
        if index >= self.len {
            return None;
        }
        let data = self.values_addr + self.values_width * index;
        let type_byte = self.buf[self.values_addr + self.values_width * self.len + index];
        let (ty, width) = unpack(type_byte)?;
        let addr = if is_reference(ty) {
            deref(self.buf, data, self.values_width)?
        } else {
            data
        };
        Some(Slot {
            index,
            ty,
            addr,
            width: if is_reference(ty) {
                width
            } else {
                self.values_width
            },
        })
    }

    fn require(&self, key: &str) -> Result<Slot, String> {
        self.get(key)
            .ok_or_else(|| format!("missing or malformed key `{key}`"))
    }

    fn reader(&self, slot: Slot) -> Result<Reader<&'a [u8]>, String> {
        self.map
            .index(slot.index)
            .map_err(|e| format!("malformed value: {e:?}"))
    }

    /// An integer value (Int, UInt or their indirect forms).
    fn int(&self, slot: Slot) -> Result<i64, String> {
        int_of(&self.reader(slot)?)
    }

    /// A number (Float, or an integer converted like MediaPipe's `AsFloat`), as f32.
    fn float(&self, slot: Slot) -> Result<f32, String> {
        let r = self.reader(slot)?;
        match r.flexbuffer_type() {
            FlexBufferType::Float => r
                .get_f64()
                .map(|v| v as f32)
                .map_err(|e| format!("malformed float: {e:?}")),
            FlexBufferType::Int | FlexBufferType::UInt => int_of(&r).map(|v| v as f32),
            ty => Err(format!("expected a number, got {ty:?}")),
        }
    }

    /// A vector of integers: a typed int/uint vector (any length, or fixed length 2..4) or an
    /// untyped vector whose elements are all integers.
    fn int_vector(&self, slot: Slot) -> Result<Vec<i64>, String> {
        use FlexBufferType as T;
        let (len, untyped) = match slot.ty {
            T::VectorInt | T::VectorUInt | T::Vector => {
                let len_addr = slot
                    .addr
                    .checked_sub(slot.width)
                    .ok_or("vector length out of bounds")?;
                let len = read_uint(self.buf, len_addr, slot.width)
                    .and_then(|l| usize::try_from(l).ok())
                    .ok_or("vector length out of bounds")?;
                (len, slot.ty == T::Vector)
            }
            T::VectorInt2 | T::VectorUInt2 => (2, false),
            T::VectorInt3 | T::VectorUInt3 => (3, false),
            T::VectorInt4 | T::VectorUInt4 => (4, false),
            ty => return Err(format!("expected a vector of ints, got {ty:?}")),
        };
        let end = len
            .checked_mul(slot.width)
            .and_then(|n| n.checked_add(if untyped { len } else { 0 }))
            .and_then(|n| n.checked_add(slot.addr));
        if !matches!(end, Some(e) if e <= self.buf.len()) {
            return Err(format!("vector of {len} elements exceeds the buffer"));
        }
        let vector = self
            .reader(slot)?
            .get_vector()
            .map_err(|e| format!("malformed vector: {e:?}"))?;
        if vector.len() != len {
            return Err("malformed vector length".to_string());
        }
        (0..len)
            .map(|i| {
                vector
                    .index(i)
                    .map_err(|e| format!("malformed element {i}: {e:?}"))
                    .and_then(|r| int_of(&r).map_err(|e| format!("element {i}: {e}")))
            })
            .collect()
    }
}

/// The integer held by `r` (Int or UInt; the crate has already followed indirect ones).
fn int_of(r: &Reader<&[u8]>) -> Result<i64, String> {
    match r.flexbuffer_type() {
        FlexBufferType::Int => r.get_i64().map_err(|e| format!("malformed int: {e:?}")),
        FlexBufferType::UInt => {
            let v = r.get_u64().map_err(|e| format!("malformed uint: {e:?}"))?;
            i64::try_from(v).map_err(|_| format!("integer {v} out of range"))
        }
        ty => Err(format!("expected an integer, got {ty:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hex(s: &str) -> Vec<u8> {
        assert!(s.len().is_multiple_of(2));
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// `custom_options` of operator 192 of face_landmark_with_attention.tflite (MediaPipe
    /// 0.10.21): Landmarks2TransformMatrix v2 for the lips crop.
    const L2TM_LIPS: &str = concat!(
        "6c6566745f726f746174696f6e5f696478006f75747075745f686569676874006f75747075745f776964",
        "74680072696768745f726f746174696f6e5f696478007363616c655f78007363616c655f790073756273",
        "65745f696478730050003d0092005b00b500540011003a019501410177012301b9002800270025000000",
        "0b010d010e0199014e005f005800b20057000e003d0192013e0144013401bf005000510052000d003801",
        "370136019f014c004d005a00b400550010003b019401400133013201b8004a00490048000b002e012f01",
        "300198013e0060005900b30056000f003c0193013f0145012401b7002a00290026000c000c010f011001",
        "97017461726765745f726f746174696f6e5f72616469616e7300080018010801fc00f100e000da00d400",
        "28001000000002000000080000003d0000001000000010000000230100000000c03f0000c03fee000000",
        "00000000060606060e0e2d0e282601",
    );
    /// Operator 193: Landmarks2TransformMatrix v2 for the left-eye crop (71 indices).
    const L2TM_LEFT_EYE: &str = concat!(
        "6c6566745f726f746174696f6e5f696478006f75747075745f686569676874006f75747075745f776964",
        "74680072696768745f726f746174696f6e5f696478007363616c655f78007363616c655f790073756273",
        "65745f6964787300470021000700a3009000910099009a009b008500f600a100a0009f009e009d00ad00",
        "820019006e001800170016001a007000f300f7001e001d001b001c003800be00e2001f00e400e500e600",
        "e700e800e900f4007100e100e000df00de00dd00bd0023007c002e003500340041008f006f0075007600",
        "7700780079008000f5009c0046003f00690042006b003700c1007461726765745f726f746174696f6e5f",
        "72616469616e730008000601f600ea00df00ce00c800c200280000001200000002000000080000002100",
        "00001000000010000000850000000000c03f0000c03fde00000000000000060606060e0e2d0e282601",
    );
    /// Operator 194: Landmarks2TransformMatrix v2 for the right-eye crop (71 indices).
    const L2TM_RIGHT_EYE: &str = concat!(
        "6c6566745f726f746174696f6e5f696478006f75747075745f686569676874006f75747075745f776964",
        "74680072696768745f726f746174696f6e5f696478007363616c655f78007363616c655f790073756273",
        "65745f696478730047000701f9008601750176017c017d017e016a01d201840183018201810180018e01",
        "6701ff005301fe00fd00fc0000015501cf01d30104010301010102011e019e01be010501c001c101c201",
        "c301c401c501d0015601bd01bc01bb01ba01b9019d010901610114011b011a012701740154015a015b01",
        "5c015d015e016501d1017f012c0125014e01280150011d01a1017461726765745f726f746174696f6e5f",
        "72616469616e730008000601f600ea00df00ce00c800c200280000001200000002000000080000006a01",
        "00001000000010000000070100000000c03f0000c03fde00000000000000060606060e0e2d0e282601",
    );
    /// Operators 195..=197: TransformTensorBilinear v2 (all three identical).
    const TTB: &str =
        "6f75747075745f686569676874006f75747075745f776964746800021c0f02010210100404042401";

    const LIPS_SUBSET: [usize; 80] = [
        61, 146, 91, 181, 84, 17, 314, 405, 321, 375, 291, 185, 40, 39, 37, 0, 267, 269, 270, 409,
        78, 95, 88, 178, 87, 14, 317, 402, 318, 324, 308, 191, 80, 81, 82, 13, 312, 311, 310, 415,
        76, 77, 90, 180, 85, 16, 315, 404, 320, 307, 306, 184, 74, 73, 72, 11, 302, 303, 304, 408,
        62, 96, 89, 179, 86, 15, 316, 403, 319, 325, 292, 183, 42, 41, 38, 12, 268, 271, 272, 407,
    ];
    const LEFT_EYE_SUBSET: [usize; 71] = [
        33, 7, 163, 144, 145, 153, 154, 155, 133, 246, 161, 160, 159, 158, 157, 173, 130, 25, 110,
        24, 23, 22, 26, 112, 243, 247, 30, 29, 27, 28, 56, 190, 226, 31, 228, 229, 230, 231, 232,
        233, 244, 113, 225, 224, 223, 222, 221, 189, 35, 124, 46, 53, 52, 65, 143, 111, 117, 118,
        119, 120, 121, 128, 245, 156, 70, 63, 105, 66, 107, 55, 193,
    ];
    const RIGHT_EYE_SUBSET: [usize; 71] = [
        263, 249, 390, 373, 374, 380, 381, 382, 362, 466, 388, 387, 386, 385, 384, 398, 359, 255,
        339, 254, 253, 252, 256, 341, 463, 467, 260, 259, 257, 258, 286, 414, 446, 261, 448, 449,
        450, 451, 452, 453, 464, 342, 445, 444, 443, 442, 441, 413, 265, 353, 276, 283, 282, 295,
        372, 340, 346, 347, 348, 349, 350, 357, 465, 383, 300, 293, 334, 296, 336, 285, 417,
    ];

    fn real(subset: &[usize], left: usize, right: usize) -> Landmarks2TransformMatrixAttrs {
        Landmarks2TransformMatrixAttrs {
            subset_idxs: subset.to_vec(),
            left_rotation_idx: left,
            right_rotation_idx: right,
            target_rotation_radians: 0.0,
            output_height: 16,
            output_width: 16,
            scale_x: 1.5,
            scale_y: 1.5,
        }
    }

    #[test]
    fn real_landmarks_to_transform_matrix_options() {
        assert_eq!(
            parse_landmarks_to_transform_matrix(&hex(L2TM_LIPS)),
            Ok(real(&LIPS_SUBSET, 61, 291))
        );
        assert_eq!(
            parse_landmarks_to_transform_matrix(&hex(L2TM_LEFT_EYE)),
            Ok(real(&LEFT_EYE_SUBSET, 33, 133))
        );
        assert_eq!(
            parse_landmarks_to_transform_matrix(&hex(L2TM_RIGHT_EYE)),
            Ok(real(&RIGHT_EYE_SUBSET, 362, 263))
        );
    }

    #[test]
    fn real_transform_tensor_bilinear_options() {
        assert_eq!(
            parse_transform_tensor_bilinear(&hex(TTB)),
            Ok(TransformTensorBilinearAttrs {
                output_height: 16,
                output_width: 16
            })
        );
    }

    #[test]
    fn transform_landmarks_has_no_options() {
        assert_eq!(
            parse_transform_landmarks(&[]),
            Ok(TransformLandmarksAttrs {})
        );
    }

    #[test]
    fn wrong_op_options_are_rejected() {
        // The bilinear options lack every key Landmarks2TransformMatrix needs but output size.
        let e = parse_landmarks_to_transform_matrix(&hex(TTB)).unwrap_err();
        assert!(e.contains("subset_idxs"), "{e}");
        assert!(parse_landmarks_to_transform_matrix(&[]).is_err());
        assert!(parse_transform_tensor_bilinear(&[]).is_err());
    }

    fn build(f: impl FnOnce(&mut flexbuffers::MapBuilder<'_>)) -> Vec<u8> {
        let mut b = flexbuffers::Builder::default();
        let mut m = b.start_map();
        f(&mut m);
        m.end_map();
        b.view().to_vec()
    }

    #[test]
    fn builder_written_options_round_trip() {
        // Written by the crate's builder with other widths and encodings: untyped vector with
        // a UInt, ints for the scales, odd subset, target rotation present.
        let bytes = build(|m| {
            let mut v = m.start_vector("subset_idxs");
            v.push(3i64);
            v.push(70000i64);
            v.push(5u8);
            v.push("x");
            v.end_vector();
            m.push("left_rotation_idx", 1u8);
            m.push("right_rotation_idx", 2i32);
            m.push("output_height", 8i64);
            m.push("output_width", 4i32);
            m.push("scale_x", 2i32);
            m.push("scale_y", 0.25f64);
            m.push("target_rotation_radians", -0.5f32);
            m.push("unknown", "ignored");
        });
        // The string element is not an index.
        let e = parse_landmarks_to_transform_matrix(&bytes).unwrap_err();
        assert!(e.contains("subset_idxs: element 3"), "{e}");

        // Untyped vector of mixed int widths and a uint.
        let bytes = build(|m| {
            let mut v = m.start_vector("subset_idxs");
            v.push(3i64);
            v.push(70000i64);
            v.push(5u8);
            v.end_vector();
            m.push("left_rotation_idx", 1u8);
            m.push("right_rotation_idx", 2i32);
            m.push("output_height", 8i64);
            m.push("output_width", 4i32);
            m.push("scale_x", 2i32);
            m.push("scale_y", 0.25f64);
        });
        let got = parse_landmarks_to_transform_matrix(&bytes).unwrap();
        assert_eq!(got.subset_idxs, [3, 70000, 5]);
        assert_eq!(got.target_rotation_radians, 0.0);
        assert_eq!((got.scale_x, got.scale_y), (2.0, 0.25));

        let bytes = build(|m| {
            m.push("subset_idxs", &[3i32, 70000, 5][..]);
            m.push("left_rotation_idx", 1u8);
            m.push("right_rotation_idx", 2i32);
            m.push("output_height", 8i64);
            m.push("output_width", 4i32);
            m.push("scale_x", 2i32);
            m.push("scale_y", 0.25f64);
            m.push("target_rotation_radians", -0.5f32);
            m.push("unknown", "ignored");
        });
        assert_eq!(
            parse_landmarks_to_transform_matrix(&bytes),
            Ok(Landmarks2TransformMatrixAttrs {
                subset_idxs: vec![3, 70000, 5],
                left_rotation_idx: 1,
                right_rotation_idx: 2,
                target_rotation_radians: -0.5,
                output_height: 8,
                output_width: 4,
                scale_x: 2.0,
                scale_y: 0.25,
            })
        );
    }

    #[test]
    fn invalid_values_are_rejected() {
        let base = |m: &mut flexbuffers::MapBuilder<'_>| {
            m.push("left_rotation_idx", 1i32);
            m.push("right_rotation_idx", 2i32);
            m.push("output_width", 4i32);
            m.push("scale_x", 1.0f32);
            m.push("scale_y", 1.0f32);
        };
        let ok = build(|m| {
            base(m);
            m.push("subset_idxs", &[0i32, 1][..]);
            m.push("output_height", 4i32);
        });
        assert!(parse_landmarks_to_transform_matrix(&ok).is_ok());
        for (what, bytes) in [
            (
                "subset_idxs[1]",
                build(|m| {
                    base(m);
                    m.push("subset_idxs", &[0i32, -1][..]);
                    m.push("output_height", 4i32);
                }),
            ),
            (
                "subset_idxs is empty",
                build(|m| {
                    base(m);
                    m.push("subset_idxs", &[] as &[i32]);
                    m.push("output_height", 4i32);
                }),
            ),
            (
                "output_height",
                build(|m| {
                    base(m);
                    m.push("subset_idxs", &[0i32][..]);
                    m.push("output_height", 0i32);
                }),
            ),
            (
                "output_height",
                build(|m| {
                    base(m);
                    m.push("subset_idxs", &[0i32][..]);
                    m.push("output_height", 1i64 << 40);
                }),
            ),
            (
                "output_height",
                build(|m| {
                    base(m);
                    m.push("subset_idxs", &[0i32][..]);
                    m.push("output_height", 4.0f32);
                }),
            ),
            (
                "subset_idxs",
                build(|m| {
                    base(m);
                    m.push("subset_idxs", &[0.0f32, 1.0][..]);
                    m.push("output_height", 4i32);
                }),
            ),
        ] {
            let e = parse_landmarks_to_transform_matrix(&bytes).unwrap_err();
            assert!(e.contains(what), "expected `{what}` in: {e}");
        }
        let neg_scale = build(|m| {
            m.push("output_height", 4i32);
            m.push("output_width", -4i32);
        });
        let e = parse_transform_tensor_bilinear(&neg_scale).unwrap_err();
        assert!(e.contains("output_width"), "{e}");
    }

    fn all_parsers(bytes: &[u8]) {
        // Ok or Err, never a panic.
        let _ = parse_landmarks_to_transform_matrix(bytes);
        let _ = parse_transform_tensor_bilinear(bytes);
        let _ = parse_transform_landmarks(bytes);
    }

    #[test]
    fn truncated_and_shifted_real_options_never_panic() {
        for h in [L2TM_LIPS, L2TM_LEFT_EYE, L2TM_RIGHT_EYE, TTB] {
            let b = hex(h);
            for k in 0..=b.len() {
                all_parsers(&b[..k]);
                all_parsers(&b[k..]);
            }
        }
    }

    #[test]
    fn every_single_byte_change_never_panics() {
        for h in [TTB, L2TM_LEFT_EYE] {
            let b = hex(h);
            for i in 0..b.len() {
                for v in [0u8, 1, 2, 3, 4, 0x7f, 0x80, 0xfe, 0xff] {
                    let mut m = b.clone();
                    m[i] = v;
                    all_parsers(&m);
                    m[i] = b[i].wrapping_add(1);
                    all_parsers(&m);
                    m[i] = b[i] ^ 0x24;
                    all_parsers(&m);
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            all_parsers(&bytes);
        }

        #[test]
        fn random_tails_never_panic(
            bytes in proptest::collection::vec(any::<u8>(), 0..64),
            tail in prop_oneof![
                Just(vec![0x24u8, 0x01]), Just(vec![0x25, 0x01]), Just(vec![0x26, 0x01]),
                Just(vec![0x27, 0x08]), Just(vec![0x26, 0x04]), Just(vec![0x24, 0x02]),
            ],
        ) {
            // Random bodies under a root that claims to be a map, so the map checks are hit.
            let mut b = bytes;
            b.extend(tail);
            all_parsers(&b);
        }

        #[test]
        fn mutated_real_options_never_panic(
            which in 0usize..4,
            edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
            cut in any::<prop::sample::Index>(),
            truncate in any::<bool>(),
        ) {
            let mut b = hex([L2TM_LIPS, L2TM_LEFT_EYE, L2TM_RIGHT_EYE, TTB][which]);
            for (i, v) in edits {
                let i = i.index(b.len());
                b[i] = v;
            }
            if truncate {
                let k = cut.index(b.len());
                b.drain(..k);
            }
            all_parsers(&b);
        }
    }
}
