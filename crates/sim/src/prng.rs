/// xoshiro256** (Blackman & Vigna, "Scrambled linear pseudorandom number
/// generators", 2018), seeded by expanding a `u64` with SplitMix64 as its
/// authors recommend. Hand-written because it is twelve lines and the model
/// must own its exact output sequence: a crate upgrade must never change
/// results for a given seed.
#[derive(Clone, Debug)]
pub struct Prng {
    s: [u64; 4],
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Prng {
    pub fn from_seed(seed: u64) -> Prng {
        let mut sm = seed;
        let s = [
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
        ];
        Prng { s }
    }

    /// An independent stream derived from this one (e.g. one per thread).
    pub fn fork(&mut self) -> Prng {
        Prng::from_seed(self.next_u64())
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; the bias is below 2^-32 for
    /// the ranges the model uses, far under anything measurable).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0);
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in [0, 1).
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    #[inline]
    pub fn chance(&mut self, p: f64) -> bool {
        self.next_f64() < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let mut a = Prng::from_seed(42);
        let mut b = Prng::from_seed(42);
        for _ in 0..1000 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let mut c = Prng::from_seed(43);
        assert_ne!(Prng::from_seed(42).next_u64(), c.next_u64());
    }

    #[test]
    fn below_is_in_range_and_covers_it() {
        let mut p = Prng::from_seed(7);
        let mut seen = [0u32; 10];
        for _ in 0..10_000 {
            let v = p.below(10);
            assert!(v < 10);
            seen[v as usize] += 1;
        }
        for count in seen {
            assert!((800..1200).contains(&count), "skewed: {seen:?}");
        }
    }
}
