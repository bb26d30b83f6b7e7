//! Leases: which worker owns a partition of a subscription, for how long, under which epoch.
//!
//! A [`LeaseStore`] keeps, beside the checkpoints and in the same store, one lease per (group,
//! subscription, partition) and one **heartbeat** per owner (a worker id the caller chooses).
//! The rules are in `CONTRACT.md`, "Leases"; in short:
//!
//! - An owner holds its leases of a subscription **together**: every successful
//!   [`acquire`](LeaseStore::acquire) or [`renew`](LeaseStore::renew) extends all of them to
//!   `duration` from that moment, in one request, whatever their number. When the owner stops
//!   renewing, all of them expire together and any other owner may take them.
//! - Every time a lease is granted to an owner that did not hold it live, its **epoch**
//!   increases; an epoch is never handed out twice for the same lease (until the subscription
//!   is [`purge`](crate::CheckpointAdmin::purge)d, which starts it anew). The epoch is a
//!   fencing token for the caller's own sinks: see [`HeldLease::epoch`].
//! - **One clock decides expiry**: the server's where it has one (PostgreSQL, SQLite's host,
//!   Redis `TIME` inside the script), never a client's wall clock. DynamoDB has no clock: its
//!   crate doc says what replaces it.
//! - A holder stops treating its leases as held at its **local deadline**,
//!   [`holder_deadline`]`(sent_at, duration)`: counted on its own monotonic clock from when it
//!   *sent* the acquire or renew that succeeded, shortened by [`safe_duration`] for clock-rate
//!   drift. However slow the network, the server cannot give the leases away before that.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use std::time::{Duration, Instant};
//! use checkpoint_core::{InMemoryCheckpointStore, LeaseStore, lease::holder_deadline};
//!
//! let store = InMemoryCheckpointStore::new();
//! let duration = Duration::from_secs(2);
//!
//! let sent_at = Instant::now();
//! let acquired = store.acquire("billing", "invoices", "worker-a", &[0, 1], duration).await?;
//! assert_eq!(acquired.granted.len(), 2);
//! let deadline = holder_deadline(sent_at, duration); // stop before this, unless renewed
//!
//! // Another worker cannot take a live lease...
//! let other = store.acquire("billing", "invoices", "worker-b", &[1], duration).await?;
//! assert_eq!(other.refused, vec![1]);
//!
//! // ...until it is released (at once, no expiry to wait for) or expires.
//! store.release("billing", "invoices", "worker-a", &[1]).await?;
//! let other = store.acquire("billing", "invoices", "worker-b", &[1], duration).await?;
//! assert!(other.granted[0].epoch > acquired.granted[1].epoch); // the fencing token moved on
//! # let _ = deadline;
//! # Ok::<(), checkpoint_core::Error>(())
//! # }).unwrap();
//! ```

use std::time::{Duration, Instant};

use async_trait::async_trait;

use crate::Error;

/// The shortest lease a store grants.
pub const MIN_LEASE_DURATION: Duration = Duration::from_millis(10);

/// The longest lease a store grants: a day. Anything longer is a mistake (a lost worker would
/// hold its partitions for longer than anyone waits).
pub const MAX_LEASE_DURATION: Duration = Duration::from_secs(24 * 60 * 60);

/// The most partitions one [`acquire`](LeaseStore::acquire),
/// [`release`](LeaseStore::release) or [`request_handover`](LeaseStore::request_handover)
/// names.
pub const MAX_LEASE_PARTITIONS: usize = 10_000;

/// The bound the contract assumes on how far the rate of any clock involved (the holder's
/// monotonic clock, the server's clock, a DynamoDB taker's monotonic clock) is from real time:
/// 0.5 %, that is 5,000 ppm, ten times the most NTP ever slews a clock. The clocks need not
/// agree on the time of day; their rates must not drift apart by more than this.
pub const MAX_CLOCK_RATE_ERROR: f64 = 0.005;

/// A fixed margin taken off every lease on the holder's side, for the stores' timestamp
/// granularity (a millisecond at worst).
pub const LEASE_SAFETY_MARGIN: Duration = Duration::from_millis(2);

/// How long a holder may treat a lease as held, counted from when it **sent** the request
/// that acquired or renewed it: `duration × (1 − 2 × MAX_CLOCK_RATE_ERROR) − LEASE_SAFETY_MARGIN`.
///
/// The server starts the lease's `duration` when it executes the request, which is after it
/// was sent, and measures it on a clock whose rate may differ from the holder's by at most
/// twice [`MAX_CLOCK_RATE_ERROR`]; so when the holder stops at this point, the lease has not
/// expired on the server yet, whatever the network delay.
pub fn safe_duration(duration: Duration) -> Duration {
    duration
        .mul_f64(1.0 - 2.0 * MAX_CLOCK_RATE_ERROR)
        .saturating_sub(LEASE_SAFETY_MARGIN)
}

/// The local deadline of leases acquired or renewed by a request sent at `sent_at`:
/// `sent_at + safe_duration(duration)`. Use the instant taken just **before** sending, on a
/// monotonic clock (`std::time::Instant`, or tokio's).
pub fn holder_deadline(sent_at: Instant, duration: Duration) -> Instant {
    sent_at + safe_duration(duration)
}

/// A lease its owner holds, as [`acquire`](LeaseStore::acquire) and
/// [`renew`](LeaseStore::renew) report it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HeldLease {
    /// The partition.
    pub partition: u32,
    /// The lease's epoch: it increased when this owner was granted the lease, and no other
    /// owner of this lease ever had it or will have it. Hand it to your sinks as a **fencing
    /// token**: a sink that remembers the highest epoch it has seen for the partition can
    /// refuse a write that carries a lower one, from an owner that lost the lease and does not
    /// know it yet.
    ///
    /// ```
    /// use std::collections::HashMap;
    ///
    /// /// A sink that refuses writes of an owner whose lease was taken over.
    /// #[derive(Default)]
    /// struct FencedSink { highest_epoch: HashMap<u32, u64>, rows: Vec<String> }
    ///
    /// impl FencedSink {
    ///     fn write(&mut self, partition: u32, epoch: u64, row: &str) -> Result<(), String> {
    ///         let highest = self.highest_epoch.entry(partition).or_default();
    ///         if epoch < *highest {
    ///             return Err(format!("epoch {epoch} is behind {highest}: the lease moved on"));
    ///         }
    ///         *highest = epoch;
    ///         self.rows.push(row.to_owned());
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let mut sink = FencedSink::default();
    /// sink.write(0, 8, "from the new owner").unwrap();
    /// assert!(sink.write(0, 7, "from the zombie").is_err());
    /// ```
    pub epoch: u64,
    /// Another owner that asked for this partition with
    /// [`request_handover`](LeaseStore::request_handover): release it when you can, after your
    /// last checkpoint of it is written.
    pub handover_requested_by: Option<String>,
}

/// What [`acquire`](LeaseStore::acquire) answered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Acquired {
    /// Every lease the owner holds after the call, the ones it asked for and the ones it held
    /// already, sorted by partition.
    pub granted: Vec<HeldLease>,
    /// The partitions asked for that another owner holds live, sorted.
    pub refused: Vec<u32>,
}

/// What [`release`](LeaseStore::release) answered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Released {
    /// The partitions released: free from now on, sorted.
    pub released: Vec<u32>,
    /// The partitions named that the owner did not hold live (another owner holds them, they
    /// expired, or nobody ever held them), sorted. Nothing was changed for them.
    pub not_held: Vec<u32>,
}

/// A live lease, as [`leases`](LeaseStore::leases) lists it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Lease {
    /// The partition.
    pub partition: u32,
    /// Who holds it.
    pub owner: String,
    /// Its epoch.
    pub epoch: u64,
    /// How long until it expires by the store's clock, if it is not renewed; `None` where the
    /// store has no clock (DynamoDB).
    pub time_left: Option<Duration>,
    /// The owner that asked for it, if any.
    pub handover_requested_by: Option<String>,
}

/// A live owner of a subscription: one whose heartbeat (its last acquire or renew) has not
/// expired, whether or not it holds a lease.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LeaseOwner {
    /// The owner's id.
    pub owner: String,
    /// How long until its heartbeat expires by the store's clock; `None` where the store has
    /// no clock (DynamoDB).
    pub time_left: Option<Duration>,
}

/// The leases and the live owners of a subscription, as [`leases`](LeaseStore::leases) reads
/// them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaseTable {
    /// Every live lease, sorted by partition. A partition without one is free.
    pub leases: Vec<Lease>,
    /// Every live owner, sorted by id: what a balancer counts as the workers present.
    pub owners: Vec<LeaseOwner>,
}

/// Partition ownership, kept in the store beside the checkpoints.
///
/// The clauses are in `CONTRACT.md`, "Leases", and the conformance kit's
/// `lease_store_tests!` proves them. Every store of the workspace implements it natively,
/// each operation one request where the backend allows (the crate doc of each says what each
/// costs).
///
/// Every method checks its input before any I/O: names as for checkpoints, `owner` and
/// `requester` like names, `duration` within
/// [`MIN_LEASE_DURATION`]`..=`[`MAX_LEASE_DURATION`], at most [`MAX_LEASE_PARTITIONS`]
/// partitions, none twice.
///
/// An owner id belongs to one store instance (and its clones) at a time: a worker that
/// restarts takes a new id. (DynamoDB keeps a holder's deadline in the instance that acquired,
/// so there another instance's renew or release of the same owner is refused.)
///
/// A retired subscription cannot be leased ([`Error::Retired`] from `acquire` and `renew`), and
/// [`purge`](crate::CheckpointAdmin::purge) removes its leases and heartbeats. A lease never
/// moves a checkpoint: the new holder reads the stored one, and a late save of the old holder
/// is harmless because saves only move forward.
#[async_trait]
pub trait LeaseStore: Send + Sync {
    /// Grants `owner` every partition of `partitions` that is free, expired, or its own, and
    /// **renews every lease `owner` holds** in the subscription (it is a renew too): all of them
    /// now expire `duration` after the store executes the call. `partitions` may be empty: the
    /// call then only starts or extends the owner's heartbeat, which is how a worker joins.
    ///
    /// A partition granted to an owner that did not hold it live gets a new, higher epoch; one
    /// it held live keeps its epoch. A partition another owner holds live is refused (see
    /// [`request_handover`](Self::request_handover) to ask for it). If the owner's heartbeat
    /// had expired, the leases it still names are not revived: they are free, and granted again
    /// only if asked for, under new epochs.
    async fn acquire(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
        duration: Duration,
    ) -> Result<Acquired, Error>;

    /// Renews every lease `owner` holds in the subscription, whatever their number, in one
    /// request: all of them now expire `duration` after the store executes the call. Returns
    /// them, with any handover requested.
    ///
    /// Fails with [`Error::NotHeld`] when the owner's heartbeat has expired or never existed:
    /// a renew never revives an expired lease.
    async fn renew(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        duration: Duration,
    ) -> Result<Vec<HeldLease>, Error>;

    /// Releases the `partitions` that `owner` holds live: each is free at once, for any owner
    /// to acquire without waiting for an expiry. Partitions it does not hold are left as they
    /// are and reported in [`Released::not_held`]. The owner's other leases and heartbeat are
    /// unchanged.
    ///
    /// Release a partition only after its last checkpoint is written: the next holder starts
    /// from the stored checkpoint.
    async fn release(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
    ) -> Result<Released, Error>;

    /// Releases every lease `owner` holds and ends its heartbeat, so that balancers stop
    /// counting it at once (a worker's graceful shutdown). Returns the partitions released,
    /// sorted. Leaving when holding nothing is `Ok` with none.
    async fn leave(&self, group: &str, subscription: &str, owner: &str) -> Result<Vec<u32>, Error>;

    /// The live leases and the live owners of the subscription.
    async fn leases(&self, group: &str, subscription: &str) -> Result<LeaseTable, Error>;

    /// Asks the holders of `partitions` to hand them to `requester`: each live lease among them
    /// is marked, and its holder sees [`HeldLease::handover_requested_by`] at its next renew.
    /// Free partitions are left as they are (acquire them instead). A later request replaces
    /// an earlier one; a grant or release clears it. Nothing is taken: a balancer asks instead
    /// of stealing a live lease.
    async fn request_handover(
        &self,
        group: &str,
        subscription: &str,
        requester: &str,
        partitions: &[u32],
    ) -> Result<(), Error>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_holder_stops_before_the_server_can_give_a_lease_away() {
        let duration = Duration::from_secs(2);
        let safe = safe_duration(duration);
        assert_eq!(safe, Duration::from_millis(1978));
        // Even if the holder's clock runs slow and the server's fast, both by the bound.
        let real_holder = safe.as_secs_f64() / (1.0 - MAX_CLOCK_RATE_ERROR);
        let real_server = duration.as_secs_f64() / (1.0 + MAX_CLOCK_RATE_ERROR);
        assert!(real_holder < real_server, "{real_holder} >= {real_server}");
        assert_eq!(
            safe_duration(MIN_LEASE_DURATION),
            Duration::from_micros(7_900)
        );
    }
}
