//! A NATS JetStream [`Source`](checkpoint_core::source::Source): a stream's subjects are the
//! partitions, a message's stream sequence is its position, and a reader that resumes at a
//! checkpoint reads every stored message of its partition from there, none skipped.
//!
//! ```no_run
//! # async fn example() -> Result<(), checkpoint_core::source::SourceError> {
//! use checkpoint_core::source::Source;
//! use checkpoint_source_nats::{NatsSource, NatsSourceConfig};
//!
//! let client = async_nats::connect("nats://127.0.0.1:4222").await.expect("NATS is up");
//! let context = async_nats::jetstream::new(client);
//! let config = NatsSourceConfig::new("ORDERS", 8)?.with_subject_prefix("orders")?;
//! NatsSource::create_stream(&context, &config).await?; // once: subjects orders.*
//! let source = NatsSource::new_with_config(context, config).await?;
//!
//! let position = source.append(3, Some("order-17"), b"placed".to_vec()).await?;
//! let page = source.read(3, 0, 100).await?; // from a checkpoint: `resume_at()`
//! assert_eq!(page.entries.last().map(|entry| entry.position), Some(position));
//! assert_eq!(source.head(3).await?, Some(position));
//! // Nothing new yet: wait for the next message without polling (bound it yourself).
//! let _ = tokio::time::timeout(
//!     std::time::Duration::from_secs(1),
//!     source.wait(3, page.next),
//! ).await;
//! # Ok(()) }
//! ```
//!
//! # Layout
//!
//! | what | where | example |
//! | --- | --- | --- |
//! | the log | one stream, limits retention (the default), any storage | `ORDERS` |
//! | partition `p` | subject `<prefix>.<p>` (the prefix is the stream's name unless [`NatsSourceConfig::with_subject_prefix`]) | `orders.3` |
//! | position | the message's stream sequence (from 1, shared by all subjects, so a partition's positions are sparse) | `1042` |
//! | key | header `Checkpoint-Key` ([`KEY_HEADER`]) | `order-17` |
//! | appended at | the time the stream stored it | |
//! | partition count | `checkpoint-partitions=N` in the stream's description ([`PARTITIONS_MARKER`]) | `checkpoint-partitions=8` |
//!
//! [`NatsSource::create_stream`] makes such a stream: file storage, subjects `<prefix>.*`, the
//! count in the description. An existing stream is checked by [`NatsSource::new`] before
//! anything is read, each problem a [`SourceError::Setup`](checkpoint_core::source::SourceError::Setup)
//! saying what to do: a missing stream; work-queue or interest retention (they delete what a
//! consumer read); a partition subject the stream does not capture; a recorded count below
//! the source's (a count above it is a stream that grew: the source takes it); a wildcard that
//! may hold partitions beyond the count when no count is recorded.
//!
//! # Partitions that grow
//!
//! A stream can take more partitions while it is read: [`NatsSource::grow_to`] adds the
//! subjects `<prefix>.<p>` the stream does not capture yet (none under `<prefix>.*`) and
//! raises the count its description records, in one stream update. A message belongs to its
//! subject whatever the count, so existing partitions keep every message at its sequence; a
//! new partition is read from its start. A reader finds the new count with
//! [`discover_partitions`](checkpoint_core::source::Source::discover_partitions) (one stream
//! info request; a subscription calls it every discovery interval and leases the new
//! partitions without a restart). A recorded count below one a reader knew is refused with
//! `Setup` and the reader keeps its count; a stream that records no count does not grow (the
//! source keeps the count it was given). An append to a partition beyond the count known is
//! refused before any I/O: a writer of another process calls `discover_partitions` once the
//! stream grew.
//!
//! # Why no stored message is skipped
//!
//! JetStream assigns a message its sequence when it stores it, one message after another in
//! the stream's order: a sequence is never assigned twice, and once the stream has assigned
//! `s`, no later message gets a sequence below `s`. So the messages of a subject at or after
//! `from` that a consumer delivers in order are all the stored ones, and no message with a
//! lower sequence can appear after a read.
//!
//! - **A read** takes up to `max` messages the consumer has now (a pull that does not wait,
//!   `no_wait`), of an ephemeral pull consumer filtered to the partition's subject, started at
//!   `from` (deliver by start sequence), without acknowledgements. `next` is after the last
//!   one. Deliveries carry a consumer sequence that counts up by one; a jump (a pull abandoned
//!   halfway, a consumer reset) ends the read with what came before it and drops the consumer.
//! - **An empty read** asks the stream for its last sequence `L` first, then asks the stream
//!   (not the consumer) for the subject's first message at or after `from`. When there is
//!   none, `next` is `max(from, L + 1)`: every sequence up to `L` was assigned before the
//!   second question, and none of them is a message of the subject at or after `from`. A
//!   partition with few messages so moves its checkpoint along with the stream. When there
//!   is one (stored since the pull), the read pulls once more; still nothing, and `next`
//!   stays at `from`.
//! - **A message deleted** (by limits, `max_age`, a purge or a delete) is no longer read: it
//!   does not come back either. Size the stream's limits so that readers keep up.
//! - **[`NatsSource::append`]** returns the position once the stream acknowledged (stored) the
//!   message; a lost acknowledgement may hide a stored message, so publishing again may store
//!   it twice.
//!
//! # Costs
//!
//! A source keeps each partition's consumer between reads (up to four idle ones per
//! partition, for readers at different positions): a reader going on from the `next` its
//! last read returned sends one pull request per read. A read from elsewhere creates a
//! consumer (one more request) and the oldest idle one is deleted. An empty read adds two
//! requests (stream info, message get). Measured by the crate's `bench` example on 2 cores:
//! a read of 10 entries going on took about 85 µs (median), one from elsewhere about 330 µs;
//! reading 20,000 entries in pages of 500 ran at 0.8-1.0× the raw pull consumer of the same
//! messages.
//!
//! [`Source::wait`](checkpoint_core::source::Source::wait) leaves a pull request on the
//! server, which answers as soon as a message of the subject is stored (a push, no polling:
//! about 0.5 ms from publish to reader at rest), sent again every
//! [`NatsSourceConfig::with_wait_expiry`]; the message it brings is kept for the next read.
//! Meanwhile the wait asks every half expiry whether its consumer still exists (see below).
//! A read or wait that is cancelled or fails drops its consumer; consumers nobody pulls from
//! go after two minutes on the server.
//! [`Source::head`](checkpoint_core::source::Source::head) is one request (last message by
//! subject).
//!
//! # Server restarts and lost consumers
//!
//! The client reconnects by itself. A consumer does not survive a restart (the source makes
//! them in memory), and a pull sent to a consumer that no longer exists is never answered
//! (no error comes back). So a read whose kept consumer does not answer within a quarter of
//! the source's timeout drops it and reads again through a new consumer at the same
//! position, within the same timeout; a wait finds out by its periodic check and waits on a
//! new consumer. While the server is away, reads, waits and appends fail with retryable
//! errors (try again). Messages the stream stored survive with file storage, so nothing
//! acknowledged is lost; the tests restart the server under writers and readers.
//!
//! # Clusters and replicas
//!
//! Give [`NatsSource::connect`] a cluster's servers separated by commas
//! (`nats://a:4222,nats://b:4222,nats://c:4222`; [`server_addrs`] reads the same list for a
//! client of your own): the client starts with one that answers and moves to another when it
//! loses it. [`NatsSource::create_stream`] makes a stream of one replica; on a cluster make it
//! yourself with `num_replicas: 3` (`nats stream add --replicas 3`) and the same subjects,
//! retention and description, and open it with [`NatsSource::new_with_config`], which checks it
//! as any other. The stream's leader assigns sequences and acknowledges a publish once a
//! majority of the replicas stored it, and a new leader goes on from what that majority holds:
//! so an acknowledged entry survives the loss of one server of three, and the argument above
//! holds for a replicated stream. While the stream has no leader (a few seconds after its
//! leader died: appends went unacknowledged for 4 to 7 s in the test below, on NATS 2.9),
//! reads, waits and appends fail with retryable errors or time out; a subscription retries
//! them.
//!
//! Tested by `tests/integration/cluster.rs` on three nats-server 2.9.10 on loopback
//! (`scripts/services/nats-cluster.sh`): a stream of 6 partitions and 3 replicas, 4 writers
//! appending through [`NatsSource::append`] while a fleet of 3 subscriptions of one group (an
//! in-memory store, one entry in flight per partition) reads it; the stream's leader is
//! SIGKILLed, the other two elect a new one, the writers go on with it, the killed server is
//! started again and catches up. Then every acknowledged append is in the stream, the stream
//! holds nothing but appends (some whose acknowledgement failed), and the fleet handled every
//! stored entry once, each partition in order. In three runs: 1,571 to 2,290 acknowledged
//! entries (484 to 1,161 of them while the killed server was down), 82 to 184 failed appends
//! (none of them stored), no duplicate, no lease moved; the server was down 4.6 to 5.7 s, the
//! test took about 10 s.
//!
//! Written against NATS 2.9 (no batch direct get, no stream metadata: the count lives in the
//! description), which the tests run on.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod append;
mod config;
mod cursor;
mod error;
mod growth;
mod pool;
mod setup;
mod source;
mod subjects;

pub use config::{DEFAULT_TIMEOUT, DEFAULT_WAIT_EXPIRY, NatsSourceConfig, server_addrs};
pub use setup::PARTITIONS_MARKER;
pub use source::NatsSource;

/// The header that carries an entry's key.
pub const KEY_HEADER: &str = "Checkpoint-Key";
