//! The doors of [`SqlStore`] (see `checkpoint_core::door`), written once for every engine:
//! each method one call of the engine's requests on a pooled connection
//! ([`SqlStore::run`]), run again as the engine says.

mod admin;
mod hot_path;
mod lease;
mod parked;

#[cfg(doc)]
use crate::SqlStore;
