//! The `.npy` reader and writer: a file NumPy wrote (a golden input, its header checked by hand),
//! a round trip, and malformed files refused with a typed error naming the file.

use std::path::PathBuf;

use heimdall_npy::{NpyError, NpyTensor, parse_npy, read_npy, write_npy};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A `.npy` file of version 1.0 with `header` (padded as NumPy pads it) and `body`.
fn npy(header: &str, body: &[u8]) -> Vec<u8> {
    let mut h = header.to_string();
    while !(10 + h.len() + 1).is_multiple_of(64) {
        h.push(' ');
    }
    h.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    out.extend_from_slice(h.as_bytes());
    out.extend_from_slice(body);
    out
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[test]
fn reads_a_golden_numpy_wrote() {
    // Header: {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 320, 320), }
    let t = read_npy(root().join("assets/goldens/PP-OCRv6_det_small/astronaut/input_0.npy"))
        .expect("read");
    assert_eq!(t.shape, vec![1, 3, 320, 320]);
    assert_eq!(t.data.len(), 3 * 320 * 320);
    assert!(t.data.iter().all(|v| v.is_finite()));
}

#[test]
fn hand_made_files_parse_to_their_values() {
    let bytes = npy(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
        &f32_bytes(&[1.0, -2.5, 0.0, 7.25]),
    );
    assert_eq!(
        parse_npy(&bytes).expect("parse"),
        NpyTensor {
            shape: vec![2, 2],
            data: vec![1.0, -2.5, 0.0, 7.25]
        }
    );
    // Big-endian float32 is float32 too.
    let be: Vec<u8> = [3.0f32, 4.0].iter().flat_map(|v| v.to_be_bytes()).collect();
    let bytes = npy(
        "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }",
        &be,
    );
    assert_eq!(parse_npy(&bytes).expect("parse").data, vec![3.0, 4.0]);
}

#[test]
fn written_files_read_back_the_same() {
    let path = std::env::temp_dir().join(format!("heimdall-npy-{}.npy", std::process::id()));
    let data: Vec<f32> = (0..24).map(|i| i as f32 * 0.5 - 3.0).collect();
    write_npy(&path, &[2, 3, 4], &data).expect("write");
    let t = read_npy(&path).expect("read");
    std::fs::remove_file(&path).ok();
    assert_eq!(t.shape, vec![2, 3, 4]);
    assert_eq!(t.data, data);
}

#[test]
fn malformed_files_are_typed_errors() {
    let cases: [(&str, Vec<u8>, &str); 5] = [
        ("not npy", b"hello, world".to_vec(), "not a .npy file"),
        (
            "float64",
            npy(
                "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }",
                &1.0f64.to_le_bytes(),
            ),
            "not float32",
        ),
        (
            "Fortran order",
            npy(
                "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
                &f32_bytes(&[0.0; 4]),
            ),
            "Fortran",
        ),
        (
            "truncated",
            npy(
                "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }",
                &f32_bytes(&[0.0; 2]),
            ),
            "",
        ),
        (
            "int32",
            npy(
                "{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }",
                &1i32.to_le_bytes(),
            ),
            "not float32",
        ),
    ];
    for (what, bytes, says) in cases {
        let err = parse_npy(&bytes).expect_err(what);
        assert!(err.contains(says), "{what}: {err}");
    }
    let dir = std::env::temp_dir().join(format!("heimdall-npy-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.npy");
    std::fs::write(&bad, b"hello").unwrap();
    match read_npy(&bad) {
        Err(NpyError::Format { path, .. }) => assert!(path.ends_with("bad.npy")),
        other => panic!("{other:?}"),
    }
    match read_npy(dir.join("missing.npy")) {
        Err(NpyError::Io { path, .. }) => assert!(path.ends_with("missing.npy")),
        other => panic!("{other:?}"),
    }
    match write_npy(dir.join("short.npy"), &[2, 2], &[0.0; 3]) {
        Err(NpyError::Format { message, .. }) => assert!(message.contains("3 values"), "{message}"),
        other => panic!("{other:?}"),
    }
    std::fs::remove_dir_all(&dir).ok();
}
