//! A keyed pseudo-random bijection on `[0, n)` for any `n`, in O(1) memory.
//!
//! The zipf generator uses it to scatter popularity ranks over the pages of the
//! footprint, and the chase generator to order a random cycle through 2^27 lines
//! without storing a permutation array.
//!
//! The construction is format-preserving encryption: a 4-round Feistel network on a
//! domain slightly larger than `[0, n)`, and cycle-walking to stay below `n`. A
//! number `x` of the domain is split into a low part of `b` bits, `x mod 2^b`, with
//! `b` half the bits of `n`, and a high part `x >> b` in `[0, m)`, `m = ⌈n / 2^b⌉`.
//! Rounds alternate: the low part is XORed with a keyed hash of the high part, then
//! the high part has a keyed hash of the low part, reduced to `[0, m)`, added to it
//! modulo `m`. Each round changes one part by a bijection chosen by the other, so it
//! can be undone, and the network permutes the domain `[0, m · 2^b)`. Cycle-walking —
//! encrypting again while the result is `≥ n` — restricts it to a bijection on
//! `[0, n)`: the permutation's cycle through `x < n` must come back into `[0, n)`, at
//! `x` itself at the latest.
//!
//! The domain exceeds `n` by less than `2^b ≈ √n`, so almost every element takes a
//! single encryption (a power-of-two domain would need two on average for some `n`,
//! and walks of unpredictable length cost a mispredicted branch each). Four rounds
//! with a good round function are what Luby and Rackoff showed suffice for a
//! pseudo-random permutation, far more than the statistical quality needs here.

use crate::rng::Rng;

/// A keyed pseudo-random permutation of `0..n`.
#[derive(Clone, Debug)]
pub struct Permutation {
    n: u64,
    /// Width in bits of the low part.
    low_bits: u32,
    /// The high part ranges over `[0, high_range)`.
    high_range: u64,
    keys: [u64; 4],
}

impl Permutation {
    /// Creates a permutation of `0..n` chosen by `seed`; `n` must be at least 1.
    pub fn new(n: u64, seed: u64) -> Permutation {
        assert!(n >= 1, "a permutation needs a non-empty domain");
        // Half of the smallest b with 2^b ≥ n, and at least 1 so that rounds on the
        // low part do something.
        let bits = u64::BITS - (n - 1).leading_zeros();
        let low_bits = (bits / 2).max(1);
        let mut rng = Rng::new(seed);
        let keys = [rng.next_u64(), rng.next_u64(), rng.next_u64(), rng.next_u64()];
        Permutation { n, low_bits, high_range: n.div_ceil(1 << low_bits), keys }
    }

    /// Returns the image of `x`, which must be below the `n` the permutation was made for.
    #[inline]
    pub fn apply(&self, x: u64) -> u64 {
        debug_assert!(x < self.n);
        let mut y = self.encrypt(x);
        while y >= self.n {
            y = self.encrypt(y);
        }
        y
    }

    /// The Feistel network on `[0, high_range · 2^low_bits)`.
    #[inline]
    fn encrypt(&self, x: u64) -> u64 {
        let mut low = x & ((1u64 << self.low_bits) - 1);
        let mut high = x >> self.low_bits;
        low ^= hash(high, self.keys[0]) >> (u64::BITS - self.low_bits);
        high = self.add_to_high(high, hash(low, self.keys[1]));
        low ^= hash(high, self.keys[2]) >> (u64::BITS - self.low_bits);
        high = self.add_to_high(high, hash(low, self.keys[3]));
        high << self.low_bits | low
    }

    /// Returns `(high + r) mod high_range`, with the 64-bit `r` first scaled to
    /// `[0, high_range)` by a multiply-shift (Lemire's reduction, no division).
    #[inline]
    fn add_to_high(&self, high: u64, r: u64) -> u64 {
        let step = ((r as u128 * self.high_range as u128) >> 64) as u64;
        let sum = high + step;
        if sum >= self.high_range {
            sum - self.high_range
        } else {
            sum
        }
    }
}

/// A keyed 64-bit hash of one part: multiply, xorshift, multiply. Callers use its
/// top bits, because the top bits of a product depend on all bits of its operands
/// while the low bits depend only on the low bits.
#[inline]
fn hash(part: u64, key: u64) -> u64 {
    let z = (part ^ key).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (z ^ z >> 32).wrapping_mul(0xD6E8_FEB8_6659_FD93)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies the permutation to every element and checks that the images are
    /// distinct and below n, which for a map from [0, n) to itself means bijective.
    fn check_bijection(n: u64, seed: u64) {
        let p = Permutation::new(n, seed);
        let mut seen = vec![false; n as usize];
        for x in 0..n {
            let y = p.apply(x);
            assert!(y < n, "image {y} of {x} outside [0, {n})");
            assert!(!seen[y as usize], "image {y} reached twice (n = {n})");
            seen[y as usize] = true;
        }
    }

    #[test]
    fn is_a_bijection_for_any_size() {
        for n in [1, 2, 3, 5, 1000, 4096, 4097, 1 << 20] {
            check_bijection(n, 7);
        }
    }

    #[test]
    fn the_seed_selects_the_permutation() {
        let images = |seed| {
            let p = Permutation::new(1000, seed);
            (0..1000).map(|x| p.apply(x)).collect::<Vec<_>>()
        };
        assert_eq!(images(1), images(1));
        assert_ne!(images(1), images(2));
    }

    #[test]
    fn scatters_neighbours() {
        // A permutation meant to scatter hot pages must not map the first 100 ranks
        // into a narrow range: the span of 100 random draws from [0, 2^20) covers
        // nearly all of it (its expected length is 99/101 of the domain).
        let n = 1 << 20;
        let p = Permutation::new(n, 3);
        let images: Vec<u64> = (0..100).map(|x| p.apply(x)).collect();
        let span = images.iter().max().unwrap() - images.iter().min().unwrap();
        assert!(span > n / 2, "first 100 images span only {span} of {n}");
        // Nor keep neighbours together: consecutive inputs land far apart on average
        // (a random pair of points in [0, n) lies n/3 apart in expectation).
        let mean_gap = images.windows(2).map(|w| w[0].abs_diff(w[1])).sum::<u64>() / 99;
        assert!(mean_gap > n / 5, "mean distance between neighbours' images {mean_gap}");
    }

    #[test]
    fn large_domains_stay_in_range() {
        // 2^41 lines is the largest chase domain (2^47 bytes of 64-byte lines); odd
        // sizes force cycle-walking.
        for n in [(1u64 << 41) + 1, (1 << 35) - 3, u64::MAX] {
            let p = Permutation::new(n, 11);
            for x in (0..1000).chain(n - 1000..n) {
                assert!(p.apply(x) < n);
            }
        }
    }
}
