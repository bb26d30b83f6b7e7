//! A committer between a subscription's handlers and its checkpoint store: out-of-order
//! completions in, gap-free checkpoints out, one coalesced `save_all` per interval.
//!
//! A subscription hands entries to handlers that finish out of order (concurrent handlers,
//! retries, partitions on several tasks). Its checkpoint may only move to where *every* entry
//! below it is completed, and writing it once per entry makes the store the bottleneck. The
//! [`Committer`] keeps, per partition, the entries in flight; every interval it writes the
//! partitions whose checkpoint moved, in one [`save_all`](checkpoint_core::CheckpointStore::save_all)
//! through any [`CheckpointStore`](checkpoint_core::CheckpointStore), ours or yours.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use std::time::Duration;
//! use checkpoint_committer::Committer;
//! use checkpoint_core::{CheckpointStore, InMemoryCheckpointStore};
//!
//! let store = Arc::new(InMemoryCheckpointStore::new());
//! let committer = Committer::builder(Arc::clone(&store), "billing")
//!     .interval(Duration::from_millis(200))
//!     .max_in_flight(100_000) // beyond it, `dispatched` waits
//!     .start()?;
//!
//! // One partition this worker owns, resuming where the store stands (0 when new).
//! let partition = committer.resume("invoices", 3).await?;
//! for position in [0, 1, 2, 5] {
//!     partition.dispatched(position).await?; // in log order, before a handler runs it
//! }
//! partition.skipped(6)?; // an entry the subscription filters out
//! partition.completed(2)?; // from any task, in any order
//! partition.completed(0)?;
//! assert_eq!(partition.gap_free(), 1, "entry 1 still runs: it holds the checkpoint at 1");
//! partition.completed(5)?;
//! partition.completed(1)?;
//! assert_eq!(partition.gap_free(), 7, "everything up to the skipped 6 is done");
//!
//! committer.shutdown().await?; // the final write
//! assert_eq!(store.load("billing", "invoices", 3).await?, Some(7));
//! # Ok(()) }
//! ```
//!
//! # The position it writes
//!
//! A partition resumes at a position `r` (what the store holds, or where a new subscription
//! starts). Its reader then calls [`Partition::dispatched`] for each entry it hands to a
//! handler and [`Partition::skipped`] for each entry it filters out, in log order: positions
//! strictly increase and may be sparse (a filtered or global log). Handlers call
//! [`Partition::completed`] in any order. The **gap-free position** is
//!
//! - the position of the oldest dispatched entry that is not completed, when there is one;
//! - otherwise the position right after the last entry dispatched or skipped (`last + 1`);
//! - `r` before anything is dispatched or skipped.
//!
//! So the stored checkpoint is **the first position a restart must read**: every entry below
//! it is completed (or was skipped, or is no entry of this subscription: dispatching is in log
//! order, so a position below the last one dispatched that was never dispatched does not
//! exist for it), and the entry at it, if any, is not known to be completed. A restart that
//! reads from the stored position therefore never skips an entry, and redoes only the entries
//! completed after that position (at the oldest one still running, or dispatched after the
//! last write): with one number per partition, nothing fewer can be redone. Positions that are
//! only skipped move it too, so a subscription whose filter passes a long run of entries does
//! not park below them. Because `last + 1` must itself be a valid position, the highest
//! position that can be dispatched or skipped is `i64::MAX - 1`.
//!
//! The contract's own words (`CONTRACT.md`: "the lowest position up to which every entry is
//! completed") read, for a committer, as this exclusive bound: "up to" excludes the position
//! itself.
//!
//! # Writes
//!
//! Every [interval](CommitterBuilder::interval), one `save_all` of every partition whose
//! gap-free position moved past what this committer last wrote (or resumed at); no write when
//! nothing moved. A failed write, retryable or not, loses nothing: the positions stay held and
//! are written by a later tick, after a backoff (after the n-th failure in a row, a random
//! wait between half and all of `interval × 2ⁿ` capped at
//! [`max_backoff`](CommitterBuilder::max_backoff), never below the interval: the workspace's
//! one [`Backoff`](checkpoint_core::backoff::Backoff) with equal jitter). Each failure is logged with
//! `tracing` at WARN, passed to the [`on_error`](CommitterBuilder::on_error) callback and kept in
//! [`PartitionStats::last_error`]. Writes never overlap, so what one committer writes for a
//! partition never goes backwards; across owners the store's monotonic `save` does the rest.
//! The number of `save_all` calls is at most the number of ticks, plus one per
//! [`release`](Committer::release), [`release_many`](Committer::release_many) or
//! [`flush`](Committer::flush), plus one for
//! [`shutdown`](Committer::shutdown).
//!
//! # Memory and backpressure
//!
//! A committer holds at most [`max_in_flight`](CommitterBuilder::max_in_flight) entries over all
//! its partitions: an entry is held from `dispatched` until the gap-free position passes it (a
//! completed entry behind a running one is still held, since it is not written yet). When the
//! committer is full, `dispatched` waits until a completion frees room: it never drops an entry
//! and never grows. A held entry takes a 16-byte slot (its position and its dispatch time) in a
//! per-partition ring buffer that grows by doubling and gives memory back when a quarter full,
//! so it costs 16 to 32 bytes: `checkpoint-bench` measured 21 bytes per held entry with
//! 100,000 held (2.1 MB), over 64 partitions or in one (see `docs/performance.md`). A skipped
//! entry costs nothing.
//!
//! # Ownership
//!
//! [`Committer::release`] writes a partition's gap-free position and forgets it when its lease
//! is lost or handed over; its handles refuse every call afterwards;
//! [`Committer::release_many`] does the same for several partitions with one write. A write of
//! a zombie
//! committer that lands after the new owner's is harmless: a store only moves a checkpoint
//! forward, and a zombie's gap-free position is never ahead of what it really completed.
//! [`Committer::shutdown`] writes everything and stops; if that write fails it returns
//! [`CommitterError::Flush`] with the checkpoints it could not write.
//!
//! # Observing
//!
//! [`Committer::stats`] and [`Partition::stats`] are cheap snapshots: committed position,
//! gap-free position, entries in flight and held, age of the oldest entry in flight, last
//! write time and error. A growing `oldest_in_flight_age` is a stuck handler holding its
//! partition back.
//!
//! With the `metrics` feature, the same figures go through the `metrics` crate's
//! facade after every tick, as gauges labelled `group`, `subscription`, `partition`:
//! `checkpoint_committer_committed_position`, `checkpoint_committer_gap_free_position`,
//! `checkpoint_committer_lag_positions`, `checkpoint_committer_in_flight`,
//! `checkpoint_committer_oldest_in_flight_seconds` and `checkpoint_committer_write_failing`
//! (1 while the partition's last write failed); and as counters labelled `group`:
//! `checkpoint_committer_writes_total` and `checkpoint_committer_write_errors_total`. Gauges are
//! `f64` in the facade: positions above 2⁵³ are rounded there (never in the store). No exporter
//! is chosen for you.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod builder;
mod committer;
mod error;
mod flush;
#[cfg(feature = "metrics")]
pub mod metrics;
mod partition;
mod shared;
mod state;
mod stats;
mod tracker;
mod writer;

pub use builder::{CommitterBuilder, DEFAULT_INTERVAL, DEFAULT_MAX_BACKOFF, DEFAULT_MAX_IN_FLIGHT};
pub use committer::Committer;
pub use error::CommitterError;
pub use partition::Partition;
pub use stats::{CommitterStats, PartitionStats};
pub use tracker::MAX_DISPATCH_POSITION;

// Compile-time checks that the public handles stay `Send + Sync + 'static`: a committer and
// its partition handles are shared by handlers in spawned tasks, held in an `Arc` and across
// `.await` points in a multi-threaded runtime. A field that broke this (an `Rc`, a `RefCell`)
// would otherwise surface only in a user's build.
const _: () = {
    fn assert_send_sync<T: Send + Sync + 'static>() {}
    fn assert_all() {
        assert_send_sync::<Committer>();
        assert_send_sync::<CommitterBuilder>();
        assert_send_sync::<Partition>();
        assert_send_sync::<CommitterStats>();
        assert_send_sync::<PartitionStats>();
        assert_send_sync::<CommitterError>();
    }
    let _ = assert_all;
};

/// The README's examples, compiled and run as doc tests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
