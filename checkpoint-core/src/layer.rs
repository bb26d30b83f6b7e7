//! Layers: one way to wrap any store (timing, slowness, faults, a guard kept alive, an audit of
//! its errors) without forwarding every method of every contract trait by hand.
//!
//! A layer is an [`Around`]: what runs around each call. [`Layered`] joins a store and an
//! `Around`, and implements every contract trait the store implements
//! ([`CheckpointStore`](crate::CheckpointStore),
//! [`ExclusiveCheckpointStore`](crate::ExclusiveCheckpointStore),
//! [`CheckpointAdmin`](crate::CheckpointAdmin), [`LeaseStore`](crate::LeaseStore),
//! [`ParkedStore`](crate::parked::ParkedStore) and
//! [`TransactionalStore`](crate::transactional::TransactionalStore)), each method once, here:
//! the call's arguments become a [`Call`], the store's own future the `request`, and the
//! `Around` returns the future the caller awaits. It may run the request as it is, delay it,
//! time it, look at what it answered, or answer instead of it (an error) without running it.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use checkpoint_core::door::BoxFuture;
//! use checkpoint_core::layer::{Around, Call, Layered};
//! use checkpoint_core::{CheckpointStore, Error, InMemoryCheckpointStore, Operation};
//!
//! /// Counts the writes, and refuses every call on partition 7.
//! #[derive(Default)]
//! struct Faults {
//!     writes: AtomicUsize,
//! }
//!
//! impl Around for Faults {
//!     fn around<'a, T: Send + 'static>(
//!         &'a self,
//!         call: Call<'a>,
//!         request: BoxFuture<'a, T>,
//!     ) -> BoxFuture<'a, T> {
//!         if call.partition() == Some(7) {
//!             let refused = Error::backend("faults", call.operation(), true, "partition 7 is down");
//!             return Box::pin(async move { Err(refused) });
//!         }
//!         if matches!(call, Call::Save { .. } | Call::SaveAll { .. }) {
//!             self.writes.fetch_add(1, Ordering::Relaxed);
//!         }
//!         request
//!     }
//! }
//!
//! let store = Layered::new(InMemoryCheckpointStore::new(), Faults::default());
//! store.save("billing", "invoices", 0, 10).await?;
//! assert!(store.save("billing", "invoices", 7, 10).await.is_err());
//! assert_eq!(store.around().writes.load(Ordering::Relaxed), 1);
//! assert_eq!(store.inner().load("billing", "invoices", 7).await?, None);
//! # Ok::<(), Error>(())
//! # }).unwrap();
//! ```
//!
//! # Why this shape
//!
//! - **One generic method, not one per operation.** Every wrapper of the workspace does the same
//!   thing around most calls (time it, delay it, fail it, record its error) and something of its
//!   own around a few (slow only the writes, hang only the renews, record what a release
//!   released). A trait with a method per operation would bring the forwarding back, one
//!   default method at a time; one `around` generic over the answer's type `T` is written once
//!   and picks the calls it cares for by matching on the [`Call`].
//! - **`Call` carries the arguments**, not only the [`Operation`](crate::Operation): a fault on
//!   one partition, a record of the positions saved, a join (an acquire of no partition) told
//!   apart from a claim all need them. Accessors give what most layers decide by
//!   ([`operation`](Call::operation), [`group`](Call::group),
//!   [`subscription`](Call::subscription), [`partition`](Call::partition),
//!   [`partitions`](Call::partitions)).
//! - **`T: 'static`**: every answer of the contract is an owned value, so a layer that must
//!   read one (a release's [`Released`](crate::Released)) downcasts it through
//!   [`std::any::Any`] after matching the call; a layer that does not never names `T`.
//! - **The request is a future not yet polled.** The contract's methods are `async`: nothing of
//!   the call is sent before its future is first polled, so an `Around` that drops `request`
//!   has not run it, and one that delays before awaiting it delays the request itself.
//! - **The same [`BoxFuture`] as the door's [`bound`](crate::door::Door::bound)**: a store's
//!   own future is already boxed by `async_trait`, so passing it adds no allocation, and a
//!   backend's bound and a layer read the same way.
//! - **[`Layer`] is tower's**: a value that turns a store into another. Every `Around` that is
//!   `Clone` (an `Arc` of one included) is a layer giving a [`Layered`], so layers stack
//!   (`timing.layer(slow.layer(store))`: the timing sees the slowness); a pair `(outer,
//!   inner)` is an `Around` too, for one `Layered` with both.
//! - **A `Layered` drops its store before its `Around`**, so an `Around` that only keeps
//!   something alive (a temporary file, a server) outlives every use of the store: its
//!   `around` is the default, which runs the request unchanged.
//!
//! What is not a layer: a store that routes calls to two stores (a worker's and an operator's)
//! is a store of its own, and so is one that changes what the contract means (the kit's broken
//! stores): they implement the traits themselves.

mod admin;
mod call;
mod checkpoints;
mod leases;
#[cfg(test)]
mod tests;

use std::sync::Arc;

pub use call::Call;

use crate::door::BoxFuture;

/// What a layer does around each call of a [`Layered`] store.
pub trait Around: Send + Sync {
    /// The future the caller of `call` awaits, given the store's own `request` (not yet
    /// polled: nothing is sent before it is). The default runs `request` unchanged.
    ///
    /// Dropping `request` answers the call without running it; awaiting it inside a future of
    /// the layer's own lets the layer wait before, time it, or look at its answer (through
    /// [`std::any::Any`] for one operation's type).
    fn around<'a, T: Send + 'static>(
        &'a self,
        call: Call<'a>,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        let _ = call;
        request
    }
}

impl<A: Around> Around for &A {
    fn around<'a, T: Send + 'static>(
        &'a self,
        call: Call<'a>,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        (**self).around(call, request)
    }
}

impl<A: Around> Around for Arc<A> {
    fn around<'a, T: Send + 'static>(
        &'a self,
        call: Call<'a>,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        (**self).around(call, request)
    }
}

/// Two layers as one: `Outer` around `Inner` around the request, as two [`Layered`] stacked
/// would be (`Inner` sees the call only when `Outer` runs its request).
impl<Outer: Around, Inner: Around> Around for (Outer, Inner) {
    fn around<'a, T: Send + 'static>(
        &'a self,
        call: Call<'a>,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        let inner = Box::pin(async move { self.1.around(call, request).await });
        self.0.around(call, inner)
    }
}

/// Turns a store into another, as tower's `Layer` turns a service: `layer.layer(store)`.
pub trait Layer<S> {
    /// The store it makes.
    type Store;

    /// `store`, wrapped.
    fn layer(&self, store: S) -> Self::Store;
}

/// An `Around` that is `Clone` (an `Arc` of one, a reference) is a layer: each store it
/// wraps gets a clone.
impl<S, A: Around + Clone> Layer<S> for A {
    type Store = Layered<S, A>;

    fn layer(&self, store: S) -> Layered<S, A> {
        Layered::new(store, self.clone())
    }
}

/// A store with a layer around every call: it implements each contract trait `S` implements,
/// passing every call to `S` through [`Around::around`].
///
/// The store is dropped before the `Around`.
#[derive(Debug, Clone, Default)]
pub struct Layered<S, A> {
    // Declared first, so dropped first.
    inner: S,
    around: A,
}

impl<S, A> Layered<S, A> {
    /// `inner`, with `around` around each of its calls.
    pub fn new(inner: S, around: A) -> Self {
        Self { inner, around }
    }

    /// The wrapped store, for calls that should not go through the layer.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The layer: what it recorded, its switches.
    pub fn around(&self) -> &A {
        &self.around
    }

    /// The wrapped store; the layer is dropped.
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// The wrapped store and the layer.
    pub fn into_parts(self) -> (S, A) {
        (self.inner, self.around)
    }
}
