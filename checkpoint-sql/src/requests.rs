//! What an engine's statements do on a connection: one trait per concern, as the engine's
//! `requests/` files are split (the hot path, the operations API, leases, parked entries, and
//! the statements themselves). [`SqlStore`](crate::SqlStore) calls them on a pooled connection
//! or on the caller's; each engine implements them, mostly through this crate's shared
//! requests ([`hot_path`](crate::hot_path), [`admin`](crate::admin), [`parked`](crate::parked)).
//!
//! Each method's arguments are already checked by the front (`checkpoint_core::door`).

pub use crate::engine::{Admin, HotPath, Leases, Parked, Statements};
