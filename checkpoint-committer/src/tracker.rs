//! The gap-free position of one partition: which dispatched entries are still held, and how far
//! every entry is done.
//!
//! Pure bookkeeping, no I/O and no clock of its own: the partition handle calls it under the
//! partition's lock, the flusher reads it, and the unit tests below drive it directly.

use std::collections::VecDeque;

use checkpoint_core::validation::MAX_POSITION;

/// The highest position that may be dispatched or skipped: one below [`MAX_POSITION`], so that
/// the checkpoint after it (the position that follows it) is still a valid position.
pub const MAX_DISPATCH_POSITION: u64 = MAX_POSITION - 1;

/// The top bit of [`Held::dispatched_at`] marks a completed entry; the other 63 bits are
/// nanoseconds since the committer started (enough for 292 years).
const DONE: u64 = 1 << 63;

/// One dispatched entry the checkpoint has not passed yet: running, or completed behind an
/// entry that is still running. 16 bytes.
#[derive(Debug, Clone, Copy)]
struct Held {
    position: u64,
    /// Nanoseconds since the committer's epoch when it was dispatched, with [`DONE`] set once
    /// it is completed.
    dispatched_at: u64,
}

impl Held {
    fn is_done(self) -> bool {
        self.dispatched_at & DONE != 0
    }
}

/// Why the tracker refused a call. The handle turns it into a `CommitterError`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// A dispatched or skipped position not ahead of the last one (or of the resume position).
    NotAhead {
        /// The position given.
        position: u64,
        /// The lowest position the call could have taken.
        lowest: u64,
    },
    /// A dispatched or skipped position above [`MAX_DISPATCH_POSITION`].
    TooHigh {
        /// The position given.
        position: u64,
    },
    /// A completed position that is not held: never dispatched, already completed, or already
    /// passed by the checkpoint.
    NotInFlight {
        /// The position given.
        position: u64,
    },
}

/// The bookkeeping of one partition.
///
/// Positions come in increasing order through [`dispatch`](Self::dispatch) and
/// [`skip`](Self::skip); completions come in any order. The gap-free position is the one
/// [the crate doc](crate) defines: the position of the oldest entry still running, or, when
/// none runs, the position after the last one dispatched or skipped.
#[derive(Debug)]
pub struct Tracker {
    /// The entries dispatched and not yet passed by the gap-free position, in dispatch (and so
    /// position) order. The front, when there is one, is always still running.
    held: VecDeque<Held>,
    /// How many of `held` are still running.
    running: usize,
    /// The lowest position the next dispatch or skip may take.
    next: u64,
}

/// A deque that held many entries gives its memory back once it holds a quarter of its
/// capacity, down to this many slots, so a burst on one partition does not keep memory after
/// it has passed.
const MIN_CAPACITY: usize = 64;

impl Tracker {
    /// A partition that resumes at `resume_at`: the first position it may dispatch.
    pub fn new(resume_at: u64) -> Self {
        Self {
            held: VecDeque::new(),
            running: 0,
            next: resume_at,
        }
    }

    /// The gap-free position: every entry of the partition below it is completed (or was
    /// skipped, or is not an entry of this subscription), and a restart resumes there.
    pub fn gap_free(&self) -> u64 {
        self.held.front().map_or(self.next, |held| held.position)
    }

    /// How many dispatched entries are still running.
    pub fn running(&self) -> usize {
        self.running
    }

    /// How many entries the partition holds: running ones, and completed ones behind the
    /// oldest running one. This is what counts against the committer's `max_in_flight`.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// When the oldest running entry was dispatched, in nanoseconds since the committer's
    /// epoch.
    pub fn oldest_running_since(&self) -> Option<u64> {
        self.held.front().map(|held| held.dispatched_at & !DONE)
    }

    /// Checks that `position` may be dispatched or skipped next, without changing anything.
    pub fn check_next(&self, position: u64) -> Result<(), Refusal> {
        if position > MAX_DISPATCH_POSITION {
            return Err(Refusal::TooHigh { position });
        }
        if position < self.next {
            return Err(Refusal::NotAhead {
                position,
                lowest: self.next,
            });
        }
        Ok(())
    }

    /// Records `position` as dispatched at `now` (nanoseconds since the committer's epoch).
    pub fn dispatch(&mut self, position: u64, now: u64) -> Result<(), Refusal> {
        self.check_next(position)?;
        self.held.push_back(Held {
            position,
            dispatched_at: now & !DONE,
        });
        self.running += 1;
        self.next = position + 1;
        Ok(())
    }

    /// Records `position` as an entry the subscription does not handle: it is done as soon as
    /// it is seen, and holds nothing.
    pub fn skip(&mut self, position: u64) -> Result<(), Refusal> {
        self.check_next(position)?;
        self.next = position + 1;
        Ok(())
    }

    /// Records `position` as completed. Returns how many held entries the gap-free position
    /// passed (and so how many slots of `max_in_flight` are free again).
    pub fn complete(&mut self, position: u64) -> Result<usize, Refusal> {
        let index = self
            .held
            .binary_search_by_key(&position, |held| held.position)
            .map_err(|_| Refusal::NotInFlight { position })?;
        let held = &mut self.held[index];
        if held.is_done() {
            return Err(Refusal::NotInFlight { position });
        }
        held.dispatched_at |= DONE;
        self.running -= 1;
        if index > 0 {
            return Ok(0);
        }
        let before = self.held.len();
        while self.held.front().is_some_and(|held| held.is_done()) {
            self.held.pop_front();
        }
        let passed = before - self.held.len();
        self.give_back_memory();
        Ok(passed)
    }

    /// Forgets every held entry (the partition was released) and keeps the gap-free position
    /// where it was, so nothing later can move it past an entry that was still running.
    /// Returns how many entries it held.
    pub fn clear(&mut self) -> usize {
        let held = self.held.len();
        *self = Tracker::new(self.gap_free());
        held
    }

    fn give_back_memory(&mut self) {
        let capacity = self.held.capacity();
        if capacity > MIN_CAPACITY && self.held.len() < capacity / 4 {
            self.held.shrink_to((capacity / 2).max(MIN_CAPACITY));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_entry_holds_back_every_later_completion() {
        let mut t = Tracker::new(10);
        assert_eq!(t.gap_free(), 10);
        for p in [10, 11, 12, 13] {
            t.dispatch(p, 0).unwrap();
        }
        assert_eq!(t.gap_free(), 10);
        assert_eq!(t.complete(12).unwrap(), 0);
        assert_eq!(t.complete(13).unwrap(), 0);
        assert_eq!(t.gap_free(), 10, "10 still runs");
        assert_eq!(t.complete(10).unwrap(), 1);
        assert_eq!(t.gap_free(), 11, "11 still runs");
        assert_eq!(t.complete(11).unwrap(), 3);
        assert_eq!(t.gap_free(), 14, "everything dispatched is done");
        assert_eq!((t.running(), t.held()), (0, 0));
    }

    #[test]
    fn sparse_positions_move_to_the_next_dispatched_entry() {
        let mut t = Tracker::new(0);
        t.dispatch(5, 0).unwrap();
        assert_eq!(t.gap_free(), 5, "0..5 are not entries of this subscription");
        t.dispatch(9, 0).unwrap();
        t.complete(5).unwrap();
        assert_eq!(t.gap_free(), 9);
        t.skip(20).unwrap();
        assert_eq!(t.gap_free(), 9, "a skip does not pass a running entry");
        t.complete(9).unwrap();
        assert_eq!(t.gap_free(), 21, "the skipped tail is passed too");
    }

    #[test]
    fn skips_alone_move_the_position() {
        let mut t = Tracker::new(100);
        t.skip(100).unwrap();
        t.skip(150).unwrap();
        assert_eq!(t.gap_free(), 151);
    }

    #[test]
    fn refusals_change_nothing() {
        let mut t = Tracker::new(10);
        assert_eq!(
            t.dispatch(9, 0),
            Err(Refusal::NotAhead {
                position: 9,
                lowest: 10
            })
        );
        t.dispatch(10, 0).unwrap();
        assert_eq!(
            t.skip(10),
            Err(Refusal::NotAhead {
                position: 10,
                lowest: 11
            })
        );
        assert_eq!(t.complete(11), Err(Refusal::NotInFlight { position: 11 }));
        t.complete(10).unwrap();
        assert_eq!(
            t.complete(10),
            Err(Refusal::NotInFlight { position: 10 }),
            "a second completion is refused"
        );
        assert_eq!(
            t.dispatch(MAX_POSITION, 0),
            Err(Refusal::TooHigh {
                position: MAX_POSITION
            })
        );
        t.dispatch(MAX_DISPATCH_POSITION, 0).unwrap();
        t.complete(MAX_DISPATCH_POSITION).unwrap();
        assert_eq!(t.gap_free(), MAX_POSITION);
    }

    #[test]
    fn a_completed_entry_behind_a_running_one_cannot_complete_twice() {
        let mut t = Tracker::new(0);
        t.dispatch(0, 0).unwrap();
        t.dispatch(1, 0).unwrap();
        t.complete(1).unwrap();
        assert_eq!(t.complete(1), Err(Refusal::NotInFlight { position: 1 }));
        assert_eq!(t.running(), 1);
        assert_eq!(t.held(), 2);
    }

    #[test]
    fn oldest_running_is_the_front() {
        let mut t = Tracker::new(0);
        t.dispatch(0, 100).unwrap();
        t.dispatch(1, 200).unwrap();
        assert_eq!(t.oldest_running_since(), Some(100));
        t.complete(0).unwrap();
        assert_eq!(t.oldest_running_since(), Some(200));
        t.complete(1).unwrap();
        assert_eq!(t.oldest_running_since(), None);
    }

    #[test]
    fn clearing_keeps_the_gap_free_position() {
        let mut t = Tracker::new(0);
        t.dispatch(3, 0).unwrap();
        t.dispatch(4, 0).unwrap();
        t.complete(4).unwrap();
        assert_eq!(t.clear(), 2);
        assert_eq!(t.gap_free(), 3, "3 was still running");
        assert_eq!((t.running(), t.held()), (0, 0));
    }

    #[test]
    fn memory_is_given_back_after_a_burst() {
        let mut t = Tracker::new(0);
        for p in 0..10_000 {
            t.dispatch(p, 0).unwrap();
        }
        for p in 0..10_000 {
            t.complete(p).unwrap();
        }
        assert!(
            t.held.capacity() <= 2 * MIN_CAPACITY,
            "{}",
            t.held.capacity()
        );
    }
}
