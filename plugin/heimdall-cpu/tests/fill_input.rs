//! `CpuModel::fill_input` writes an input in place over the model's threads: every row once, the
//! same model output as `set_input` with the same values, on 1, 2, 4 and 7 threads; rows that do
//! not divide the input and a missing input are errors.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use heimdall_cpu::CpuError;
use heimdall_ir::{Epilogue, OpKind, UnaryKind};

/// A value of input row `row`, column value `i` (negative ones, for the ReLU to change).
fn value(row: usize, i: usize) -> f32 {
    ((row * 131 + i * 7) % 97) as f32 - 40.0
}

#[test]
fn filled_rows_are_the_set_input() {
    let (h, w, c) = (96, 64, 3);
    let mut b = common::Builder::default();
    let x = b.tensor(&[1, h, w, c], None);
    let y = b.op(
        OpKind::Unary(UnaryKind::Relu),
        vec![x],
        &[1, h, w, c],
        Epilogue::default(),
    );
    let g = b.finish("relu", x, vec![y]);
    let row_len = w * c;
    let data: Vec<f32> = (0..h * row_len)
        .map(|k| value(k / row_len, k % row_len))
        .collect();
    let want = common::run(&mut common::model(&g, 1), &data, None);
    for threads in [1, 2, 4, 7] {
        let mut m = common::model(&g, threads);
        let rows_written = AtomicUsize::new(0);
        m.fill_input(0, row_len, |rows, values| {
            assert_eq!(values.len(), rows.len() * row_len);
            for (r, line) in rows.clone().zip(values.chunks_exact_mut(row_len)) {
                for (i, v) in line.iter_mut().enumerate() {
                    *v = value(r, i);
                }
            }
            rows_written.fetch_add(rows.len(), Ordering::Relaxed);
        })
        .expect("fill");
        assert_eq!(rows_written.into_inner(), h, "{threads} threads");
        m.run().expect("run");
        assert_eq!(m.output(0).expect("output"), &want[..], "{threads} threads");
        let e = m
            .fill_input(0, 7, |_, _| {})
            .expect_err("7 does not divide 96 × 64 × 3");
        assert!(matches!(e, CpuError::InputRows { row_len: 7, .. }), "{e}");
        let e = m.fill_input(1, row_len, |_, _| {}).expect_err("one input");
        assert!(matches!(e, CpuError::NoSuchTensor { .. }), "{e}");
        assert!(m.fill_input(0, 0, |_, _| {}).is_err());
    }
}
