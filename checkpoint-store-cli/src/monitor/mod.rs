//! Watching a group over time: `status --watch`, `check` and `serve` sample the store and the
//! log every interval ([`snapshot`]), keep a window of samples per partition ([`fleet`]), judge
//! each partition's lag from it as Burrow judges a Kafka consumer's ([`verdict`]), and show the
//! result ([`report`]) in a terminal, as lines for a monitoring system, or as a page and
//! Prometheus metrics.
//!
//! Read-only: nothing here writes to the store or the log. A refresh makes one request for the
//! group's checkpoints, one for its parked entries, one per subscription for its leases and one
//! for the log's heads, whatever the partition count.

pub mod fleet;
pub mod report;
pub mod snapshot;
pub mod verdict;
pub mod view;

pub use fleet::{Fleet, Settings};
pub use report::{PartitionReport, Report, Requests};
pub use snapshot::{Sampler, Snapshot};
pub use verdict::{Judgement, Observation, Verdict, judge};
