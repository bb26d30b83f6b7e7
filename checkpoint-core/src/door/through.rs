//! [`through_door!`](crate::through_door): the contract's traits for a store, each method one
//! call of the front over the store's door.

/// Implements the contract's traits for a store type through its doors: each method is one
/// call of [`door::front`](crate::door::front), which checks the input, opens the span,
/// bounds the call by [`Door::bound`](crate::door::Door::bound) and calls the door.
///
/// Name the store type, then the traits it serves: `checkpoints`
/// ([`CheckpointStore`](crate::CheckpointStore) over a
/// [`CheckpointDoor`](crate::door::CheckpointDoor)), `exclusive`
/// ([`ExclusiveCheckpointStore`](crate::ExclusiveCheckpointStore) over an
/// [`ExclusiveDoor`](crate::door::ExclusiveDoor)), `admin`
/// ([`CheckpointAdmin`](crate::CheckpointAdmin) over an [`AdminDoor`](crate::door::AdminDoor)),
/// `leases` ([`LeaseStore`](crate::LeaseStore) over a [`LeaseDoor`](crate::door::LeaseDoor)),
/// `parked` ([`ParkedStore`](crate::parked::ParkedStore) over a
/// [`ParkedDoor`](crate::door::ParkedDoor)).
///
/// ```text
/// checkpoint_core::through_door!(MyStore: checkpoints, exclusive, admin, leases, parked);
/// // A generic store names its parameters, with their bounds, in brackets first:
/// checkpoint_core::through_door!([C: Client + Send + Sync] MyStore<C>: checkpoints, leases);
/// ```
///
/// (A blanket `impl<D: CheckpointDoor> CheckpointStore for D` is not possible: core's own
/// impls for `&S` and `Box<S>` would overlap it, since a crate may implement a door for a
/// reference to its own type. Hence a macro, and each store keeps its own public type.)
#[macro_export]
macro_rules! through_door {
    (@checkpoints [$($gen:tt)*] $store:ty) => {
        #[$crate::door::async_trait]
        impl<$($gen)*> $crate::CheckpointStore for $store {
            async fn list(&self, group: &str) -> Result<Vec<$crate::Checkpoint>, $crate::Error> {
                $crate::door::front::list(self, group).await
            }
            async fn load(
                &self,
                group: &str,
                subscription: &str,
                partition: u32,
            ) -> Result<Option<u64>, $crate::Error> {
                $crate::door::front::load(self, group, subscription, partition).await
            }
            async fn save(
                &self,
                group: &str,
                subscription: &str,
                partition: u32,
                position: u64,
            ) -> Result<(), $crate::Error> {
                $crate::door::front::save(self, group, subscription, partition, position).await
            }
            async fn save_all(
                &self,
                group: &str,
                checkpoints: &[$crate::Checkpoint],
            ) -> Result<(), $crate::Error> {
                $crate::door::front::save_all(self, group, checkpoints).await
            }
        }
    };
    (@exclusive [$($gen:tt)*] $store:ty) => {
        #[$crate::door::async_trait]
        impl<$($gen)*> $crate::ExclusiveCheckpointStore for $store {
            async fn claim(
                &self,
                group: &str,
                subscription: &str,
                partition: u32,
                fingerprint: $crate::Fingerprint,
                initial_position: u64,
            ) -> Result<u64, $crate::Error> {
                $crate::door::front::claim(
                    self,
                    group,
                    subscription,
                    partition,
                    fingerprint,
                    initial_position,
                )
                .await
            }
            async fn advance(
                &self,
                group: &str,
                subscription: &str,
                partition: u32,
                from: u64,
                to: u64,
            ) -> Result<(), $crate::Error> {
                $crate::door::front::advance(self, group, subscription, partition, from, to).await
            }
        }
    };
    (@admin [$($gen:tt)*] $store:ty) => {
        #[$crate::door::async_trait]
        impl<$($gen)*> $crate::CheckpointAdmin for $store {
            async fn groups(&self) -> Result<Vec<String>, $crate::Error> {
                $crate::door::front::groups(self).await
            }
            async fn start_at(
                &self,
                group: &str,
                subscription: &str,
                positions: &[(u32, u64)],
            ) -> Result<(), $crate::Error> {
                $crate::door::front::start_at(self, group, subscription, positions).await
            }
            async fn retire(&self, group: &str, subscription: &str) -> Result<(), $crate::Error> {
                $crate::door::front::retire(self, group, subscription).await
            }
            async fn retired(&self, group: &str) -> Result<Vec<String>, $crate::Error> {
                $crate::door::front::retired(self, group).await
            }
            async fn purge(&self, group: &str, subscription: &str) -> Result<(), $crate::Error> {
                $crate::door::front::purge(self, group, subscription).await
            }
        }
    };
    (@leases [$($gen:tt)*] $store:ty) => {
        #[$crate::door::async_trait]
        impl<$($gen)*> $crate::LeaseStore for $store {
            async fn acquire(
                &self,
                group: &str,
                subscription: &str,
                owner: &str,
                partitions: &[u32],
                duration: ::std::time::Duration,
            ) -> Result<$crate::Acquired, $crate::Error> {
                $crate::door::front::acquire(self, group, subscription, owner, partitions, duration)
                    .await
            }
            async fn renew(
                &self,
                group: &str,
                subscription: &str,
                owner: &str,
                duration: ::std::time::Duration,
            ) -> Result<Vec<$crate::HeldLease>, $crate::Error> {
                $crate::door::front::renew(self, group, subscription, owner, duration).await
            }
            async fn release(
                &self,
                group: &str,
                subscription: &str,
                owner: &str,
                partitions: &[u32],
            ) -> Result<$crate::Released, $crate::Error> {
                $crate::door::front::release(self, group, subscription, owner, partitions).await
            }
            async fn leave(
                &self,
                group: &str,
                subscription: &str,
                owner: &str,
            ) -> Result<Vec<u32>, $crate::Error> {
                $crate::door::front::leave(self, group, subscription, owner).await
            }
            async fn leases(
                &self,
                group: &str,
                subscription: &str,
            ) -> Result<$crate::LeaseTable, $crate::Error> {
                $crate::door::front::leases(self, group, subscription).await
            }
            async fn request_handover(
                &self,
                group: &str,
                subscription: &str,
                requester: &str,
                partitions: &[u32],
            ) -> Result<(), $crate::Error> {
                $crate::door::front::request_handover(
                    self,
                    group,
                    subscription,
                    requester,
                    partitions,
                )
                .await
            }
        }
    };
    (@parked [$($gen:tt)*] $store:ty) => {
        #[$crate::door::async_trait]
        impl<$($gen)*> $crate::parked::ParkedStore for $store {
            async fn park(
                &self,
                group: &str,
                entry: &$crate::parked::ParkedEntry,
            ) -> Result<(), $crate::Error> {
                $crate::door::front::park(self, group, entry).await
            }
            async fn parked(
                &self,
                group: &str,
            ) -> Result<Vec<$crate::parked::ParkedEntry>, $crate::Error> {
                $crate::door::front::parked(self, group).await
            }
            async fn retry_parked(
                &self,
                group: &str,
                subscription: &str,
                partition: u32,
                position: u64,
            ) -> Result<bool, $crate::Error> {
                $crate::door::front::retry_parked(self, group, subscription, partition, position)
                    .await
            }
            async fn unpark(
                &self,
                group: &str,
                subscription: &str,
                partition: u32,
                position: u64,
            ) -> Result<bool, $crate::Error> {
                $crate::door::front::unpark(self, group, subscription, partition, position).await
            }
        }
    };
    (@each $gen:tt $store:ty: $($part:ident),+) => {
        $( $crate::through_door!(@$part $gen $store); )+
    };
    ([$($gen:tt)*] $store:ty: $($part:ident),+ $(,)?) => {
        $crate::through_door!(@each [$($gen)*] $store: $($part),+);
    };
    ($store:ty: $($part:ident),+ $(,)?) => {
        $crate::through_door!([] $store: $($part),+);
    };
}
