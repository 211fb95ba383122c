//! TFLite sparse tensors (a modification of the TACO format) and their expansion to dense.
//!
//! A conceptual dense tensor with dims `(d0..dn-1)`, optionally blocked with `k` block dims, is
//! stored by traversing `n + k` levels in `traversal_order`; each level is either dense (every
//! coordinate present, `dense_size` of them) or compressed like the column indices of a CSR
//! matrix (`segments[p]..segments[p+1]` give the stored coordinates under parent position `p`).

use serde::Serialize;

/// Storage of one traversal level.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum DimMeta {
    /// Every coordinate `0..size` is present.
    Dense(usize),
    /// Only the listed coordinates are present (compressed sparse row).
    Csr {
        /// Start of each parent position's run in `indices` (one more entry than parents).
        segments: Vec<u32>,
        /// Coordinates of the stored elements along this level.
        indices: Vec<u32>,
    },
}

/// TFLite sparsity parameters of a constant.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sparsity {
    /// Order in which the `n + k` (original then block) dims are traversed.
    pub traversal_order: Vec<usize>,
    /// For each block dim `n + j`, the original dim it subdivides.
    pub block_map: Vec<usize>,
    /// Storage of each level, in traversal order.
    pub dims: Vec<DimMeta>,
}

impl Sparsity {
    /// Bytes of index metadata (as 32-bit integers).
    pub fn index_bytes(&self) -> usize {
        self.dims
            .iter()
            .map(|d| match d {
                DimMeta::Dense(_) => 4,
                DimMeta::Csr { segments, indices } => 4 * (segments.len() + indices.len()),
            })
            .sum()
    }
}

/// Expands stored `values` into a dense row-major tensor of `dense_shape`.
///
/// Every index, size and count is checked against the dense shape and the number of stored
/// values, so hostile metadata gives an error, never a panic or an unbounded loop.
pub fn densify<T: Copy + Default>(
    sp: &Sparsity,
    values: &[T],
    dense_shape: &[usize],
) -> Result<Vec<T>, String> {
    let n = dense_shape.len();
    check_levels(sp, n)?;
    let numel: usize = dense_shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or("dense shape overflows")?;
    let blocks = Blocks::new(sp, dense_shape)?;
    blocks.check_dims(sp)?;
    let mut dense = vec![T::default(); numel];
    let strides = crate::shape::strides(dense_shape);
    let levels = sp.traversal_order.len();
    let mut coord = vec![0usize; levels];
    let mut next_value = 0usize;
    // Iterative depth-first walk: stack of (level, parent position, cursor, end).
    let mut stack: Vec<(usize, usize, usize)> = Vec::with_capacity(levels);
    if levels == 0 {
        return Err("no levels".into());
    }
    let (a, b) = level_range(sp, 0, 0)?;
    stack.push((0, a, b));
    while let Some(top) = stack.last_mut() {
        let (level, cursor, end) = *top;
        if cursor >= end {
            stack.pop();
            continue;
        }
        top.1 += 1;
        coord[level] = match &sp.dims[level] {
            DimMeta::Dense(s) => cursor % s,
            DimMeta::Csr { indices, .. } => indices[cursor] as usize,
        };
        if level + 1 == levels {
            let at = blocks.offset(sp, &coord, &strides);
            let v = *values
                .get(next_value)
                .ok_or("more stored positions than values")?;
            *dense
                .get_mut(at)
                .ok_or("position outside the dense tensor")? = v;
            next_value += 1;
            if next_value > numel {
                return Err("more stored values than dense elements".into());
            }
        } else {
            let (a, b) = level_range(sp, level + 1, cursor)?;
            if b < a || b - a > numel {
                return Err(format!("level {}: bad range {a}..{b}", level + 1));
            }
            stack.push((level + 1, a, b));
        }
    }
    if next_value != values.len() {
        return Err(format!(
            "{} values stored but {next_value} positions described",
            values.len()
        ));
    }
    Ok(dense)
}

/// Checks that `sp` has one level per traversed dim (the `n` dims of a rank-`n` tensor and its
/// block dims) and that its traversal order is a permutation of them.
fn check_levels(sp: &Sparsity, n: usize) -> Result<(), String> {
    let levels = sp.traversal_order.len();
    if levels != sp.dims.len() {
        return Err(format!(
            "traversal_order has {levels} entries but dim_metadata has {}",
            sp.dims.len()
        ));
    }
    if levels < n || levels - n != sp.block_map.len() {
        return Err(format!(
            "{levels} levels for a rank-{n} tensor with {} block dims",
            sp.block_map.len()
        ));
    }
    let mut seen = vec![false; levels];
    for &t in &sp.traversal_order {
        if t >= levels || seen[t] {
            return Err(format!(
                "traversal_order {:?} is not a permutation",
                sp.traversal_order
            ));
        }
        seen[t] = true;
    }
    Ok(())
}

/// The block geometry of a sparse tensor: how its original dims split into blocks.
struct Blocks {
    /// Rank of the dense tensor.
    n: usize,
    /// Size of each block dim.
    block_size: Vec<usize>,
    /// Size of each original dim counted in blocks.
    outer: Vec<usize>,
}

impl Blocks {
    /// The block sizes of `sp` (its dense block levels) and the original dims of
    /// `dense_shape` counted in blocks, checked to divide evenly.
    fn new(sp: &Sparsity, dense_shape: &[usize]) -> Result<Blocks, String> {
        let n = dense_shape.len();
        let mut block_size = vec![1usize; sp.block_map.len()];
        for (level, &t) in sp.traversal_order.iter().enumerate() {
            if t >= n {
                match &sp.dims[level] {
                    DimMeta::Dense(s) if *s > 0 => block_size[t - n] = *s,
                    _ => return Err("block dimensions must be dense with a positive size".into()),
                }
            }
        }
        let mut outer = dense_shape.to_vec();
        for (j, &d) in sp.block_map.iter().enumerate() {
            if d >= n || !outer[d].is_multiple_of(block_size[j]) {
                return Err(format!(
                    "block map entry {j} ({d}) does not divide the dense shape"
                ));
            }
            outer[d] /= block_size[j];
        }
        Ok(Blocks {
            n,
            block_size,
            outer,
        })
    }

    /// Extent of traversed dim `t`, used to bound dense levels and indices.
    fn extent(&self, t: usize) -> usize {
        if t < self.n {
            self.outer[t]
        } else {
            self.block_size[t - self.n]
        }
    }

    /// Checks each level of `sp` against its dim's extent: dense sizes equal to it, compressed
    /// segments monotonic within the indices and every index inside it.
    fn check_dims(&self, sp: &Sparsity) -> Result<(), String> {
        for (level, &t) in sp.traversal_order.iter().enumerate() {
            match &sp.dims[level] {
                DimMeta::Dense(s) if *s != self.extent(t) => {
                    return Err(format!(
                        "level {level}: dense size {s} but the dimension has {}",
                        self.extent(t)
                    ));
                }
                DimMeta::Csr { segments, indices } => {
                    if segments.windows(2).any(|w| w[0] > w[1])
                        || segments.last().is_some_and(|&l| l as usize > indices.len())
                    {
                        return Err(format!(
                            "level {level}: segments are not monotonic within the indices"
                        ));
                    }
                    if indices.iter().any(|&i| i as usize >= self.extent(t)) {
                        return Err(format!(
                            "level {level}: an index is outside the dimension ({})",
                            self.extent(t)
                        ));
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Row-major offset (with the dense tensor's `strides`) of the element at the traversal
    /// coordinates `coord` (one per level of `sp`).
    fn offset(&self, sp: &Sparsity, coord: &[usize], strides: &[usize]) -> usize {
        let (n, block_size) = (self.n, &self.block_size);
        let mut orig = vec![0usize; n];
        for (l, &t) in sp.traversal_order.iter().enumerate() {
            if t < n {
                orig[t] += coord[l]
                    * sp.block_map
                        .iter()
                        .enumerate()
                        .filter(|(_, d)| **d == t)
                        .map(|(j, _)| block_size[j])
                        .product::<usize>();
            }
        }
        for (l, &t) in sp.traversal_order.iter().enumerate() {
            if t >= n {
                let j = t - n;
                // Inner block coordinate: scaled by the sizes of blocks nested inside it.
                let inner: usize = sp
                    .block_map
                    .iter()
                    .enumerate()
                    .skip(j + 1)
                    .filter(|(_, d)| **d == sp.block_map[j])
                    .map(|(jj, _)| block_size[jj])
                    .product();
                orig[sp.block_map[j]] += coord[l] * inner;
            }
        }
        orig.iter().zip(strides).map(|(i, s)| i * s).sum()
    }
}

/// The positions `a..b` stored at `level` under parent position `parent`.
fn level_range(sp: &Sparsity, level: usize, parent: usize) -> Result<(usize, usize), String> {
    match &sp.dims[level] {
        DimMeta::Dense(s) => Ok((parent * s, parent * s + s)),
        DimMeta::Csr { segments, .. } => {
            let a = *segments
                .get(parent)
                .ok_or_else(|| format!("level {level}: missing segment {parent}"))?
                as usize;
            let b = *segments
                .get(parent + 1)
                .ok_or_else(|| format!("level {level}: missing segment {}", parent + 1))?
                as usize;
            Ok((a, b))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csr_matrix() {
        // [[1, 0, 2], [0, 0, 0], [0, 3, 0]] stored row-major with sparse columns.
        let sp = Sparsity {
            traversal_order: vec![0, 1],
            block_map: vec![],
            dims: vec![
                DimMeta::Dense(3),
                DimMeta::Csr {
                    segments: vec![0, 2, 2, 3],
                    indices: vec![0, 2, 1],
                },
            ],
        };
        let d = densify(&sp, &[1.0f32, 2.0, 3.0], &[3, 3]).unwrap();
        assert_eq!(d, vec![1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 3.0, 0.0]);
    }

    #[test]
    fn column_major_traversal() {
        // Same matrix traversed column first: columns dense, rows sparse.
        let sp = Sparsity {
            traversal_order: vec![1, 0],
            block_map: vec![],
            dims: vec![
                DimMeta::Dense(3),
                DimMeta::Csr {
                    segments: vec![0, 1, 2, 3],
                    indices: vec![0, 2, 0],
                },
            ],
        };
        let d = densify(&sp, &[1.0f32, 3.0, 2.0], &[3, 3]).unwrap();
        assert_eq!(d, vec![1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 3.0, 0.0]);
    }

    #[test]
    fn block_sparse() {
        // 2x4 matrix in 1x2 blocks along columns: blocks (row, blockcol).
        // Dense: [[1,2,0,0],[0,0,3,4]].
        let sp = Sparsity {
            traversal_order: vec![0, 1, 2],
            block_map: vec![1],
            dims: vec![
                DimMeta::Dense(2),
                DimMeta::Csr {
                    segments: vec![0, 1, 2],
                    indices: vec![0, 1],
                },
                DimMeta::Dense(2),
            ],
        };
        let d = densify(&sp, &[1.0f32, 2.0, 3.0, 4.0], &[2, 4]).unwrap();
        assert_eq!(d, vec![1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 3.0, 4.0]);
    }

    #[test]
    fn hostile_metadata_is_an_error() {
        let sp = Sparsity {
            traversal_order: vec![0, 1],
            block_map: vec![],
            dims: vec![
                DimMeta::Dense(3),
                DimMeta::Csr {
                    segments: vec![0, 9, 2, 3],
                    indices: vec![0, 2, 1],
                },
            ],
        };
        assert!(densify(&sp, &[1.0f32, 2.0, 3.0], &[3, 3]).is_err());
        let sp = Sparsity {
            traversal_order: vec![0, 0],
            block_map: vec![],
            dims: vec![DimMeta::Dense(3), DimMeta::Dense(3)],
        };
        assert!(densify(&sp, &[0.0f32; 9], &[3, 3]).is_err());
    }
}
