//! Zeroed `f32` buffers whose first value lies on a 64-byte boundary (a cache line, an AVX-512
//! vector): the arena's tensor offsets are multiples of 16 values (`crate::arena`), so every
//! tensor starts on a cache line only if the arena does. A `Vec<f32>` is only 4-byte aligned,
//! and the large ones glibc maps on their own start 16 bytes into a page: every 64-byte load of
//! a tensor then straddled two cache lines.

use std::ops::{Deref, DerefMut};

/// Values of the alignment (64 bytes).
const ALIGN_VALUES: usize = 16;

/// `len` zeroed values starting on a 64-byte boundary.
pub(crate) struct AlignedBuf {
    data: Vec<f32>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    /// `len` zeros, the first on a 64-byte boundary.
    pub(crate) fn zeroed(len: usize) -> AlignedBuf {
        let data = vec![0.0f32; len + ALIGN_VALUES - 1];
        // At most 15 values on: `data` is 4-byte aligned.
        let start = data.as_ptr().align_offset(64).min(ALIGN_VALUES - 1);
        AlignedBuf { data, start, len }
    }
}

impl Deref for AlignedBuf {
    type Target = [f32];

    fn deref(&self) -> &[f32] {
        &self.data[self.start..self.start + self.len]
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [f32] {
        &mut self.data[self.start..self.start + self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_on_a_cache_line_and_holds_len_zeros() {
        for len in [0, 1, 15, 16, 17, 1000, 1 << 20] {
            let mut b = AlignedBuf::zeroed(len);
            assert_eq!(b.len(), len);
            assert_eq!(b.as_ptr() as usize % 64, 0, "{len}");
            assert!(b.iter().all(|&v| v == 0.0));
            if len > 0 {
                b[len - 1] = 1.0;
                assert_eq!(b[len - 1], 1.0);
            }
        }
    }
}
