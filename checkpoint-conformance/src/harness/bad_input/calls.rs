//! The calls the driver makes, what they return, and the backend's own entry points beside
//! the trait's.

use async_trait::async_trait;
use checkpoint_core::{Checkpoint, Error, ExclusiveCheckpointStore, Fingerprint};

/// One call of the store's trait, with its arguments, as the driver makes it.
#[derive(Debug, Clone, Copy)]
#[allow(missing_docs)] // the fields are the trait methods' arguments
pub enum Call<'a> {
    /// [`load`](checkpoint_core::CheckpointStore::load).
    Load {
        group: &'a str,
        subscription: &'a str,
        partition: u32,
    },
    /// [`list`](checkpoint_core::CheckpointStore::list).
    List { group: &'a str },
    /// [`save`](checkpoint_core::CheckpointStore::save).
    Save {
        group: &'a str,
        subscription: &'a str,
        partition: u32,
        position: u64,
    },
    /// [`save_all`](checkpoint_core::CheckpointStore::save_all).
    SaveAll {
        group: &'a str,
        checkpoints: &'a [Checkpoint],
    },
    /// [`claim`](ExclusiveCheckpointStore::claim).
    Claim {
        group: &'a str,
        subscription: &'a str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    },
    /// [`advance`](ExclusiveCheckpointStore::advance).
    Advance {
        group: &'a str,
        subscription: &'a str,
        partition: u32,
        from: u64,
        to: u64,
    },
}

/// What a call returned when it succeeded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A save, batch or advance was done.
    Done,
    /// A load returned this.
    Loaded(Option<u64>),
    /// A list returned these.
    Listed(Vec<Checkpoint>),
    /// A claim returned this position.
    Claimed(u64),
}

impl Call<'_> {
    /// The trait method's name.
    pub fn name(&self) -> &'static str {
        match self {
            Call::Load { .. } => "load",
            Call::List { .. } => "list",
            Call::Save { .. } => "save",
            Call::SaveAll { .. } => "save_all",
            Call::Claim { .. } => "claim",
            Call::Advance { .. } => "advance",
        }
    }

    /// Makes this call through the trait.
    pub async fn on(self, store: &dyn ExclusiveCheckpointStore) -> Result<Reply, Error> {
        crate::call_through!(self, store, (), load list save save_all claim advance).1
    }
}

/// Makes a [`Call`](crate::harness::bad_input::Call) through the six methods named, each given
/// the leading arguments in `(…)` (none for the trait's, the caller's connection for a `*_in` family) before the call's own,
/// and evaluates to the method's name with what it returned: `(&'static str, Result<Reply,
/// Error>)`.
///
/// ```text
/// // In a backend's `MoreEntryPoints::send`, for its `*_in` family on a connection:
/// Some(checkpoint_conformance::call_through!(
///     call, store, (connection), load_in list_in save_in save_all_in claim_in advance_in
/// ))
/// ```
#[macro_export]
macro_rules! call_through {
    ($call:expr, $store:expr, ($($lead:expr),*),
     $load:ident $list:ident $save:ident $save_all:ident $claim:ident $advance:ident) => {{
        use $crate::harness::bad_input::{Call, Reply};
        match $call {
            Call::Load { group, subscription, partition } => (
                stringify!($load),
                $store.$load($($lead,)* group, subscription, partition).await.map(Reply::Loaded),
            ),
            Call::List { group } => (
                stringify!($list),
                $store.$list($($lead,)* group).await.map(Reply::Listed),
            ),
            Call::Save { group, subscription, partition, position } => (
                stringify!($save),
                $store
                    .$save($($lead,)* group, subscription, partition, position)
                    .await
                    .map(|()| Reply::Done),
            ),
            Call::SaveAll { group, checkpoints } => (
                stringify!($save_all),
                $store.$save_all($($lead,)* group, checkpoints).await.map(|()| Reply::Done),
            ),
            Call::Claim { group, subscription, partition, fingerprint, initial_position } => (
                stringify!($claim),
                $store
                    .$claim($($lead,)* group, subscription, partition, fingerprint, initial_position)
                    .await
                    .map(Reply::Claimed),
            ),
            Call::Advance { group, subscription, partition, from, to } => (
                stringify!($advance),
                $store
                    .$advance($($lead,)* group, subscription, partition, from, to)
                    .await
                    .map(|()| Reply::Done),
            ),
        }
    }};
}

/// A backend's own entry points beside the trait's, held to the same rules as the trait call
/// they match. `()` is a backend with none.
#[async_trait(?Send)]
pub trait MoreEntryPoints {
    /// The backend's entry point that does what `call` does and sends a request (the `*_in`
    /// family on a caller's connection, an advance that also writes), named, with what it
    /// returned; `None` when there is none for this call.
    ///
    /// It is called after the trait's call, with the same arguments when they must be refused
    /// or are valid. After a valid advance moved the checkpoint to `to`, it is called with an
    /// advance one step further, from `to` to `to + 1`.
    async fn send(&mut self, call: Call<'_>) -> Option<(&'static str, Result<Reply, Error>)> {
        let _ = call;
        None
    }

    /// The backend's entry points that check the same arguments as `call` but send nothing
    /// (a key built, a request prepared for the caller's own transaction), each named: every
    /// one must accept exactly what `call` accepts, refuse the rest naming the same argument,
    /// and never reach the server.
    fn build(&mut self, call: Call<'_>) -> Vec<(&'static str, Result<(), Error>)> {
        let _ = call;
        Vec::new()
    }
}

impl MoreEntryPoints for () {}
