//! Workers that own a subscription's partitions through leases in the checkpoint store:
//! balanced, sticky, handed over gracefully with nothing redone, taken over within the lease
//! duration when a worker dies.
//!
//! A [`Worker`] joins (group, subscription, partitions `0..P`) under a worker id and hands the
//! application an [`Assignment`] per partition it acquires: where to resume, the lease's epoch
//! (a fencing token), a [committer](checkpoint_committer) handle to report entries through,
//! and a [`Stop`] signal: [`Stop::Handover`] (graceful: drain, then drop the assignment) or
//! [`Stop::Lost`] (stop at once). It runs over any store that keeps the checkpoint and the
//! lease contracts (`CONTRACT.md`): the workspace's, or yours.
//!
//! This is the loop-of-your-own layer. To write only a handler over a log (reads from each
//! checkpoint, retries, poison entries, lag, exactly-once transactional handlers), use
//! `checkpoint-subscription`, which runs this worker underneath.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use std::time::Duration;
//! use checkpoint_core::{CheckpointStore, InMemoryCheckpointStore};
//! use checkpoint_worker::{Stop, Worker};
//!
//! let store = Arc::new(InMemoryCheckpointStore::new());
//! let (worker, mut assignments) = Worker::builder(Arc::clone(&store), "billing", "invoices", 4)
//!     .worker_id("worker-a")
//!     .lease_duration(Duration::from_secs(2))
//!     .start()?;
//!
//! // Alone, the worker acquires all four partitions.
//! for _ in 0..4 {
//!     let assignment = assignments.next().await.expect("the worker is running");
//!     tokio::spawn(async move {
//!         let committer = assignment.committer().clone();
//!         let mut position = assignment.resume_at();
//!         while assignment.is_held() && position < 3 {
//!             committer.dispatched(position).await?; // in log order
//!             committer.completed(position)?; // from any handler, in any order
//!             position += 1;
//!         }
//!         if let Stop::Handover { .. } = assignment.stopped().await {
//!             // Handlers are done here; dropping the assignment says the partition is
//!             // drained: the worker writes the final checkpoint, then releases the lease.
//!         }
//!         Ok::<(), checkpoint_committer::CommitterError>(())
//!     });
//! }
//! # while worker.stats().held.len() < 4 { tokio::time::sleep(Duration::from_millis(5)).await; }
//! # tokio::time::sleep(Duration::from_millis(20)).await;
//!
//! worker.shutdown().await?; // hands every partition over, then leaves
//! assert_eq!(store.load("billing", "invoices", 2).await?, Some(3));
//! # Ok(()) }
//! ```
//!
//! # Ownership, step by step
//!
//! A **lease keeper** task renews all of the worker's leases in one request every
//! [renew interval](WorkerBuilder::renew_interval), reads the subscription's lease table
//! (live leases and live workers, `LeaseStore::leases`), and balances. At rest that is **two
//! store requests per renew interval, whatever the number of partitions**, and fewer when the
//! store or the host is loaded: a round at rest that took longer than half an interval is
//! followed by the next only twice its time after it started (at most four intervals), so a
//! fleet whose table reads run slow reads less often instead of keeping the store saturated
//! (the renews keep their cadence). The renew has a
//! cadence of its own: it goes out every interval whatever else the keeper is waiting for (a
//! slow final write, release, claim or table read), and while one renew has not answered
//! within an interval a second goes out beside it (never more than two at once).
//!
//! - **Local deadline.** The worker treats its leases as held until
//!   [`holder_deadline`](checkpoint_core::lease::holder_deadline) of the last acquire or renew
//!   that succeeded (counted from when it was *sent*). Every store request is bounded by it.
//!   When it passes without a renew, every assignment gets [`Stop::Lost`] at once, and
//!   [`Assignment::is_held`] is false from that instant, even in a worker that was frozen
//!   (a long pause, a `SIGSTOP`) and has not run its keeper again yet. A renew whose answer
//!   no longer lists a partition (a store that lost the grant: a failover to a replica that
//!   missed it) stops that partition's assignment with [`Stop::Lost`] at once; so does a renew
//!   answered `NotHeld` (the heartbeat expired) for every partition granted before it was
//!   sent, but not for one granted by an acquire answered since, which may have started the
//!   heartbeat that is live now: that one stays held under its own acquire's deadline.
//! - **Balancing.** With `P` partitions over `N` live workers, every worker ends with `⌊P/N⌋`
//!   or `⌈P/N⌉`. A worker below its share claims free partitions (never held, released,
//!   or expired); when none are left, it **asks** an owner above its share to hand one over
//!   (`LeaseStore::request_handover`): a live lease is never taken. The owner sees the
//!   request at its next renew and honours it only while it holds more than `⌊P/N⌋`. Sticky: a
//!   worker at its share neither claims nor asks, so a join moves only what the new worker's
//!   share requires. On a **cold start** (no live worker holds a partition), a worker's first
//!   round after joining only looks. When the table shows other live workers, a fleet is
//!   starting: each claims its share directly one renew interval after
//!   [`start`](WorkerBuilder::start), so that nothing is claimed twice and handed over again.
//!   When it shows none, the worker looks again a short settle later (a tenth of the renew
//!   interval, at most 25 ms) and, still alone, claims everything then: **a lone worker (a
//!   short job, a test, a command) gets its first assignments about 25 ms after `start`**, not
//!   a renew interval. Workers started in one process join within that settle and start as a
//!   fleet; one whose join lands later (a process started a moment after) finds the partitions
//!   held and gets its share by asking, as a worker joining a running fleet does, which moves
//!   its share and nothing else. Joining a running fleet, or taking over after a crash, waits
//!   for nothing.
//! - **Graceful handover**, in this order: [`Stop::Handover`] (the application stops
//!   dispatching), the drain (the application drops the [`Assignment`] once its handlers are
//!   done, or the [drain timeout](WorkerBuilder::drain_timeout) passes), the committer's final
//!   write of the partition, then the release of the lease. The next owner reads the stored
//!   checkpoint, which is exactly where this one stopped: **no entry is redone** on a drained
//!   handover. [`Worker::shutdown`] hands every partition over this way, then ends the
//!   worker's heartbeat so the others count it gone at once. The final write runs in the
//!   background and the lease stays held and renewed until it is stored, so a slow store
//!   delays that handover and nothing else. It is given the larger of the drain timeout and
//!   the lease duration (a handover slower than a lease is slower than letting the lease
//!   expire): a write still running then (a store that hangs) does not hold the partition for
//!   ever.
//!   The lease is released, the write lands when it lands (harmless: a store only moves a
//!   checkpoint forward), the next owner may resume before it and redo what it carried, and
//!   the handover counts in `final_write_failures`.
//! - **Under load.** The keeper's other requests back off when they fail or run slow: while
//!   something is moving, the next round comes a tenth of the renew interval later (at most
//!   50 ms), doubled for each keeper request that failed in a row and never sooner than the
//!   last round took, always within one renew interval; at rest, rounds that run slow space
//!   out (see above). Where newly granted partitions resume is read with a `load` each for up
//!   to 8, with one `list` of the group for more, so a worker claiming 100 partitions at once
//!   sends one request, not 100. A loaded store gets fewer claims, asks and table reads, never
//!   more, and a partition is lost only when the renew cannot get through before the local
//!   deadline.
//! - **Failure.** A crashed worker's heartbeat expires with its leases; the others see them
//!   free at their next round and take them: every partition is owned again within the lease
//!   duration plus one renew interval. (On DynamoDB, which has no clock, up to one more renew
//!   interval: a taker must first see the owner's heartbeat, then watch it stand still for the
//!   lease duration on its own clock.) Its committer's last writes may land late: harmless,
//!   since a store only moves a checkpoint forward. Entries it had completed after its last
//!   write are redone (at-least-once).
//! - **Growing.** A log that takes more partitions while the worker runs (a NATS stream given
//!   more subjects, a Kafka topic grown) raises the worker's count with
//!   [`Worker::grow_partitions`] (a subscription does it every discovery interval). The
//!   worker balances at once, no renew interval later: with `P` now larger, each worker's share
//!   grows and the new partitions are free, so every worker claims what its new share owes it
//!   from them. From a balanced fleet nothing held moves: every worker holds at most the old
//!   `⌈P/N⌉`, which the new shares never go below, and the free new partitions cover what
//!   every worker is owed. (A fleet caught mid-rebalance finishes it as it would have.) The
//!   count never decreases; each worker must be told, and one not told yet neither claims
//!   nor counts the new partitions.
//! - **Retired.** When the subscription is retired (`CheckpointAdmin::retire`, `checkpoint
//!   retire`), the next renew is refused: every assignment gets [`Stop::Lost`], the worker
//!   sends nothing more and stops. A [`Worker::shutdown`] already waiting then gets
//!   [`WorkerError::Refused`], a later one [`WorkerError::Stopped`].
//!
//! # Observing
//!
//! [`Worker::stats`] ([`WorkerStats`]): partitions held with their epochs, live workers,
//! unowned partitions and for how long, leases acquired, handovers in and out, drain timeouts,
//! losses, failed lease requests, store requests. With the `metrics` feature, the same figures
//! go through the `metrics` facade after every round, labelled `group`, `subscription`,
//! `worker`: gauges `checkpoint_worker_partitions_held`, `checkpoint_worker_live_workers`,
//! `checkpoint_worker_unowned_partitions`, `checkpoint_worker_longest_unowned_seconds`, and
//! counters `checkpoint_worker_acquired_total`, `checkpoint_worker_handovers_in_total`,
//! `checkpoint_worker_handovers_out_total`, `checkpoint_worker_losses_total`,
//! `checkpoint_worker_renew_failures_total`, `checkpoint_worker_store_requests_total` (the
//! feature's `metrics` module has them as constants). No exporter is chosen for you. Every
//! change of ownership is a `tracing` span (`partition_acquired`, `partition_handover`,
//! `partition_lost`) with the worker, partition
//! and epoch.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod assignment;
mod balance;
mod builder;
mod deadline;
mod error;
mod event;
mod keeper;
#[cfg(feature = "metrics")]
pub mod metrics;
mod settings;
mod shared;
mod stats;
mod store;
mod view;
mod worker;

pub use assignment::{Assignment, Stop};
pub use builder::{
    DEFAULT_DRAIN_TIMEOUT, DEFAULT_LEASE_DURATION, DEFAULT_RENEWS_PER_LEASE, WorkerBuilder,
};
pub use error::WorkerError;
pub use stats::WorkerStats;
pub use store::WorkerStore;
pub use view::HeldPartition;
pub use worker::{Assignments, Worker};

// Compile-time checks that the public handles stay `Send + Sync + 'static`: applications hold
// a worker in an `Arc` or a `static`, move assignments into spawned tasks, and keep any of
// them across `.await` points in a multi-threaded runtime. A field that broke this (an `Rc`, a
// `RefCell`, a std guard) would otherwise surface only in a user's build. `Assignments` is
// also `Unpin`, so `StreamExt::next` works on it without pinning.
const _: () = {
    fn assert_send_sync<T: Send + Sync + 'static>() {}
    fn assert_unpin<T: Unpin>() {}
    fn assert_all() {
        assert_send_sync::<Worker>();
        assert_send_sync::<WorkerBuilder>();
        assert_send_sync::<Assignment>();
        assert_send_sync::<Assignments>();
        assert_unpin::<Assignments>();
        assert_send_sync::<Stop>();
        assert_send_sync::<WorkerStats>();
        assert_send_sync::<HeldPartition>();
        assert_send_sync::<WorkerError>();
    }
    let _ = assert_all;
};
