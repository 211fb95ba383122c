//! The tests' deterministic pseudo-random numbers: one xorshift64 generator, so that every test
//! that needs reproducible noise, data or cut points draws them the same way.

/// Marsaglia's xorshift64 (shifts 13, 7, 17), seeded from `seed` through a multiplicative hash
/// (never zero). Not for anything but reproducible test inputs.
#[derive(Clone, Debug)]
pub struct XorShift(u64);

impl XorShift {
    /// The generator for `seed`.
    pub fn new(seed: u64) -> XorShift {
        XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.0;
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        *s
    }

    /// `n` values in [-1, 1): the top 24 bits of each draw, scaled.
    pub fn values(seed: u64, n: usize) -> Vec<f32> {
        let mut r = XorShift::new(seed);
        (0..n)
            .map(|_| (r.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first draws of seed 1, by hand: s = 0x9E3779B97F4A7C15 | 1, then one xorshift step.
    #[test]
    fn draws_follow_xorshift64() {
        let mut s: u64 = 0x9E37_79B9_7F4A_7C15;
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        assert_eq!(XorShift::new(1).next_u64(), s);
        let v = XorShift::values(7, 1000);
        assert!(v.iter().all(|x| (-1.0..1.0).contains(x)));
        assert!(v.iter().any(|&x| x < -0.9) && v.iter().any(|&x| x > 0.9));
    }
}
