//! A store that keeps something alive for as long as it is used: a layer that does nothing
//! around the calls but outlive the store.

use checkpoint_core::layer::{Around, Layered};

/// A store under test together with what it needs kept alive (a temporary directory, a server
/// started for it), which goes only after the store (a [`Layered`] store drops its store
/// first): every call is passed to the store unchanged. Made by [`guarded`].
pub type Guarded<S, G> = Layered<S, Guard<G>>;

/// What a [`Guarded`] store keeps alive: a layer that runs every call unchanged.
#[derive(Debug, Clone, Default)]
pub struct Guard<G>(pub G);

impl<G: Send + Sync> Around for Guard<G> {}

/// `store`, keeping `guard` alive until it is dropped itself (`around().0` is the guard).
pub fn guarded<S, G>(store: S, guard: G) -> Guarded<S, G> {
    Layered::new(store, Guard(guard))
}
