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
//! - [`Error`], the one error type, and [`validation`], the input rules every backend applies
//!   before any I/O;
//! - [`InMemoryCheckpointStore`], the reference implementation;
//! - [`batch`], helpers for backends that save a batch natively.
//!
//! Backends live in their own crates (`checkpoint-postgres`, `checkpoint-redis`,
//! `checkpoint-dynamodb`); `checkpoint-conformance` proves that a store keeps the contract.
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

pub mod batch;
mod checkpoint;
pub mod error;
mod exclusive;
mod fingerprint;
mod memory;
mod query;
mod store;
mod store_impls;
pub mod validation;

pub use checkpoint::Checkpoint;
pub use error::{Argument, BoxError, Error, InvalidInput, InvalidReason, Operation};
pub use exclusive::ExclusiveCheckpointStore;
pub use fingerprint::Fingerprint;
pub use memory::InMemoryCheckpointStore;
pub use query::{Query, QueryItem, canonical_encoding, fingerprint};
pub use store::CheckpointStore;
