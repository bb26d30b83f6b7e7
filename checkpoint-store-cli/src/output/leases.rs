//! What `leases` prints: two tables (the leases, then the live workers), or one JSON object.
//!
//! The JSON is stable across versions (fields may be added, never renamed or removed):
//!
//! ```json
//! {"group":"billing",
//!  "subscriptions":[{
//!    "leases":[{"epoch":3,"handover_requested_by":"worker-b","owner":"worker-a","partition":0,
//!               "time_left_ms":1520}],
//!    "owners":[{"owner":"worker-a","time_left_ms":1520},{"owner":"worker-b","time_left_ms":1710}],
//!    "subscription":"invoices"}]}
//! ```
//!
//! `subscriptions` is sorted by the bytes of the name and holds only those with a live lease
//! or a live owner; `leases` is sorted by partition, `owners` by id. `time_left_ms` is the
//! time until expiry by the store's clock, in whole milliseconds, `null` where the store has
//! no clock (DynamoDB); `handover_requested_by` is `null` when nobody asked. Epochs are
//! integers up to 2^64 - 1.

use std::io::Write;
use std::time::Duration;

use checkpoint_core::LeaseTable;
use serde::Serialize;

use super::columns::write_columns;
use super::shown;

/// The leases and live owners of one subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionLeases {
    /// The subscription.
    pub subscription: String,
    /// Its live leases (sorted by partition) and live owners (sorted by id).
    pub table: LeaseTable,
}

/// What `leases` shows of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseListing {
    /// The group.
    pub group: String,
    /// The subscriptions with a live lease or owner, sorted by name.
    pub subscriptions: Vec<SubscriptionLeases>,
}

impl LeaseListing {
    /// A listing of `subscriptions` (in any order): those with nothing live are left out.
    pub fn new(group: &str, mut subscriptions: Vec<SubscriptionLeases>) -> Self {
        subscriptions.retain(|s| !s.table.leases.is_empty() || !s.table.owners.is_empty());
        subscriptions.sort_by(|a, b| a.subscription.as_bytes().cmp(b.subscription.as_bytes()));
        for s in &mut subscriptions {
            s.table.leases.sort_by_key(|lease| lease.partition);
            s.table
                .owners
                .sort_by(|a, b| a.owner.as_bytes().cmp(b.owner.as_bytes()));
        }
        Self {
            group: group.to_owned(),
            subscriptions,
        }
    }

    /// Whether there is nothing live to show.
    pub fn is_empty(&self) -> bool {
        self.subscriptions.is_empty()
    }

    /// The JSON object (see the module doc).
    pub fn to_json(&self) -> LeaseListingJson<'_> {
        let subscriptions = self
            .subscriptions
            .iter()
            .map(|s| SubscriptionJson {
                leases: s
                    .table
                    .leases
                    .iter()
                    .map(|lease| LeaseJson {
                        epoch: lease.epoch,
                        handover_requested_by: lease.handover_requested_by.as_deref(),
                        owner: &lease.owner,
                        partition: lease.partition,
                        time_left_ms: lease.time_left.map(millis),
                    })
                    .collect(),
                owners: s
                    .table
                    .owners
                    .iter()
                    .map(|owner| OwnerJson {
                        owner: &owner.owner,
                        time_left_ms: owner.time_left.map(millis),
                    })
                    .collect(),
                subscription: &s.subscription,
            })
            .collect();
        LeaseListingJson {
            group: &self.group,
            subscriptions,
        }
    }

    /// The leases' table, then (after a blank line, when there are leases) the live workers'
    /// table; nothing when there is nothing live.
    pub fn write_tables(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let mut leases = Vec::new();
        let mut workers = Vec::new();
        for s in &self.subscriptions {
            let name = shown(&s.subscription);
            for lease in &s.table.leases {
                leases.push(vec![
                    name.clone(),
                    lease.partition.to_string(),
                    shown(&lease.owner),
                    lease.epoch.to_string(),
                    time_left(lease.time_left),
                    lease
                        .handover_requested_by
                        .as_deref()
                        .map_or_else(|| "-".to_owned(), shown),
                ]);
            }
            for owner in &s.table.owners {
                workers.push(vec![
                    name.clone(),
                    shown(&owner.owner),
                    time_left(owner.time_left),
                ]);
            }
        }
        write_columns(out, &LEASE_COLUMNS, &leases)?;
        if !leases.is_empty() && !workers.is_empty() {
            writeln!(out)?;
        }
        write_columns(out, &WORKER_COLUMNS, &workers)
    }
}

/// `leases --json`: the object of the module doc. Fields in the order of their names, as in
/// every JSON row of the command (see [`super::write_json`]); `None` is `null`, never left out.
#[derive(Debug, Serialize)]
pub struct LeaseListingJson<'a> {
    group: &'a str,
    subscriptions: Vec<SubscriptionJson<'a>>,
}

/// One subscription of [`LeaseListingJson`].
#[derive(Debug, Serialize)]
struct SubscriptionJson<'a> {
    leases: Vec<LeaseJson<'a>>,
    owners: Vec<OwnerJson<'a>>,
    subscription: &'a str,
}

/// One live lease of [`SubscriptionJson`].
#[derive(Debug, Serialize)]
struct LeaseJson<'a> {
    epoch: u64,
    handover_requested_by: Option<&'a str>,
    owner: &'a str,
    partition: u32,
    time_left_ms: Option<u64>,
}

/// One live owner of [`SubscriptionJson`].
#[derive(Debug, Serialize)]
struct OwnerJson<'a> {
    owner: &'a str,
    time_left_ms: Option<u64>,
}

/// The leases' columns: title, and whether the values are aligned right.
const LEASE_COLUMNS: [(&str, bool); 6] = [
    ("SUBSCRIPTION", false),
    ("PARTITION", true),
    ("OWNER", false),
    ("EPOCH", true),
    ("TIME LEFT", true),
    ("HANDOVER REQUESTED BY", false),
];

/// The live workers' columns.
const WORKER_COLUMNS: [(&str, bool); 3] = [
    ("SUBSCRIPTION", false),
    ("WORKER", false),
    ("TIME LEFT", true),
];

/// Whole milliseconds, as the JSON gives them.
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// `1.520s`, or `unknown` where the store has no clock.
pub fn time_left(duration: Option<Duration>) -> String {
    match duration.map(millis) {
        Some(ms) => format!("{}.{:03}s", ms / 1000, ms % 1000),
        None => "unknown".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use checkpoint_core::{Lease, LeaseOwner};
    use serde_json::json;

    use super::*;

    fn lease(partition: u32, owner: &str, epoch: u64, ms: Option<u64>) -> Lease {
        Lease {
            partition,
            owner: owner.to_owned(),
            epoch,
            time_left: ms.map(Duration::from_millis),
            handover_requested_by: None,
        }
    }

    fn owner(owner: &str, ms: Option<u64>) -> LeaseOwner {
        LeaseOwner {
            owner: owner.to_owned(),
            time_left: ms.map(Duration::from_millis),
        }
    }

    fn listing() -> LeaseListing {
        let mut wanted = lease(1, "worker-a", 3, Some(1_520));
        wanted.handover_requested_by = Some("worker-b".to_owned());
        let invoices = LeaseTable {
            leases: vec![
                wanted,
                lease(0, "worker-a", 18_446_744_073_709_551_615, Some(1_520)),
            ],
            owners: vec![
                owner("worker-b", Some(61_005)),
                owner("worker-a", Some(1_520)),
            ],
        };
        let idle = LeaseTable {
            leases: vec![],
            owners: vec![owner("joiner", None)],
        };
        LeaseListing::new(
            "billing",
            vec![
                SubscriptionLeases {
                    subscription: "invoices".into(),
                    table: invoices,
                },
                SubscriptionLeases {
                    subscription: "empty".into(),
                    table: LeaseTable::default(),
                },
                SubscriptionLeases {
                    subscription: "a b".into(),
                    table: idle,
                },
            ],
        )
    }

    #[test]
    fn two_tables_sorted_and_aligned() {
        let mut out = Vec::new();
        listing().write_tables(&mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "SUBSCRIPTION  PARTITION  OWNER                    EPOCH  TIME LEFT  HANDOVER REQUESTED BY\n\
             invoices              0  worker-a  18446744073709551615     1.520s  -\n\
             invoices              1  worker-a                     3     1.520s  worker-b\n\
             \n\
             SUBSCRIPTION  WORKER    TIME LEFT\n\
             a b           joiner      unknown\n\
             invoices      worker-a     1.520s\n\
             invoices      worker-b    61.005s\n"
        );
    }

    #[test]
    fn the_json_has_the_documented_shape() {
        assert_eq!(
            serde_json::to_string(&listing().to_json()).unwrap(),
            r#"{"group":"billing","subscriptions":[{"leases":[],"owners":[{"owner":"joiner","time_left_ms":null}],"subscription":"a b"},{"leases":[{"epoch":18446744073709551615,"handover_requested_by":null,"owner":"worker-a","partition":0,"time_left_ms":1520},{"epoch":3,"handover_requested_by":"worker-b","owner":"worker-a","partition":1,"time_left_ms":1520}],"owners":[{"owner":"worker-a","time_left_ms":1520},{"owner":"worker-b","time_left_ms":61005}],"subscription":"invoices"}]}"#
        );
    }

    #[test]
    fn nothing_live_prints_nothing() {
        let listing = LeaseListing::new("g", vec![]);
        assert!(listing.is_empty());
        let mut out = Vec::new();
        listing.write_tables(&mut out).unwrap();
        assert!(out.is_empty());
        assert_eq!(
            serde_json::to_value(listing.to_json()).unwrap(),
            json!({"group": "g", "subscriptions": []})
        );
    }
}
