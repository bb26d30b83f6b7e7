//! A small seeded generator (xorshift64*), so a failing run can be told apart by its seed.

use std::time::{SystemTime, UNIX_EPOCH};

/// xorshift64*: plenty for choosing partitions, delays and outcomes.
pub struct Rng(u64);

impl Rng {
    /// A generator seeded by `stream` and the clock.
    pub fn new(stream: u64) -> Self {
        let clock = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |since| since.as_nanos() as u64);
        Self((clock ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1)
    }

    /// A number in `0..bound`.
    pub fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % bound.max(1)
    }

    /// True with `percent` % probability.
    pub fn percent(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}
