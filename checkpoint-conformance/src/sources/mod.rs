//! The source kit: proves that a [`Source`](checkpoint_core::source::Source) keeps the
//! contract's "Sources" clauses, above all **no late arrivals**.
//!
//! A backend's tests implement [`SourceLog`] (the source, and a way to write to its log in
//! transactions) and call [`source_tests!`](crate::source_tests), which expands to one named
//! test per case of [`cases`]:
//!
//! | case | what it checks |
//! | --- | --- |
//! | `no_late_arrivals_under_concurrent_writers` | writers with random commit delays, slow and rolled-back transactions and one long transaction, while readers check every page; at the end every committed entry was read exactly once per reader, none rolled back |
//! | `reads_from_every_position_agree` | a read from any position, in pages of any size, returns what a read from the start returned after it (resume equivalence) |
//! | `sparse_positions_are_read_in_order` | gaps (rollbacks, other partitions' entries) are passed over; a read from inside a gap (every position of a small gap; both ends, the middle and random ones of a large one) returns the next entry |
//! | `empty_partitions_read_empty` | an empty partition gives an empty page with `next` ≥ `from`, and no head |
//! | `pages_respect_max_and_keep_their_last_entry` | no page is longer than `max`; paging with every `max` returns every entry once |
//! | `wait_wakes_after_a_commit` | `wait` stays pending while nothing is committed (no busy loop), resolves at once when something is readable, and within a bound after a commit |
//! | `head_follows_the_readable_end` | `head` is the last readable position; lag from a checkpoint counts the entries left |
//! | `heads_agree_with_head` | `heads` of every partition (out of order, one twice, two beyond the count) is `head` of each, `None` beyond: on a fresh log, with empty and written partitions, while an append is not committed and after |
//! | `source_invalid_inputs_are_rejected` | a partition out of range, `max` = 0, `from` > `i64::MAX` refused with the typed error |
//! | `partitions_grow_and_keep_their_entries` | on a log that [grows](SourceLog::grows): `discover_partitions` finds the new partitions and never answers less than before, `partitions()` follows, the old partitions read from their start return what they returned before the growth, a new one is empty and then read from its start; on one that cannot, the count stays |
//!
//! Environment: `CHECKPOINT_SOURCE_WRITERS` (default 4), `CHECKPOINT_SOURCE_TRANSACTIONS` per
//! writer (default 30) and `CHECKPOINT_SOURCE_READERS` (default 2) size the concurrent case;
//! `CHECKPOINT_SOURCE_WAKE_MS` (default 2000) bounds how long a wake-up may take (a polling
//! source must poll faster); `CHECKPOINT_SEED` replays the random choices of a failed run
//! (every failure prints its seed); `CHECKPOINT_SOURCE_CASE_SECS` (default 120) fails a case
//! that hangs.
//!
//! A source may delay an entry after its commit (on PostgreSQL, any open transaction of the
//! cluster holds the readable horizon back), never lose it: where a case expects committed
//! entries, it reads on from each `next` and waits on the source until they are there, for at
//! most `CHECKPOINT_SOURCE_CATCH_UP_MS` (default 10 000), and only then fails, naming them. An
//! entry that appears below a `next` already returned is a late arrival whatever the wait.
//!
//! [`sequence`] is a simulated PostgreSQL-style sequence log and its correct watermark
//! source: the model for a source over an event table, and what the kit's own tests break.
//! [`kafka_log`] is a simulated Kafka partition log (offsets taken at append time by every
//! producer, transactions made visible by a commit marker, aborted ones never, each marker an
//! offset) and its correct read-committed source, bounded by the last stable offset: the model
//! for a source over a log with transactions, and what a read-uncommitted reader or one bounded
//! by the high watermark gets wrong.
//!
//! ```
//! use checkpoint_conformance::sources::sequence::{SequenceSourceLog, WatermarkSource};
//!
//! // Your log here: a fresh, empty one for every call.
//! async fn log() -> SequenceSourceLog<WatermarkSource> {
//!     SequenceSourceLog::watermark(3)
//! }
//!
//! mod source {
//!     checkpoint_conformance::source_tests!(super::log);
//! }
//! # fn main() {}
//! ```

pub mod cases;
mod catch_up;
pub mod kafka_log;
mod log;
mod paging;
mod rng;
pub mod sequence;

use std::future::Future;
use std::time::Duration;

use checkpoint_core::source::SourceError;

pub use log::{AppendsAtOnce, AtOnce, LogTransaction, SourceLog};

use crate::{CaseResult, Failure, error_chain};

/// An error where the case expects success fails the case, with its whole chain.
impl From<SourceError> for Failure {
    fn from(error: SourceError) -> Self {
        Failure::new(format!("unexpected source error: {}", error_chain(&error)))
    }
}

/// A count from the environment variable `name`, else `default`.
fn env_count(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// How long one source case may run before it fails as stuck (a read or `wait` that never
/// returns), from `CHECKPOINT_SOURCE_CASE_SECS` (default 120): every case takes a few seconds.
fn case_timeout() -> Duration {
    Duration::from_secs(env_count("CHECKPOINT_SOURCE_CASE_SECS", 120))
}

/// Runs one source case in a runtime of its own and panics, as a failing test must, with the
/// case's message.
#[doc(hidden)]
#[allow(clippy::panic, clippy::expect_used)]
pub fn __run_case(name: &str, source: &str, case: impl Future<Output = CaseResult>) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("building a tokio runtime for the case");
    let limit = case_timeout();
    let result = runtime
        .block_on(async { tokio::time::timeout(limit, case).await })
        .unwrap_or_else(|_| {
            Err(Failure::new(format!(
                "the case did not finish within {limit:?}: a read, head or wait that never \
                 returns (CHECKPOINT_SOURCE_CASE_SECS sets the limit)"
            )))
        });
    if let Err(failure) = result {
        panic!("source clause `{name}` broken by `{source}`:\n{failure}");
    }
}
