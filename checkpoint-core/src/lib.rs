//! The checkpoint store contract.
//!
//! A subscription reads a partitioned log and must remember, per (group, subscription,
//! partition), how far it has completed. A [`CheckpointStore`] keeps that number so that it only
//! ever moves forward: [`save`](CheckpointStore::save) moves it only when the new position is
//! ahead, as one atomic step, so a late save from a zombie owner after a lease handover can
//! never move it back, with no fencing needed.
//!
//! This crate holds what every backend shares:
//!
//! - [`CheckpointStore`], the trait, and [`Checkpoint`], the value;
//! - [`CheckpointAdmin`], the operations API beside it: every group, a new subscription at
//!   chosen positions, retiring one for good;
//! - [`Error`], the one error type, and [`validation`], the input rules every backend applies
//!   before any I/O;
//! - [`LeaseStore`], partition ownership beside the checkpoints: leases with a fencing epoch,
//!   renewed all at once, expired by the store's one clock ([`lease`]);
//! - [`door`], the front every store shares: the checks, spans, timeout and counts of every
//!   operation, written once; a backend supplies only its requests (its door), and a store of
//!   your own gets the contract's traits from [`through_door!`];
//! - [`InMemoryCheckpointStore`], the reference implementation;
//! - [`layer`], one way to wrap any store (timing, slowness, faults, a guard): an
//!   [`Around`](layer::Around) runs around each call of a [`Layered`](layer::Layered) store;
//! - [`source`], the contract of the logs a subscription reads (no entry ever arrives below
//!   where a read said to go on), with [`source::InMemorySource`];
//! - [`batch`], helpers for backends that save a batch natively;
//! - [`settings`], the settings every store shares ([`DEFAULT_TIMEOUT`]) and how they are
//!   checked, and [`stored`], the range rules for values read back and the one error
//!   ([`UnexpectedValue`]) for a stored value no store writes.
//!
//! The other crates of the workspace:
//!
//! | crate | what |
//! | --- | --- |
//! | `checkpoint-postgres` | PostgreSQL on sqlx: one SQL statement per hot-path operation |
//! | `checkpoint-sqlite` | embedded and durable: SQLite on sqlx |
//! | `checkpoint-redis` | Redis and Redis Cluster on redis-rs: Lua scripts |
//! | `checkpoint-dynamodb` | DynamoDB on aws-sdk-dynamodb: conditional writes |
//! | `checkpoint-committer` | out-of-order completions in, gap-free checkpoints out, one write per interval |
//! | `checkpoint-conformance` | the conformance kit: proves that a store, ours or yours, keeps the contract |
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use checkpoint_core::{Checkpoint, CheckpointStore, InMemoryCheckpointStore};
//!
//! let store: Arc<dyn CheckpointStore> = Arc::new(InMemoryCheckpointStore::new());
//! store
//!     .save_all("billing", &[Checkpoint::new("invoices", 0, 10), Checkpoint::new("invoices", 1, 7)])
//!     .await?;
//! store.save("billing", "invoices", 0, 3).await?; // behind: changes nothing
//! let mut all = store.list("billing").await?;
//! all.sort();
//! assert_eq!(all, vec![Checkpoint::new("invoices", 0, 10), Checkpoint::new("invoices", 1, 7)]);
//! # Ok::<(), checkpoint_core::Error>(())
//! # }).unwrap();
//! ```
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod admin;
pub mod backoff;
pub mod batch;
mod checkpoint;
pub mod door;
pub mod error;
mod exclusive;
mod fingerprint;
pub mod layer;
pub mod lease;
mod memory;
mod memory_admin;
mod memory_lease;
mod memory_parked;
pub mod parked;
mod query;
pub mod settings;
pub mod source;
mod store;
mod store_impls;
pub mod stored;
#[cfg(feature = "tokio")]
pub mod timeout;
pub mod transactional;
pub mod validation;

pub use admin::CheckpointAdmin;
pub use checkpoint::Checkpoint;
pub use error::{Argument, BoxError, Error, InvalidInput, InvalidReason, Operation};
pub use exclusive::ExclusiveCheckpointStore;
pub use fingerprint::Fingerprint;
pub use lease::{Acquired, HeldLease, Lease, LeaseOwner, LeaseStore, LeaseTable, Released};
pub use memory::InMemoryCheckpointStore;
pub use query::{Query, QueryItem, canonical_encoding, fingerprint};
pub use settings::DEFAULT_TIMEOUT;
pub use store::CheckpointStore;
pub use stored::UnexpectedValue;

/// The README's examples, compiled and run as doc tests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
