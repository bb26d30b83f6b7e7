//! What the writers committed and rolled back, and the check of one reader against it.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// The entries as the writers know them: committed ones with the position `append_in`
/// promised, rolled-back ones by id.
#[derive(Default)]
pub struct Truth {
    committed: Mutex<Vec<(u32, u64, u64)>>,
    rolled_back: Mutex<HashSet<u64>>,
    commits: AtomicU64,
    expected: OnceLock<Vec<usize>>,
}

/// What one reader read of one partition, and after every read where it would go on from
/// and how many entries it had read by then.
#[derive(Debug, Default)]
pub struct PartitionLog {
    pub entries: Vec<(u64, u64)>,
    pub pages: Vec<(u64, usize)>,
}

impl Truth {
    pub fn committed(&self, entries: &[(u32, u64, u64)]) {
        self.committed.lock().unwrap().extend_from_slice(entries);
        self.commits.fetch_add(1, Ordering::SeqCst);
    }

    pub fn rolled_back(&self, ids: &[u64]) {
        self.rolled_back.lock().unwrap().extend(ids.iter().copied());
    }

    /// Transactions committed so far.
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::SeqCst)
    }

    /// Called once every writer has ended: from now on readers know how much to expect.
    pub fn writers_done(&self) {
        let mut counts = vec![0; 64];
        for (partition, _, _) in self.committed.lock().unwrap().iter() {
            counts[*partition as usize] += 1;
        }
        let _ = self.expected.set(counts);
    }

    /// How many entries each partition has, once the writers are done.
    pub fn expected(&self) -> Option<&[usize]> {
        self.expected.get().map(Vec::as_slice)
    }

    pub fn committed_count(&self) -> usize {
        self.committed.lock().unwrap().len()
    }

    pub fn rolled_back_count(&self) -> usize {
        self.rolled_back.lock().unwrap().len()
    }

    pub fn committed_ids(&self) -> HashSet<u64> {
        self.committed.lock().unwrap().iter().map(|e| e.2).collect()
    }

    /// The committed (position, id) of each partition in position order.
    pub fn committed_by_partition(&self, partitions: u32) -> Vec<Vec<(u64, u64)>> {
        let mut by_partition = vec![Vec::new(); partitions as usize];
        for &(partition, position, id) in self.committed.lock().unwrap().iter() {
            by_partition[partition as usize].push((position, id));
        }
        for entries in &mut by_partition {
            entries.sort_unstable();
            assert!(
                entries.windows(2).all(|w| w[0].0 < w[1].0),
                "append_in promised one position twice"
            );
        }
        by_partition
    }
}

/// One reader: every committed entry exactly once, in position order, no rolled-back one,
/// and at every read, the entries below `next` are exactly those read so far.
pub fn check_reader(
    reader: &(usize, Vec<PartitionLog>),
    expected: &[Vec<(u64, u64)>],
    truth: &Truth,
) {
    let (reader, logs) = reader;
    let rolled_back = truth.rolled_back.lock().unwrap();
    for (partition, (log, expected)) in logs.iter().zip(expected).enumerate() {
        let read_ids: HashSet<u64> = log.entries.iter().map(|e| e.1).collect();
        let resurrected = read_ids
            .iter()
            .filter(|id| rolled_back.contains(id))
            .count();
        assert_eq!(
            resurrected, 0,
            "reader {reader} read {resurrected} rolled-back entries"
        );
        if log.entries != *expected {
            let missing = expected.iter().filter(|e| !read_ids.contains(&e.1)).count();
            panic!(
                "reader {reader}, partition {partition}: read {} entries ({} distinct), \
                 committed {}, {missing} never read; first difference at {:?}",
                log.entries.len(),
                read_ids.len(),
                expected.len(),
                log.entries.iter().zip(expected).position(|(a, b)| a != b),
            );
        }
        for &(next, read_so_far) in &log.pages {
            let below = expected.partition_point(|e| e.0 < next);
            assert_eq!(
                below, read_so_far,
                "reader {reader}, partition {partition}: a read said to go on from {next} \
                 after {read_so_far} entries, but {below} committed entries are below it"
            );
        }
    }
}
