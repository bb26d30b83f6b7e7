//! The front of every store written once: a backend supplies its **door** (the requests it
//! sends and how it reads their replies), and the operations of the contract's traits check
//! their input, open their span, bound the call and record what came back here, the same way
//! for every backend.
//!
//! A backend implements [`Door`] (its name, where it keeps its data, how a call is bounded)
//! and one door trait per contract trait it serves ([`CheckpointDoor`], [`ExclusiveDoor`],
//! [`AdminDoor`], [`LeaseDoor`], [`ParkedDoor`]), then gets the contract's traits from
//! [`through_door!`](crate::through_door):
//!
//! ```text
//! CheckpointStore::save(group, subscription, partition, position)       (through_door!)
//!   └─ front::save: validate_save → span "checkpoint.save" → Door::bound(Save, …)
//!        └─ CheckpointDoor::send_save(Checked, …): the backend's one request
//! ```
//!
//! Every door method takes a [`Checked`] first: only the front can make one, so a door is
//! never called with input the contract's validation has not accepted, and a user who has
//! the door traits in scope still cannot reach it around the front.
//!
//! The in-memory store is written this way too, and the kit's tests run it: a door of your
//! own gets the same front. A door method is named after the contract's operation it serves,
//! with the prefix `send_` (the door sends the request: `CheckpointDoor::send_save` for
//! `CheckpointStore::save`), so a module may have both traits in scope and call `store.save(…)`
//! with no ambiguity.
//!
//! A store of your own, through its door (here a map under a lock; a real one sends a request
//! to its server in each method):
//!
//! ```
//! use std::collections::HashMap;
//! use std::fmt;
//! use std::sync::Mutex;
//!
//! use checkpoint_core::door::{BoxFuture, Checked, CheckpointDoor, Door};
//! use checkpoint_core::{Checkpoint, CheckpointStore, Error, Operation};
//!
//! #[derive(Default)]
//! struct MapStore(Mutex<HashMap<(String, String, u32), u64>>);
//!
//! checkpoint_core::through_door!(MapStore: checkpoints);
//!
//! impl Door for MapStore {
//!     const BACKEND: &'static str = "map";
//!
//!     fn place(&self) -> Option<&dyn fmt::Display> {
//!         None
//!     }
//!
//!     // Nothing to wait for here; a store on a server bounds the call by its timeout:
//!     // `Box::pin(checkpoint_core::timeout::within(Self::BACKEND, operation, timeout, request))`.
//!     fn bound<'a, T: Send + 'a>(
//!         &'a self,
//!         _: Operation,
//!         request: BoxFuture<'a, T>,
//!     ) -> BoxFuture<'a, T> {
//!         request
//!     }
//! }
//!
//! impl CheckpointDoor for MapStore {
//!     async fn send_list(&self, _: Checked, group: &str) -> Result<Vec<Checkpoint>, Error> {
//!         let map = self.0.lock().unwrap();
//!         Ok(map
//!             .iter()
//!             .filter(|((g, _, _), _)| g == group)
//!             .map(|((_, s, p), position)| Checkpoint::new(s.clone(), *p, *position))
//!             .collect())
//!     }
//!
//!     async fn send_load(
//!         &self,
//!         _: Checked,
//!         g: &str,
//!         s: &str,
//!         p: u32,
//!     ) -> Result<Option<u64>, Error> {
//!         Ok(self.0.lock().unwrap().get(&(g.into(), s.into(), p)).copied())
//!     }
//!
//!     async fn send_save(
//!         &self,
//!         _: Checked,
//!         g: &str,
//!         s: &str,
//!         p: u32,
//!         to: u64,
//!     ) -> Result<(), Error> {
//!         let mut map = self.0.lock().unwrap();
//!         let stored = map.entry((g.into(), s.into(), p)).or_insert(to);
//!         *stored = (*stored).max(to);
//!         Ok(())
//!     }
//!
//!     async fn send_save_all(
//!         &self,
//!         _: Checked,
//!         g: &str,
//!         all: &[Checkpoint],
//!     ) -> Result<(), Error> {
//!         let mut map = self.0.lock().unwrap();
//!         for c in all {
//!             let key = (g.into(), c.subscription.clone(), c.partition);
//!             let stored = map.entry(key).or_insert(c.position);
//!             *stored = (*stored).max(c.position);
//!         }
//!         Ok(())
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! // As its users see it: the contract's methods, through the front (the door's are `send_*`).
//! let store = MapStore::default();
//! store.save("billing", "invoices", 0, 10).await?;
//! store.save("billing", "invoices", 0, 3).await?; // behind: changes nothing
//! assert_eq!(store.load("billing", "invoices", 0).await?, Some(10));
//! // The front refused this one: the door never saw it.
//! assert!(store.save("billing", "", 0, 11).await.is_err());
//! # Ok::<(), Error>(())
//! # }).unwrap();
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use crate::error::{Error, Operation};

mod admin;
mod caller;
mod checkpoints;
mod exclusive;
mod lease;
mod parked;
#[cfg(test)]
mod tests;
mod through;

pub use admin::AdminDoor;
pub use checkpoints::CheckpointDoor;
pub use exclusive::ExclusiveDoor;
pub use lease::LeaseDoor;
pub use parked::ParkedDoor;

/// The front's functions, one per operation: what [`through_door!`](crate::through_door)
/// calls (a store whose trait impls need more than the front may call them itself), and the
/// `*_in` family's (`load_in` … `advance_in`), which a backend's own `*_in` methods call with
/// the request they build on the caller's connection.
pub mod front {
    pub use super::admin::{groups, purge, retire, retired, start_at};
    pub use super::caller::{advance_in, claim_in, list_in, load_in, save_all_in, save_in};
    pub use super::checkpoints::{list, load, save, save_all};
    pub use super::exclusive::{advance, claim};
    pub use super::lease::{acquire, leases, leave, release, renew, request_handover};
    pub use super::parked::{park, parked, retry_parked, unpark};
}

#[doc(hidden)]
pub use async_trait::async_trait;

/// A boxed call of the front: what [`Door::bound`] takes and returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, Error>> + Send + 'a>>;

/// Proof that the front checked a call's input: the first argument of every door method.
/// Only this crate makes one.
///
/// Neither `Clone` nor `Copy`: each call's proof is passed on once, to that call's request.
#[derive(Debug)]
pub struct Checked(());

impl Checked {
    fn new() -> Self {
        Self(())
    }
}

/// What every door says of itself: the backend's name, where it keeps its data, and how one
/// call is bounded.
pub trait Door: Send + Sync {
    /// The backend's name, in every span and error (`"postgres"`, `"sqlite"`, …).
    const BACKEND: &'static str;

    /// The table (or key space) this store keeps its data in, for the spans; `None` for a
    /// store with no such name.
    fn place(&self) -> Option<&dyn fmt::Display>;

    /// Runs one call's requests under the store's bound: for a backend with a timeout,
    /// [`timeout::within`](crate::timeout::within) with its timeout (feature `tokio`), plus
    /// whatever the backend does after a call it abandoned; for one without, `request`
    /// itself.
    fn bound<'a, T: Send + 'a>(
        &'a self,
        operation: Operation,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T>;
}

/// The backend's name of `door`'s type, for the span macro.
pub(crate) fn backend_of<D: Door>(_door: &D) -> &'static str {
    D::BACKEND
}

/// Opens the debug span of one operation (`checkpoint.<operation>`) with the fields every
/// backend fills (the backend, the place, and the operation's own arguments); `count` (what
/// the call returned, recorded by the front) and the fields some doors record about their
/// requests (`distinct_keys`, `found`, `moved`, `chunks`, …) are declared empty.
macro_rules! span {
    ($name:literal, $door:expr $(, $field:ident = $value:expr)* $(,)?) => {
        ::tracing::debug_span!(
            $name,
            backend = $crate::door::backend_of($door),
            table = $door.place().map(::tracing::field::display),
            $($field = $value,)*
            count = ::tracing::field::Empty,
            distinct_keys = ::tracing::field::Empty,
            found = ::tracing::field::Empty,
            moved = ::tracing::field::Empty,
            chunks = ::tracing::field::Empty,
            granted = ::tracing::field::Empty,
            refused = ::tracing::field::Empty,
            released = ::tracing::field::Empty,
            marked = ::tracing::field::Empty,
            owners = ::tracing::field::Empty,
            deleted = ::tracing::field::Empty,
        )
    };
}
pub(crate) use span;

/// Runs one call of `operation` through `door`'s bound, in `span`, and records on the span
/// the `count` of what it returned, when `count` says there is one.
pub(crate) async fn call<'a, D: Door, T: Send + 'a>(
    door: &'a D,
    operation: Operation,
    span: tracing::Span,
    request: impl Future<Output = Result<T, Error>> + Send + 'a,
    count: impl FnOnce(&T) -> Option<usize>,
) -> Result<T, Error> {
    use tracing::Instrument;
    let reply = door
        .bound(operation, Box::pin(request))
        .instrument(span.clone())
        .await?;
    if let Some(count) = count(&reply) {
        span.record("count", count);
    }
    Ok(reply)
}

/// For `call`: a reply with nothing to count.
pub(crate) fn uncounted<T>(_reply: &T) -> Option<usize> {
    None
}
