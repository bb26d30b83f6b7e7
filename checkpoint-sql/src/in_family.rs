//! The `*_in` family of a SQL store, written once: [`in_family!`](crate::in_family) writes
//! `load_in`, `list_in`, `save_in`, `save_all_in`, `claim_in` and `advance_in`, each the same
//! request as its counterpart on the pool, sent on the caller's connection through core's
//! front (checked, traced, bounded by the store's timeout).

/// Writes the `*_in` methods of a SQL store: every operation of the hot path on a connection
/// the caller holds, typically `&mut *transaction`, so that a read model and its checkpoint
/// commit together or not at all.
///
/// `in_family!(Store, Connection, save_in: "…", claim_in: "…", advance_in: "…")` needs a field
/// `Store::requests` whose `load`, `list`, `save`, `save_all`, `claim` and `advance` take
/// `&mut Connection` and the call's arguments (as for [`sql_doors!`](crate::sql_doors)); each
/// string is a paragraph of the engine's own about that method (locks, errors), added to its
/// documentation.
#[macro_export]
macro_rules! in_family {
    (
        $store:ty, $connection:ty,
        save_in: $save_note:literal,
        claim_in: $claim_note:literal,
        advance_in: $advance_note:literal $(,)?
    ) => {
        impl $store {
            /// [`load`](::checkpoint_core::CheckpointStore::load) on the caller's connection or
            /// transaction: inside a transaction, it sees what the transaction has written.
            ///
            /// # Errors
            ///
            /// As [`load`](::checkpoint_core::CheckpointStore::load).
            pub async fn load_in(
                &self,
                connection: &mut $connection,
                group: &str,
                subscription: &str,
                partition: u32,
            ) -> Result<Option<u64>, ::checkpoint_core::Error> {
                ::checkpoint_core::door::front::load_in(
                    self,
                    (group, subscription, partition),
                    |_checked| {
                        self.requests
                            .load(connection, group, subscription, partition)
                    },
                )
                .await
            }

            /// [`list`](::checkpoint_core::CheckpointStore::list) on the caller's connection or
            /// transaction: inside a transaction, it sees what the transaction has written.
            ///
            /// # Errors
            ///
            /// As [`list`](::checkpoint_core::CheckpointStore::list).
            pub async fn list_in(
                &self,
                connection: &mut $connection,
                group: &str,
            ) -> Result<Vec<::checkpoint_core::Checkpoint>, ::checkpoint_core::Error> {
                ::checkpoint_core::door::front::list_in(self, group, |_checked| {
                    self.requests.list(connection, group)
                })
                .await
            }

            /// [`save`](::checkpoint_core::CheckpointStore::save) on the caller's connection or
            /// transaction (pass `&mut *tx`): the checkpoint commits with whatever else the
            /// transaction writes, or not at all.
            ///
            #[doc = $save_note]
            ///
            /// # Errors
            ///
            /// As [`save`](::checkpoint_core::CheckpointStore::save).
            pub async fn save_in(
                &self,
                connection: &mut $connection,
                group: &str,
                subscription: &str,
                partition: u32,
                position: u64,
            ) -> Result<(), ::checkpoint_core::Error> {
                ::checkpoint_core::door::front::save_in(
                    self,
                    (group, subscription, partition),
                    position,
                    |_checked| {
                        self.requests
                            .save(connection, group, subscription, partition, position)
                    },
                )
                .await
            }

            /// [`save_all`](::checkpoint_core::CheckpointStore::save_all) on the caller's
            /// connection or transaction: one statement, whatever the size of the batch.
            ///
            /// # Errors
            ///
            /// As [`save_all`](::checkpoint_core::CheckpointStore::save_all).
            pub async fn save_all_in(
                &self,
                connection: &mut $connection,
                group: &str,
                checkpoints: &[::checkpoint_core::Checkpoint],
            ) -> Result<(), ::checkpoint_core::Error> {
                ::checkpoint_core::door::front::save_all_in(self, group, checkpoints, |_checked| {
                    self.requests.save_all(connection, group, checkpoints)
                })
                .await
            }

            /// [`claim`](::checkpoint_core::ExclusiveCheckpointStore::claim) on the caller's
            /// connection or transaction.
            ///
            #[doc = $claim_note]
            ///
            /// # Errors
            ///
            /// As [`claim`](::checkpoint_core::ExclusiveCheckpointStore::claim).
            pub async fn claim_in(
                &self,
                connection: &mut $connection,
                group: &str,
                subscription: &str,
                partition: u32,
                fingerprint: ::checkpoint_core::Fingerprint,
                initial_position: u64,
            ) -> Result<u64, ::checkpoint_core::Error> {
                ::checkpoint_core::door::front::claim_in(
                    self,
                    (group, subscription, partition),
                    initial_position,
                    |_checked| {
                        self.requests.claim(
                            connection,
                            group,
                            subscription,
                            partition,
                            fingerprint,
                            initial_position,
                        )
                    },
                )
                .await
            }

            /// [`advance`](::checkpoint_core::ExclusiveCheckpointStore::advance) on the
            /// caller's connection or transaction: run it in the transaction that writes the
            /// batch's read model, so that the read model and its position commit together or
            /// not at all. Of two processes projecting under one name, the second to reach
            /// this call gets [`Error::Moved`](::checkpoint_core::Error::Moved): roll the
            /// transaction back, another process has projected the batch.
            ///
            #[doc = $advance_note]
            ///
            /// # Errors
            ///
            /// As [`advance`](::checkpoint_core::ExclusiveCheckpointStore::advance).
            pub async fn advance_in(
                &self,
                connection: &mut $connection,
                group: &str,
                subscription: &str,
                partition: u32,
                from: u64,
                to: u64,
            ) -> Result<(), ::checkpoint_core::Error> {
                ::checkpoint_core::door::front::advance_in(
                    self,
                    (group, subscription, partition),
                    (from, to),
                    |_checked| {
                        self.requests
                            .advance(connection, group, subscription, partition, from, to)
                    },
                )
                .await
            }
        }
    };
}
