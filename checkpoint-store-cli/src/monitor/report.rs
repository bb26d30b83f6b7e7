//! What one refresh of the monitor shows: every partition with its verdict, sorted by what
//! needs attention, and each subscription's lag over time. The JSON the page reads
//! (`/api/fleet`) is this type, serialized:
//!
//! ```json
//! {"group":"billing","taken_at_ms":1765000000000,"uptime_s":42.0,"interval_s":2.0,
//!  "window_samples":10,"refreshes":21,"error":null,
//!  "requests":{"store":3,"source":1},
//!  "partitions":[{"subscription":"invoices","partition":2,"owner":"worker-a","epoch":3,
//!    "position":1200,"head":1234,"lag":35,"parked":0,"rate":0.0,"catch_up_s":null,
//!    "owner_changes":0,"verdict":"stalled",
//!    "evidence":"checkpoint 1200 unchanged for 18 s over 10 samples, lag 35, owner worker-a"}],
//!  "history":[{"subscription":"invoices","at_s":[0.0,2.0],
//!    "partitions":[{"partition":2,"lag":[30,35]}]}]}
//! ```
//!
//! `rate` is positions completed per second over the window, `catch_up_s` the seconds to lag
//! 0 at the window's rates (`null`: never at these rates, or unknown), `owner_changes` how
//! often the partition's owner or epoch changed since the monitor started. `error` is the last
//! refresh's error (the figures are then the refresh before it). Fields may be added, never
//! renamed or removed.

use serde::Serialize;

use super::verdict::Verdict;

/// One refresh's view of the fleet.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// The group.
    pub group: String,
    /// When the last successful refresh was taken, in milliseconds since the Unix epoch.
    pub taken_at_ms: u64,
    /// Seconds since the monitor started.
    pub uptime_s: f64,
    /// Seconds between refreshes.
    pub interval_s: f64,
    /// How many samples each verdict is judged from (at most).
    pub window_samples: usize,
    /// Successful refreshes so far.
    pub refreshes: u64,
    /// The last refresh's error, if it failed.
    pub error: Option<String>,
    /// The requests the last refresh made.
    pub requests: Requests,
    /// Every partition, what needs attention first.
    pub partitions: Vec<PartitionReport>,
    /// Each subscription's lag over time, per partition, oldest first.
    pub history: Vec<SubscriptionHistory>,
}

/// The calls one refresh makes: of the store's API, and of the log's `heads` (each one request
/// on the wire for the SQL stores and the SQL and Kafka logs, as their tests count).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Requests {
    /// To the store: the checkpoints, the parked entries and the leases of each subscription.
    pub store: u64,
    /// To the log: the heads of every shown partition, in one call.
    pub source: u64,
}

/// One partition: where it stands, how fast it moves, and its verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartitionReport {
    /// The subscription.
    pub subscription: String,
    /// The partition.
    pub partition: u32,
    /// The live lease's owner.
    pub owner: Option<String>,
    /// The live lease's epoch.
    pub epoch: Option<u64>,
    /// The checkpoint.
    pub position: Option<u64>,
    /// The log's last entry's position.
    pub head: Option<u64>,
    /// `head + 1 - position` (0 without entries; `None` with entries and no checkpoint).
    pub lag: Option<u64>,
    /// Parked entries.
    pub parked: usize,
    /// Positions completed per second over the window.
    pub rate: Option<f64>,
    /// Seconds to lag 0 at the window's rates.
    pub catch_up_s: Option<f64>,
    /// Owner or epoch changes since the monitor started.
    pub owner_changes: u64,
    /// The verdict.
    pub verdict: Verdict,
    /// Why.
    pub evidence: String,
}

/// One subscription's lag over time.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SubscriptionHistory {
    /// The subscription.
    pub subscription: String,
    /// When each sample was taken, in seconds since the monitor started.
    pub at_s: Vec<f64>,
    /// Each partition's lag at those times (`null` where unknown or not shown then).
    pub partitions: Vec<PartitionHistory>,
}

/// One partition's lag over time.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PartitionHistory {
    /// The partition.
    pub partition: u32,
    /// Its lag at each of the subscription's `at_s`.
    pub lag: Vec<Option<u64>>,
}

impl Report {
    /// The partitions that need attention (stopped, stalled, falling behind).
    pub fn attention(&self) -> impl Iterator<Item = &PartitionReport> {
        self.partitions
            .iter()
            .filter(|p| p.verdict.needs_attention())
    }

    /// How many partitions have `verdict`.
    pub fn count(&self, verdict: Verdict) -> usize {
        self.partitions
            .iter()
            .filter(|p| p.verdict == verdict)
            .count()
    }
}
