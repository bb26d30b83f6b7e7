//! The synthetic log every process derives the same way: 8 partitions of sparse entries.

/// Partitions of the subscription.
pub const PARTITIONS: u32 = 8;
/// Entries in each partition: enough that the scenario's stops land while every partition
/// still has work (about ten seconds of it at the handlers' pace).
pub const ENTRIES_PER_PARTITION: usize = 1_200;

/// The positions of `partition`'s entries, increasing: gaps of 1 to 4, as in a log filtered
/// for one subscription, so that a position between two entries is no entry at all.
pub fn entries(partition: u32) -> Vec<u64> {
    // Seeded by the partition: the supervisor derives exactly the log the workers read.
    let mut random = fastrand::Rng::with_seed(u64::from(partition) + 1);
    let mut position = random.u64(..4);
    let mut entries = Vec::with_capacity(ENTRIES_PER_PARTITION);
    for _ in 0..ENTRIES_PER_PARTITION {
        entries.push(position);
        position += random.u64(1..=4);
    }
    entries
}

/// Where `partition`'s checkpoint stands once every entry is completed: right after its last
/// entry (the committer's gap-free position, the first position a restart would read).
pub fn end(partition: u32) -> u64 {
    entries(partition).last().map_or(0, |last| last + 1)
}
