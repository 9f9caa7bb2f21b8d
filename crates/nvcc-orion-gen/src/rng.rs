//! The seed's random stream: ChaCha8 (value-stable across platforms and crate versions),
//! sampled with our own small helpers so no library's sampling algorithm decides a program.

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

pub struct Rng(ChaCha8Rng);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(ChaCha8Rng::seed_from_u64(seed))
    }

    /// Uniform in `0..n` (`n` > 0); the modulo bias is irrelevant here.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0.next_u64() % n
    }

    pub fn range(&mut self, lo: u32, hi_inclusive: u32) -> u32 {
        lo + self.below(u64::from(hi_inclusive - lo) + 1) as u32
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// An index drawn with the given weights (at least one non-zero).
    pub fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
        let mut x = self.below(total);
        for (i, &w) in weights.iter().enumerate() {
            if x < u64::from(w) {
                return i;
            }
            x -= u64::from(w);
        }
        unreachable!("weights sum to {total}")
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}
