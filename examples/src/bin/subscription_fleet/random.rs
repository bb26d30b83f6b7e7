//! A small random generator (xorshift64*), seeded from the clock and the process id: the
//! writers' partitions and pauses, the handlers' work. Not for anything but spreading load.

use std::time::{SystemTime, UNIX_EPOCH};

/// A generator of its own per task: no lock, no shared state.
pub struct Random(u64);

impl Random {
    /// Seeded from the clock, the process id and `salt` (a writer's number), never zero.
    pub fn new(salt: u64) -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos() as u64);
        let seed = nanos ^ (u64::from(std::process::id()) << 32) ^ salt.wrapping_mul(0x9E37_79B9);
        Self(seed | 1)
    }

    /// A number in `0..bound` (`bound` ≥ 1).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % bound.max(1)
    }
}
