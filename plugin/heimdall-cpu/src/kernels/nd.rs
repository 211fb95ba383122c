//! Index helpers for tensors of rank at most 4, padded to rank 4 at the front.

/// `shape` padded with leading 1s to rank 4.
pub fn dims4(shape: &[usize]) -> [usize; 4] {
    let mut d = [1; 4];
    let n = shape.len().min(4);
    d[4 - n..].copy_from_slice(&shape[shape.len() - n..]);
    d
}

/// Row-major strides of a rank-4 shape.
pub fn strides4(d: &[usize; 4]) -> [usize; 4] {
    [d[1] * d[2] * d[3], d[2] * d[3], d[3], 1]
}

/// Calls `f(flat_index, coord)` for every coordinate of `d` in row-major order.
pub fn for_each4(d: &[usize; 4], mut f: impl FnMut(usize, [usize; 4])) {
    let mut i = 0;
    for a in 0..d[0] {
        for b in 0..d[1] {
            for c in 0..d[2] {
                for e in 0..d[3] {
                    f(i, [a, b, c, e]);
                    i += 1;
                }
            }
        }
    }
}
