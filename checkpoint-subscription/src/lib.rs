//! Subscriptions: a handler is all you write. A [`Subscription`] reads a partitioned log (any
//! [`Source`](checkpoint_core::source::Source)) from each partition's checkpoint, hands every
//! entry to your handler, retries failures with backoff, parks or stops on poison entries,
//! writes gap-free checkpoints, and owns its share of the partitions through leases in the
//! store, handing them over gracefully.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use checkpoint_core::{CheckpointStore, InMemoryCheckpointStore};
//! use checkpoint_core::source::{Entry, InMemorySource};
//! use checkpoint_subscription::{HandlerResult, OnPoison, Subscription};
//!
//! let store = Arc::new(InMemoryCheckpointStore::new());
//! let source = Arc::new(InMemorySource::new(4));
//! for n in 0..100u32 {
//!     source.append(n % 4, format!("invoice {n}").into_bytes())?;
//! }
//!
//! let total = Arc::new(AtomicU64::new(0));
//! let seen = Arc::clone(&total);
//! let subscription = Subscription::builder(Arc::clone(&store), source, "billing", "invoices")
//!     .handler(move |entry: Arc<Entry>| {
//!         let seen = Arc::clone(&seen);
//!         async move {
//!             seen.fetch_add(entry.payload.len() as u64, Ordering::Relaxed);
//!             HandlerResult::Ok(())
//!         }
//!     })
//!     .max_in_flight(64)                                  // per partition
//!     .on_poison(OnPoison::park(Arc::clone(&store)))      // after the last retry
//!     .start()?;
//!
//! # while subscription.stats().handled < 100 {
//! #     tokio::time::sleep(std::time::Duration::from_millis(5)).await;
//! # }
//! subscription.shutdown().await?; // hands every partition over: final checkpoints, releases
//! // Positions 1 to 25 handled: partition 3 resumes at 26.
//! assert_eq!(store.load("billing", "invoices", 3).await?, Some(26));
//! # Ok(()) }
//! ```
//!
//! # What happens to each entry
//!
//! - **Reading.** Per partition the worker holds, a reader reads from
//!   [`resume_at`](checkpoint_worker::Assignment::resume_at) (the stored checkpoint) in pages,
//!   up to two pages ahead of the handlers, and waits on the source when caught up. A failed
//!   read is retried after a pause that doubles from 50 ms to 5 s.
//! - **Handling.** Entries go to the handler in log order, at most
//!   [`max_in_flight`](SubscriptionBuilder::max_in_flight) per partition at once; they finish
//!   in any order and the committer writes the gap-free checkpoint (the first entry not
//!   finished) once per interval. With [`ordered_by_key`](SubscriptionBuilder::ordered_by_key),
//!   entries of one key run one at a time, in log order. A partition's handlers run
//!   concurrently on its reader's task (no task per entry), partitions in parallel: a handler
//!   that computes for long should hand that work to `spawn_blocking` or a task of its own.
//! - **Failures.** A handler error (or panic) is retried after an exponential pause with
//!   jitter ([`Retry`]); after the last run the entry is poison: [`OnPoison::Stop`] stops the
//!   partition there (its checkpoint stays below the entry, the lease is kept, an ERROR log
//!   and [`PartitionStatus::stopped_at`] say so); [`OnPoison::Park`] records it in the store's
//!   parked entries ([`ParkedStore`](checkpoint_core::parked::ParkedStore)) and goes on.
//!   Nothing is skipped silently. `checkpoint parked GROUP` lists parked entries;
//!   `checkpoint parked retry …` asks for one to be retried, which the subscription holding
//!   its partition does within its [parked poll interval](SubscriptionBuilder::parked_poll_interval).
//! - **Stopping.** On a graceful handover ([`Stop::Handover`](checkpoint_worker::Stop)) the
//!   reader stops dispatching and the handlers in flight finish (up to the drain timeout)
//!   before the final checkpoint is written and the lease released: the next owner redoes
//!   nothing. On a loss ([`Stop::Lost`](checkpoint_worker::Stop)) the reader stops at once and
//!   abandons its handlers: another worker may own the partition already. Each dispatch is
//!   checked against the worker's local deadline, so a worker frozen past its lease dispatches
//!   nothing when it wakes.
//! - **Who redoes what.** A kill or a freeze costs the entries finished but not yet
//!   checkpointed in the partitions of the worker it hit, and nothing elsewhere: the others
//!   keep renewing. One exception, on an SQLite store shared by several processes: a process
//!   frozen *inside a write* to the file holds its one write lock, so nobody's renew goes
//!   through until it wakes. A freeze shorter than the slack (the lease's safe duration less
//!   the renew interval: 1.578 s for a 2 s lease) costs nothing; a longer one costs every
//!   worker of the file its leases (`Stop::Lost`), and each partition's entries finished since
//!   its last checkpoint stored before the freeze are handled again. `checkpoint-sqlite`'s
//!   crate doc ("Many processes on one file") says why, and what it would take.
//!
//! - **Growing.** A log that takes more partitions while the subscription runs (a NATS stream
//!   given more subjects, an event table allowed more partition numbers) is found every
//!   [discovery interval](SubscriptionBuilder::discovery_interval)
//!   ([`Source::discover_partitions`](checkpoint_core::source::Source::discover_partitions)):
//!   the worker leases and balances the new partitions without a restart, moving nothing it
//!   holds, and each is read from its start (no checkpoint: the start position, 0 unless set).
//!
//! # Lag
//!
//! [`Subscription::stats`] gives, per partition read, the checkpoint, the source's head, the
//! positions between them and the age of the oldest unfinished entry where the source keeps
//! append times ([`PartitionStatus`]), beside the worker's own figures. With the `metrics`
//! feature the same figures go through the `metrics` facade every lag interval (the feature's
//! `metrics` module names them).
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod attempts;
mod batches;
mod builder;
mod discovery;
mod error;
mod fetch;
mod handle;
mod handler;
#[cfg(feature = "metrics")]
pub mod metrics;
mod order;
mod parked_retries;
mod partition;
mod poison;
mod reader;
mod retry;
mod settings;
mod shared;
mod stats;
mod subscription;
mod transactional_builder;
mod transactional_handler;

pub use builder::SubscriptionBuilder;
pub use error::SubscriptionError;
/// The future a [`TransactionalHandler`] returns (re-exported, so that implementing one needs
/// no other crate).
pub use futures_util::future::BoxFuture;
pub use handler::{Handler, HandlerError, HandlerResult};
pub use poison::OnPoison;
pub use retry::Retry;
pub use settings::{
    DEFAULT_DISCOVERY_INTERVAL, DEFAULT_LAG_INTERVAL, DEFAULT_MAX_IN_FLIGHT, DEFAULT_PAGE_SIZE,
    DEFAULT_PARKED_POLL_INTERVAL,
};
pub use stats::{PartitionStatus, SubscriptionStats};
pub use subscription::Subscription;
pub use transactional_builder::TransactionalBuilder;
pub use transactional_handler::TransactionalHandler;

// Compile-time checks that the public handles stay `Send + Sync + 'static`: applications keep
// a subscription in an `Arc` or a `static`, call `stats` and `shutdown` from other tasks, and
// hold it across `.await` points in a multi-threaded runtime. A field that broke this (an
// `Rc`, a `RefCell`) would otherwise surface only in a user's build.
const _: () = {
    fn assert_send_sync<T: Send + Sync + 'static>() {}
    fn assert_all() {
        assert_send_sync::<Subscription>();
        assert_send_sync::<SubscriptionBuilder>();
        assert_send_sync::<SubscriptionStats>();
        assert_send_sync::<PartitionStatus>();
        assert_send_sync::<SubscriptionError>();
        assert_send_sync::<Retry>();
        assert_send_sync::<OnPoison>();
    }
    let _ = assert_all;
};
