//! The doors of a SQL store, written once: [`sql_doors!`](crate::sql_doors) writes a store's
//! `CheckpointDoor`, `ExclusiveDoor`, `AdminDoor`, `LeaseDoor` and `ParkedDoor` impls, every
//! method a pooled connection and one call of the engine's `Requests`.

/// Writes the five door impls of a SQL store (see `checkpoint_core::door`) over its pool.
///
/// `sql_doors!(Store, rerun)` needs, where it is called: a method
/// `Store::connection(&self, Operation) -> Result<PoolConnection<_>, Error>` and a field
/// `Store::requests` whose methods take `&mut` that connection and the call's arguments
/// (`list`, `load`, `save`, `save_all`, `claim`, `advance`, `groups`, `start_at`, `retire`,
/// `retired`, `purge`, `acquire`, `renew`, `release`, `leave`, `leases`, `request_handover`,
/// `park`, `parked`, `retry_parked`, `unpark`; the lease ones take a
/// [`LeaseKey`](crate::lease::LeaseKey) and a duration in milliseconds); and `rerun`, a
/// macro in scope that wraps each request (`rerun!(request.await)`): the engine's policy for
/// running a request again ([`run_once`](crate::run_once) for none).
#[macro_export]
macro_rules! sql_doors {
    ($store:ty, $rerun:ident) => {
        impl ::checkpoint_core::door::CheckpointDoor for $store {
            async fn list(
                &self,
                _checked: ::checkpoint_core::door::Checked,
                group: &str,
            ) -> Result<Vec<::checkpoint_core::Checkpoint>, ::checkpoint_core::Error> {
                let mut connection = self.connection(::checkpoint_core::Operation::List).await?;
                $rerun!(self.requests.list(&mut connection, group).await)
            }

            async fn load(
                &self,
                _checked: ::checkpoint_core::door::Checked,
                group: &str,
                subscription: &str,
                partition: u32,
            ) -> Result<Option<u64>, ::checkpoint_core::Error> {
                let mut connection = self.connection(::checkpoint_core::Operation::Load).await?;
                $rerun!(
                    self.requests
                        .load(&mut connection, group, subscription, partition)
                        .await
                )
            }

            async fn save(
                &self,
                _checked: ::checkpoint_core::door::Checked,
                group: &str,
                subscription: &str,
                partition: u32,
                position: u64,
            ) -> Result<(), ::checkpoint_core::Error> {
                let mut connection = self.connection(::checkpoint_core::Operation::Save).await?;
                $rerun!(
                    self.requests
                        .save(&mut connection, group, subscription, partition, position)
                        .await
                )
            }

            async fn save_all(
                &self,
                _checked: ::checkpoint_core::door::Checked,
                group: &str,
                checkpoints: &[::checkpoint_core::Checkpoint],
            ) -> Result<(), ::checkpoint_core::Error> {
                let mut connection = self
                    .connection(::checkpoint_core::Operation::SaveAll)
                    .await?;
                $rerun!(
                    self.requests
                        .save_all(&mut connection, group, checkpoints)
                        .await
                )
            }
        }

        impl ::checkpoint_core::door::ExclusiveDoor for $store {
            async fn claim(
                &self,
                _checked: ::checkpoint_core::door::Checked,
                group: &str,
                subscription: &str,
                partition: u32,
                fingerprint: ::checkpoint_core::Fingerprint,
                initial_position: u64,
            ) -> Result<u64, ::checkpoint_core::Error> {
                let mut connection = self.connection(::checkpoint_core::Operation::Claim).await?;
                $rerun!(
                    self.requests
                        .claim(
                            &mut connection,
                            group,
                            subscription,
                            partition,
                            fingerprint,
                            initial_position,
                        )
                        .await
                )
            }

            async fn advance(
                &self,
                _checked: ::checkpoint_core::door::Checked,
                group: &str,
                subscription: &str,
                partition: u32,
                from: u64,
                to: u64,
            ) -> Result<(), ::checkpoint_core::Error> {
                let mut connection = self
                    .connection(::checkpoint_core::Operation::Advance)
                    .await?;
                $rerun!(
                    self.requests
                        .advance(&mut connection, group, subscription, partition, from, to)
                        .await
                )
            }
        }

        impl ::checkpoint_core::door::AdminDoor for $store {
            async fn groups(
                &self,
                _checked: ::checkpoint_core::door::Checked,
            ) -> Result<Vec<String>, ::checkpoint_core::Error> {
                let mut connection = self
                    .connection(::checkpoint_core::Operation::Groups)
                    .await?;
                $rerun!(self.requests.groups(&mut connection).await)
            }

            async fn start_at(
                &self,
                _checked: ::checkpoint_core::door::Checked,
                group: &str,
                subscription: &str,
                positions: &[(u32, u64)],
            ) -> Result<(), ::checkpoint_core::Error> {
                let mut connection = self
                    .connection(::checkpoint_core::Operation::StartAt)
                    .await?;
                $rerun!(
                    self.requests
                        .start_at(&mut connection, group, subscription, positions)
                        .await
                )
            }

            async fn retire(
                &self,
                _checked: ::checkpoint_core::door::Checked,
                group: &str,
                subscription: &str,
            ) -> Result<(), ::checkpoint_core::Error> {
                let mut connection = self
                    .connection(::checkpoint_core::Operation::Retire)
                    .await?;
                $rerun!(
                    self.requests
                        .retire(&mut connection, group, subscription)
                        .await
                )
            }

            async fn retired(
                &self,
                _checked: ::checkpoint_core::door::Checked,
                group: &str,
            ) -> Result<Vec<String>, ::checkpoint_core::Error> {
                let mut connection = self
                    .connection(::checkpoint_core::Operation::Retired)
                    .await?;
                $rerun!(self.requests.retired(&mut connection, group).await)
            }

            async fn purge(
                &self,
                _checked: ::checkpoint_core::door::Checked,
                group: &str,
                subscription: &str,
            ) -> Result<(), ::checkpoint_core::Error> {
                let mut connection = self.connection(::checkpoint_core::Operation::Purge).await?;
                $rerun!(
                    self.requests
                        .purge(&mut connection, group, subscription)
                        .await
                )
            }
        }

        impl ::checkpoint_core::door::LeaseDoor for $store {
            async fn acquire(
                &self,
                _checked: ::checkpoint_core::door::Checked,
                group: &str,
                subscription: &str,
                owner: &str,
                partitions: &[u32],
                duration: ::std::time::Duration,
            ) -> Result<::checkpoint_core::lease::Acquired, ::checkpoint_core::Error> {
                let mut connection = self
                    .connection(::checkpoint_core::Operation::Acquire)
                    .await?;
                let key = $crate::lease::LeaseKey::new(group, subscription, owner);
                let duration = $crate::lease::duration_ms(duration);
                $rerun!(
                    self.requests
                        .acquire(&mut connection, key, partitions, duration)
                        .await
                )
            }

            async fn renew(
                &self,
                _checked: ::checkpoint_core::door::Checked,
                group: &str,
                subscription: &str,
                owner: &str,
                duration: ::std::time::Duration,
            ) -> Result<Vec<::checkpoint_core::lease::HeldLease>, ::checkpoint_core::Error> {
                let mut connection = self.connection(::checkpoint_core::Operation::Renew).await?;
                let key = $crate::lease::LeaseKey::new(group, subscription, owner);
                let duration = $crate::lease::duration_ms(duration);
                $rerun!(self.requests.renew(&mut connection, key, duration).await)
            }

            async fn release(
                &self,
                _checked: ::checkpoint_core::door::Checked,
                group: &str,
                subscription: &str,
                owner: &str,
                partitions: &[u32],
            ) -> Result<::checkpoint_core::lease::Released, ::checkpoint_core::Error> {
                let mut connection = self
                    .connection(::checkpoint_core::Operation::Release)
                    .await?;
                let key = $crate::lease::LeaseKey::new(group, subscription, owner);
                $rerun!(
                    self.requests
                        .release(&mut connection, key, partitions)
                        .await
                )
            }

            async fn leave(
                &self,
                _checked: ::checkpoint_core::door::Checked,
                group: &str,
                subscription: &str,
                owner: &str,
            ) -> Result<Vec<u32>, ::checkpoint_core::Error> {
                let mut connection = self.connection(::checkpoint_core::Operation::Leave).await?;
                let key = $crate::lease::LeaseKey::new(group, subscription, owner);
                $rerun!(self.requests.leave(&mut connection, key).await)
            }

            async fn leases(
                &self,
                _checked: ::checkpoint_core::door::Checked,
                group: &str,
                subscription: &str,
            ) -> Result<::checkpoint_core::lease::LeaseTable, ::checkpoint_core::Error> {
                let mut connection = self
                    .connection(::checkpoint_core::Operation::Leases)
                    .await?;
                $rerun!(
                    self.requests
                        .leases(&mut connection, group, subscription)
                        .await
                )
            }

            async fn request_handover(
                &self,
                _checked: ::checkpoint_core::door::Checked,
                group: &str,
                subscription: &str,
                requester: &str,
                partitions: &[u32],
            ) -> Result<(), ::checkpoint_core::Error> {
                let mut connection = self
                    .connection(::checkpoint_core::Operation::RequestHandover)
                    .await?;
                let key = $crate::lease::LeaseKey::new(group, subscription, requester);
                $rerun!(
                    self.requests
                        .request_handover(&mut connection, key, partitions)
                        .await
                )
            }
        }

        impl ::checkpoint_core::door::ParkedDoor for $store {
            async fn park(
                &self,
                _checked: ::checkpoint_core::door::Checked,
                group: &str,
                entry: &::checkpoint_core::parked::ParkedEntry,
            ) -> Result<(), ::checkpoint_core::Error> {
                let mut connection = self.connection(::checkpoint_core::Operation::Park).await?;
                $rerun!(self.requests.park(&mut connection, group, entry).await)
            }

            async fn parked(
                &self,
                _checked: ::checkpoint_core::door::Checked,
                group: &str,
            ) -> Result<Vec<::checkpoint_core::parked::ParkedEntry>, ::checkpoint_core::Error> {
                let mut connection = self
                    .connection(::checkpoint_core::Operation::Parked)
                    .await?;
                $rerun!(self.requests.parked(&mut connection, group).await)
            }

            async fn retry_parked(
                &self,
                _checked: ::checkpoint_core::door::Checked,
                group: &str,
                subscription: &str,
                partition: u32,
                position: u64,
            ) -> Result<bool, ::checkpoint_core::Error> {
                let mut connection = self
                    .connection(::checkpoint_core::Operation::RetryParked)
                    .await?;
                let key = (group, subscription);
                $rerun!(
                    self.requests
                        .retry_parked(&mut connection, key, partition, position)
                        .await
                )
            }

            async fn unpark(
                &self,
                _checked: ::checkpoint_core::door::Checked,
                group: &str,
                subscription: &str,
                partition: u32,
                position: u64,
            ) -> Result<bool, ::checkpoint_core::Error> {
                let mut connection = self
                    .connection(::checkpoint_core::Operation::Unpark)
                    .await?;
                let key = (group, subscription);
                $rerun!(
                    self.requests
                        .unpark(&mut connection, key, partition, position)
                        .await
                )
            }
        }
    };
}

/// The rerun policy of an engine that runs no request again: the request's outcome as it is
/// (see [`sql_doors!`](crate::sql_doors)).
#[macro_export]
macro_rules! run_once {
    ($request:expr) => {
        $request
    };
}
