//! Element-wise functions of two tensors with NumPy broadcasting (TFLite ADD, SUB, MUL, PRELU;
//! ONNX DIV, POW, MAXIMUM, MINIMUM and the comparisons), each with an optional fused
//! [`Epilogue`].
//!
//! Shapes have rank at most 4 and are right-aligned as in NumPy. Work is done per output row
//! (innermost dimension) with contiguous or stride-0 operands, which covers the fast paths
//! (same shape, scalar, per-channel) with vectorisable loops; same-shape and scalar cases run as
//! one flat row. Rows are split over [`Par`].
//!
//! Dispatch: [`prepare`] picks the operation (PRELU has its own kernel).

use heimdall_ir::BinaryFn;

use crate::kernels::{Epilogue, Par};
use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

mod channel_pad;
pub use channel_pad::add_channel_padded;

/// Values a part must have at least before the rows are split over threads
/// (about 3 µs of one core's time: a job costs the pool ~1 µs when its threads spin, and a
/// thread's parts are the rows it wrote in the op before, `crate::kernels::threads`).
const MIN_VALUES_PER_PART: usize = 1 << 13;

/// Values of the repeated per-channel vector of a tensor-by-vector operation.
const PATTERN: usize = 512;

/// A binary element-wise operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// `a / b`.
    Div,
    /// `max(a, b)`.
    Max,
    /// `min(a, b)`.
    Min,
    /// `a ^ b` (ONNX `Pow`; squares and square roots are exact shortcuts).
    Pow,
    /// `1.0` where `a < b`, else `0.0`.
    Less,
    /// `1.0` where `a > b`, else `0.0`.
    Greater,
    /// `1.0` where `a == b`, else `0.0`.
    Equal,
    /// `1.0` where `a <= b`, else `0.0`.
    LessOrEqual,
    /// `1.0` where `a >= b`, else `0.0`.
    GreaterOrEqual,
}

/// `output = ep(a op b)` with `a` of shape `a_shape` and `b` of shape `b_shape` broadcast to
/// the output shape (their NumPy broadcast); `ep.residual` and per-channel PReLU alphas index
/// the output, whose innermost dimension is the broadcast's last.
#[allow(clippy::too_many_arguments)]
pub fn binary(
    par: &Par,
    op: BinaryOp,
    a: &[f32],
    a_shape: &[usize],
    b: &[f32],
    b_shape: &[usize],
    output: &mut [f32],
    ep: &Epilogue,
) {
    match op {
        BinaryOp::Add => broadcast(par, |x, y| x + y, a, a_shape, b, b_shape, output, ep),
        BinaryOp::Sub => broadcast(par, |x, y| x - y, a, a_shape, b, b_shape, output, ep),
        BinaryOp::Mul => broadcast(par, |x, y| x * y, a, a_shape, b, b_shape, output, ep),
        BinaryOp::Div => broadcast(par, |x, y| x / y, a, a_shape, b, b_shape, output, ep),
        BinaryOp::Max => broadcast(
            par,
            |x: f32, y: f32| if x > y { x } else { y },
            a,
            a_shape,
            b,
            b_shape,
            output,
            ep,
        ),
        BinaryOp::Min => broadcast(
            par,
            |x: f32, y: f32| if x < y { x } else { y },
            a,
            a_shape,
            b,
            b_shape,
            output,
            ep,
        ),
        BinaryOp::Pow => broadcast(par, pow, a, a_shape, b, b_shape, output, ep),
        BinaryOp::Less => broadcast(
            par,
            |x, y| f32::from(u8::from(x < y)),
            a,
            a_shape,
            b,
            b_shape,
            output,
            ep,
        ),
        BinaryOp::Greater => broadcast(
            par,
            |x, y| f32::from(u8::from(x > y)),
            a,
            a_shape,
            b,
            b_shape,
            output,
            ep,
        ),
        BinaryOp::Equal => broadcast(
            par,
            |x, y| f32::from(u8::from(x == y)),
            a,
            a_shape,
            b,
            b_shape,
            output,
            ep,
        ),
        BinaryOp::LessOrEqual => broadcast(
            par,
            |x, y| f32::from(u8::from(x <= y)),
            a,
            a_shape,
            b,
            b_shape,
            output,
            ep,
        ),
        BinaryOp::GreaterOrEqual => broadcast(
            par,
            |x, y| f32::from(u8::from(x >= y)),
            a,
            a_shape,
            b,
            b_shape,
            output,
            ep,
        ),
    }
}

/// `x ^ y` with the common exponents computed exactly.
fn pow(x: f32, y: f32) -> f32 {
    if y == 2.0 {
        x * x
    } else if y == 1.0 {
        x
    } else if y == 0.5 {
        x.sqrt()
    } else {
        x.powf(y)
    }
}

/// TFLite PRELU with a broadcast alpha: `output = ep(x >= 0 ? x : alpha * x)`.
pub fn prelu(
    par: &Par,
    x: &[f32],
    x_shape: &[usize],
    alpha: &[f32],
    alpha_shape: &[usize],
    output: &mut [f32],
    ep: &Epilogue,
) {
    broadcast(
        par,
        |x: f32, a: f32| x.max(0.0) + a * x.min(0.0),
        x,
        x_shape,
        alpha,
        alpha_shape,
        output,
        ep,
    );
}

/// Right-aligns `shape` into rank 4 and returns element strides, 0 along broadcast dims.
fn strides4(shape: &[usize], out: &[usize; 4]) -> [usize; 4] {
    let mut dims = [1usize; 4];
    dims[4 - shape.len()..].copy_from_slice(shape);
    let mut strides = [0usize; 4];
    let mut s = 1;
    for d in (0..4).rev() {
        strides[d] = if dims[d] == 1 && out[d] != 1 { 0 } else { s };
        s *= dims[d];
    }
    strides
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn broadcast<F>(
    par: &Par,
    f: F,
    a: &[f32],
    a_shape: &[usize],
    b: &[f32],
    b_shape: &[usize],
    output: &mut [f32],
    ep: &Epilogue,
) where
    F: Fn(f32, f32) -> f32 + Sync + Copy,
{
    debug_assert!(a_shape.len() <= 4 && b_shape.len() <= 4);
    let mut out = [1usize; 4];
    let rank = a_shape.len().max(b_shape.len());
    for d in 0..4 {
        let get = |s: &[usize]| {
            if d + s.len() >= 4 {
                s[d + s.len() - 4]
            } else {
                1
            }
        };
        out[d] = get(a_shape).max(get(b_shape));
        if get(a_shape) == 0 || get(b_shape) == 0 {
            out[d] = 0;
        }
    }
    let total: usize = out.iter().product();
    debug_assert_eq!(output.len(), total);
    if total == 0 {
        return;
    }
    let channels = if rank == 0 { 1 } else { out[3] };
    let (sa, sb) = (strides4(a_shape, &out), strides4(b_shape, &out));
    // Flat cases (same shape, or a scalar operand) run as long contiguous pieces; so does a
    // whole tensor with a per-channel vector (a bias, a scale), row by row inside the piece;
    // the others one output row (innermost dimension) at a time.
    let flat = (a.len() == total || a.len() == 1) && (b.len() == total || b.len() == 1);
    let per_channel = |s: &[usize; 4], len: usize| {
        len == channels && s[3] == 1 && (0..3).all(|d| s[d] == 0 || out[d] == 1)
    };
    let row_vector = if rank > 0 && channels > 1 && !flat {
        if a.len() == total && per_channel(&sb, b.len()) {
            Some(false)
        } else if b.len() == total && per_channel(&sa, a.len()) {
            Some(true)
        } else {
            None
        }
    } else {
        None
    };
    let (ia, ib) = if flat {
        (usize::from(a.len() != 1), usize::from(b.len() != 1))
    } else {
        (sa[3], sb[3])
    };
    let piece = if flat || row_vector.is_some() {
        (4096 / channels).max(1) * channels
    } else {
        channels
    };
    let min_rows = MIN_VALUES_PER_PART.div_ceil(channels);
    let geometry = Geometry {
        out,
        channels,
        sa,
        sb,
        flat,
        row_vector,
        ia,
        ib,
        piece,
    };
    par.for_rows(output, channels, min_rows, |rows, out_part| {
        crate::kernels::isa::widest(|| broadcast_rows(rows, out_part, &geometry, a, b, f, ep));
    });
}

/// Where [`broadcast`]'s operands are read from.
struct Geometry {
    out: [usize; 4],
    channels: usize,
    sa: [usize; 4],
    sb: [usize; 4],
    flat: bool,
    row_vector: Option<bool>,
    ia: usize,
    ib: usize,
    piece: usize,
}

/// Output rows `rows` of [`broadcast`] into `out_part`: each piece of the part from the row
/// vector ([`vector_piece`]) or strided operands ([`strided_piece`]), then the epilogue.
#[inline(always)]
fn broadcast_rows<F>(
    rows: std::ops::Range<usize>,
    out_part: &mut [f32],
    g: &Geometry,
    a: &[f32],
    b: &[f32],
    f: F,
    ep: &Epilogue,
) where
    F: Fn(f32, f32) -> f32 + Copy,
{
    let channels = g.channels;
    let first = rows.start * channels;
    for (k, o) in out_part.chunks_mut(g.piece).enumerate() {
        let start = first + k * g.piece;
        match g.row_vector {
            Some(a_is_vector) => vector_piece(o, start, channels, a_is_vector, a, b, f),
            None => strided_piece(o, start, g, a, b, f),
        }
        if !ep.is_identity() {
            ep.apply(o, start, channels);
        }
    }
}

/// One piece `o` (starting at flat output index `start`) of a broadcast where one operand is a
/// vector of `channels` repeated over every row (`a` when `a_is_vector`) and the other is full.
#[inline(always)]
fn vector_piece<F>(
    o: &mut [f32],
    start: usize,
    channels: usize,
    a_is_vector: bool,
    a: &[f32],
    b: &[f32],
    f: F,
) where
    F: Fn(f32, f32) -> f32 + Copy,
{
    if channels <= PATTERN / 2 {
        pattern_piece(o, start, channels, a_is_vector, a, b, f);
        return;
    }
    let n = o.len();
    for (r, o) in o.chunks_exact_mut(channels).enumerate() {
        let at = start + r * channels;
        if a_is_vector {
            o.iter_mut()
                .zip(a)
                .zip(&b[at..at + channels])
                .for_each(|((o, x), y)| *o = f(*x, *y));
        } else {
            o.iter_mut()
                .zip(&a[at..at + channels])
                .zip(b)
                .for_each(|((o, x), y)| *o = f(*x, *y));
        }
    }
    debug_assert_eq!(n % channels, 0);
}

/// [`vector_piece`] for few channels (a squeeze-and-excitation scale of 16): the vector repeated
/// over whole rows into `pattern`, then long loops over pieces of that length instead of one
/// short loop per row.
#[inline(always)]
fn pattern_piece<F>(
    o: &mut [f32],
    start: usize,
    channels: usize,
    a_is_vector: bool,
    a: &[f32],
    b: &[f32],
    f: F,
) where
    F: Fn(f32, f32) -> f32 + Copy,
{
    let n = o.len();
    let vector = if a_is_vector { a } else { b };
    let len = PATTERN / channels * channels;
    let mut pattern = [0f32; PATTERN];
    for row in pattern[..len].chunks_exact_mut(channels) {
        row.copy_from_slice(&vector[..channels]);
    }
    let other = if a_is_vector { b } else { a };
    let other = &other[start..start + n];
    for (o, x) in o.chunks_mut(len).zip(other.chunks(len)) {
        let p = &pattern[..o.len()];
        if a_is_vector {
            for ((o, v), y) in o.iter_mut().zip(p).zip(x) {
                *o = f(*v, *y);
            }
        } else {
            for ((o, x), v) in o.iter_mut().zip(x).zip(p) {
                *o = f(*x, *v);
            }
        }
    }
}

/// One piece `o` (starting at flat output index `start`) of a broadcast with no row vector: each
/// operand read whole (step 1) or as one repeated value (step 0) from its strided start.
#[inline(always)]
fn strided_piece<F>(o: &mut [f32], start: usize, g: &Geometry, a: &[f32], b: &[f32], f: F)
where
    F: Fn(f32, f32) -> f32 + Copy,
{
    let Geometry {
        out,
        channels,
        sa,
        sb,
        flat,
        ia,
        ib,
        ..
    } = *g;
    let (a0, b0) = if flat {
        (start * ia, start * ib)
    } else {
        let r = start / channels;
        let (d2, r) = (r % out[2], r / out[2]);
        let (d1, d0) = (r % out[1], r / out[1]);
        (
            d0 * sa[0] + d1 * sa[1] + d2 * sa[2],
            d0 * sb[0] + d1 * sb[1] + d2 * sb[2],
        )
    };
    let n = o.len();
    match (ia, ib) {
        (1, 1) => o
            .iter_mut()
            .zip(&a[a0..a0 + n])
            .zip(&b[b0..b0 + n])
            .for_each(|((o, x), y)| *o = f(*x, *y)),
        (1, _) => {
            let y = b[b0];
            o.iter_mut()
                .zip(&a[a0..a0 + n])
                .for_each(|(o, x)| *o = f(*x, y));
        }
        (_, 1) => {
            let x = a[a0];
            o.iter_mut()
                .zip(&b[b0..b0 + n])
                .for_each(|(o, y)| *o = f(x, *y));
        }
        _ => {
            let v = f(a[a0], b[b0]);
            o.fill(v);
        }
    }
}

/// A binary operation on two broadcast operands.
struct Binary {
    op: BinaryOp,
    a: Vec<usize>,
    b: Vec<usize>,
}

impl Kernel for Binary {
    fn run(&self, io: StepIo<'_>) {
        let (a, b) = (io.inputs.get(0), io.inputs.get(1));
        binary(io.par, self.op, a, &self.a, b, &self.b, io.out, io.ep);
    }
}

/// A PRELU with a broadcast alpha.
struct Prelu {
    x: Vec<usize>,
    alpha: Vec<usize>,
}

impl Kernel for Prelu {
    fn run(&self, io: StepIo<'_>) {
        let (x, alpha) = (io.inputs.get(0), io.inputs.get(1));
        prelu(io.par, x, &self.x, alpha, &self.alpha, io.out, io.ep);
    }
}

/// Prepares a binary op.
pub(crate) fn prepare(cx: &PrepareCx, f: BinaryFn) -> Result<Prepared, String> {
    let (a, b) = (cx.shape(0), cx.shape(1));
    if let Some(padded) = cx.channel_padded {
        if f != BinaryFn::Add {
            return Err(format!("a fused channel pad read by {f:?}"));
        }
        return channel_pad::prepare(padded, &a, &b);
    }
    let op = match f {
        BinaryFn::Prelu => return Ok(Prepared::new(Prelu { x: a, alpha: b })),
        BinaryFn::Add => BinaryOp::Add,
        BinaryFn::Sub => BinaryOp::Sub,
        BinaryFn::Mul => BinaryOp::Mul,
        BinaryFn::Div => BinaryOp::Div,
        BinaryFn::Pow => BinaryOp::Pow,
        BinaryFn::Max => BinaryOp::Max,
        BinaryFn::Min => BinaryOp::Min,
        BinaryFn::Less => BinaryOp::Less,
        BinaryFn::Greater => BinaryOp::Greater,
        BinaryFn::Equal => BinaryOp::Equal,
        BinaryFn::LessOrEqual => BinaryOp::LessOrEqual,
        BinaryFn::GreaterOrEqual => BinaryOp::GreaterOrEqual,
    };
    Ok(Prepared::new(Binary { op, a, b }))
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // naive references index on purpose
mod tests {
    use super::*;
    use crate::kernels::Act;
    use crate::kernels::testutil::*;
    use proptest::prelude::*;

    /// A broadcast binary problem: shapes derived from one output shape by setting dims to 1
    /// and dropping leading dims.
    fn shapes() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
        (
            proptest::collection::vec(1..6usize, 1..=4),
            0u8..16,
            0u8..16,
            0..4usize,
            0..4usize,
        )
            .prop_map(|(out, ma, mb, da, db)| {
                let derive = |m: u8, drop: usize| -> Vec<usize> {
                    let s: Vec<usize> = out
                        .iter()
                        .enumerate()
                        .map(|(i, &d)| if m & (1 << i) != 0 { 1 } else { d })
                        .collect();
                    s[drop.min(s.len())..].to_vec()
                };
                (derive(ma, da), derive(mb, db))
            })
    }

    fn reference(op: BinaryOp, a: &[f32], ash: &[usize], b: &[f32], bsh: &[usize]) -> Vec<f32> {
        let out = heimdall_ir::shape::broadcast(ash, bsh).unwrap();
        let total: usize = out.iter().product();
        let index = |shape: &[usize], coord: &[usize]| -> usize {
            let off = coord.len() - shape.len();
            shape.iter().enumerate().fold(0, |acc, (i, &d)| {
                acc * d + if d == 1 { 0 } else { coord[off + i] }
            })
        };
        (0..total)
            .map(|flat| {
                let mut coord = vec![0; out.len()];
                let mut rem = flat;
                for d in (0..out.len()).rev() {
                    coord[d] = rem % out[d];
                    rem /= out[d];
                }
                let (x, y) = (a[index(ash, &coord)], b[index(bsh, &coord)]);
                match op {
                    BinaryOp::Add => x + y,
                    BinaryOp::Sub => x - y,
                    BinaryOp::Mul => x * y,
                    BinaryOp::Div => x / y,
                    BinaryOp::Max => x.max(y),
                    BinaryOp::Min => x.min(y),
                    BinaryOp::Pow => (x as f64).powf(y as f64) as f32,
                    BinaryOp::Less => f32::from(u8::from(x < y)),
                    BinaryOp::Greater => f32::from(u8::from(x > y)),
                    BinaryOp::Equal => f32::from(u8::from(x == y)),
                    BinaryOp::LessOrEqual => f32::from(u8::from(x <= y)),
                    BinaryOp::GreaterOrEqual => f32::from(u8::from(x >= y)),
                }
            })
            .collect()
    }

    #[test]
    fn per_channel_vector_in_long_pieces_matches_reference() {
        // A whole [1, 50, 60, 24] tensor with a [24] vector on either side, split over threads,
        // with a fused ReLU: the row-vector path (pieces of many rows).
        let (full, vec_shape) = ([1usize, 50, 60, 24], [24usize]);
        let x = data(11, 50 * 60 * 24);
        let v = data(12, 24);
        let ep = Epilogue::act(crate::kernels::Act::Relu);
        let relu = |r: Vec<f32>| r.into_iter().map(|y| y.max(0.0)).collect::<Vec<_>>();
        let mut out = vec![f32::NAN; x.len()];
        binary(
            &Par::new(3),
            BinaryOp::Sub,
            &x,
            &full,
            &v,
            &vec_shape,
            &mut out,
            &ep,
        );
        assert_close(
            &out,
            &relu(reference(BinaryOp::Sub, &x, &full, &v, &vec_shape)),
        );
        let mut out = vec![f32::NAN; x.len()];
        binary(
            &Par::new(3),
            BinaryOp::Sub,
            &v,
            &vec_shape,
            &x,
            &full,
            &mut out,
            &ep,
        );
        assert_close(
            &out,
            &relu(reference(BinaryOp::Sub, &v, &vec_shape, &x, &full)),
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn binary_matches_reference((ash, bsh) in shapes(), op in prop_oneof![Just(BinaryOp::Add), Just(BinaryOp::Sub), Just(BinaryOp::Mul), Just(BinaryOp::Div), Just(BinaryOp::Max), Just(BinaryOp::Min), Just(BinaryOp::Pow), Just(BinaryOp::Less), Just(BinaryOp::GreaterOrEqual)], seed in 0u64..1000) {
            let a: Vec<f32> = data(seed, ash.iter().product()).iter().map(|v| if op == BinaryOp::Pow { v.abs() + 0.1 } else { *v }).collect();
            let b: Vec<f32> = data(seed + 1, bsh.iter().product()).iter().map(|v| if op == BinaryOp::Div { v.abs() + 0.5 } else { *v }).collect();
            let reference = reference(op, &a, &ash, &b, &bsh);
            let mut out = vec![f32::NAN; reference.len()];
            binary(&Par::new(1), op, &a, &ash, &b, &bsh, &mut out, &Epilogue::NONE);
            if op == BinaryOp::Pow {
                assert_close(&out, &reference);
            } else {
                prop_assert_eq!(out, reference);
            }
        }

        #[test]
        fn prelu_matches_reference((xsh, ash) in shapes(), seed in 0u64..1000) {
            let x = data(seed, xsh.iter().product());
            let alpha = data(seed + 1, ash.iter().product());
            let prod = reference(BinaryOp::Mul, &x, &xsh, &alpha, &ash);
            let xb = reference(BinaryOp::Add, &x, &xsh, &vec![0.0; alpha.len()], &ash);
            let expected: Vec<f32> = xb.iter().zip(&prod).map(|(x, p)| if *x >= 0.0 { *x } else { *p }).collect();
            let mut out = vec![f32::NAN; expected.len()];
            prelu(&Par::new(1), &x, &xsh, &alpha, &ash, &mut out, &Epilogue::NONE);
            prop_assert_eq!(out, expected);
        }
    }

    #[test]
    fn binary_threads_bit_identical() {
        let a = data(1, 64 * 64 * 24);
        let b = data(2, 24);
        let mut o1 = vec![0.0; a.len()];
        let mut o2 = o1.clone();
        let alpha = data(3, 24);
        let ep = Epilogue {
            residual: Some(&a),
            act: Act::Prelu(&alpha),
        };
        binary(
            &Par::new(1),
            BinaryOp::Mul,
            &a,
            &[1, 64, 64, 24],
            &b,
            &[1, 1, 24],
            &mut o1,
            &ep,
        );
        binary(
            &Par::new(2),
            BinaryOp::Mul,
            &a,
            &[1, 64, 64, 24],
            &b,
            &[1, 1, 24],
            &mut o2,
            &ep,
        );
        assert_eq!(o1, o2);
        binary(
            &Par::new(2),
            BinaryOp::Add,
            &a,
            &[64, 64, 24],
            &a,
            &[64, 64, 24],
            &mut o2,
            &ep,
        );
        binary(
            &Par::new(1),
            BinaryOp::Add,
            &a,
            &[64, 64, 24],
            &a,
            &[64, 64, 24],
            &mut o1,
            &ep,
        );
        assert_eq!(o1, o2);
    }
}
