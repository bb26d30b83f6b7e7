//! What `status` prints: one line per partition, or one JSON object.
//!
//! The JSON is stable across versions (fields may be added, never renamed or removed):
//!
//! ```json
//! {"group":"billing",
//!  "partitions":[{"epoch":3,"owner":"worker-a","parked":0,"partition":0,"position":1200,
//!                 "subscription":"invoices"},
//!                {"epoch":null,"owner":null,"parked":2,"partition":1,"position":null,
//!                 "subscription":"invoices"}]}
//! ```
//!
//! `partitions` is sorted by subscription (by the bytes of its name), then partition, and
//! holds every partition with a checkpoint, a live lease or a parked entry. `position` is the
//! checkpoint (`null` for none), `owner` and `epoch` the live lease's (`null` when nobody
//! holds it), `parked` the number of the partition's parked entries.
//!
//! With `--source`, each partition also has `head`, the position of its last entry in the log
//! (`null` when the log has no entry there, or no such partition), and `lag`, `head + 1 -
//! position` (0 when caught up; `null` without a head or a checkpoint):
//!
//! ```json
//! {"epoch":3,"head":1234,"lag":35,"owner":"worker-a","parked":0,"partition":0,
//!  "position":1200,"subscription":"invoices"}
//! ```
//!
//! The table then has the columns `HEAD` and `LAG` after `POSITION`, `-` where JSON has `null`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use checkpoint_core::parked::ParkedEntry;
use checkpoint_core::{Checkpoint, Lease};
use serde::Serialize;

use super::columns::write_columns;
use super::shown;

/// Where one partition of a subscription stands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionStatus {
    /// The subscription.
    pub subscription: String,
    /// The partition.
    pub partition: u32,
    /// Its checkpoint, if it has one.
    pub position: Option<u64>,
    /// Its live lease's owner and epoch, if someone holds it.
    pub lease: Option<(String, u64)>,
    /// How many of its entries are parked.
    pub parked: usize,
    /// The position of its last entry in the log, when the log was read and has one.
    pub head: Option<u64>,
}

impl PartitionStatus {
    /// How far its checkpoint is behind the log's head: `head + 1 - position`, the positions
    /// from the checkpoint (the first not completed) to the head, both counted; 0 when caught
    /// up. `None` without a checkpoint or a head.
    pub fn lag(&self) -> Option<u64> {
        Some(self.head?.saturating_add(1).saturating_sub(self.position?))
    }
}

/// What `status` shows of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusListing {
    /// The group.
    pub group: String,
    /// Its partitions, sorted by subscription, then partition.
    pub partitions: Vec<PartitionStatus>,
    /// Whether the log was read: the table and the JSON then show head and lag.
    pub with_heads: bool,
}

impl StatusListing {
    /// The status of every partition that has a checkpoint in `checkpoints`, a lease in
    /// `leases` (each with its subscription) or a parked entry in `parked`.
    pub fn new(
        group: &str,
        checkpoints: &[Checkpoint],
        leases: &[(String, Lease)],
        parked: &[ParkedEntry],
    ) -> Self {
        // `String`'s order is the order of its bytes, as every listing of the command sorts.
        let mut partitions: BTreeMap<(String, u32), PartitionStatus> = BTreeMap::new();
        for checkpoint in checkpoints {
            at(
                &mut partitions,
                &checkpoint.subscription,
                checkpoint.partition,
            )
            .position = Some(checkpoint.position);
        }
        for (subscription, lease) in leases {
            at(&mut partitions, subscription, lease.partition).lease =
                Some((lease.owner.clone(), lease.epoch));
        }
        for entry in parked {
            at(&mut partitions, &entry.subscription, entry.partition).parked += 1;
        }
        Self {
            group: group.to_owned(),
            partitions: partitions.into_values().collect(),
            with_heads: false,
        }
    }

    /// Whether there is no partition to show.
    pub fn is_empty(&self) -> bool {
        self.partitions.is_empty()
    }

    /// The partition numbers shown, each once, in order: those to read the log's heads of.
    pub fn partition_numbers(&self) -> BTreeSet<u32> {
        self.partitions.iter().map(|p| p.partition).collect()
    }

    /// Sets each partition's head, by partition number, from the log (none where `heads` has
    /// none), so that the table and the JSON show head and lag.
    pub fn set_heads(&mut self, heads: &BTreeMap<u32, Option<u64>>) {
        for partition in &mut self.partitions {
            partition.head = heads.get(&partition.partition).copied().flatten();
        }
        self.with_heads = true;
    }

    /// The JSON object (see the module doc).
    pub fn to_json(&self) -> StatusListingJson<'_> {
        // Without the log, head and lag are left out (`None`), not `null` (`Some(None)`).
        let read = |value: Option<u64>| self.with_heads.then_some(value);
        let partitions = self
            .partitions
            .iter()
            .map(|p| PartitionJson {
                epoch: p.lease.as_ref().map(|(_, epoch)| *epoch),
                head: read(p.head),
                lag: read(p.lag()),
                owner: p.lease.as_ref().map(|(owner, _)| owner.as_str()),
                parked: p.parked,
                partition: p.partition,
                position: p.position,
                subscription: &p.subscription,
            })
            .collect();
        StatusListingJson {
            group: &self.group,
            partitions,
        }
    }

    /// The table, one partition per line, `-` where there is no checkpoint, no live lease,
    /// no head or no lag; nothing for no partition.
    pub fn write_table(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let number = |value: Option<u64>| value.map_or_else(|| "-".to_owned(), |v| v.to_string());
        let rows: Vec<Vec<String>> = self
            .partitions
            .iter()
            .map(|p| {
                let mut row = vec![
                    shown(&p.subscription),
                    p.partition.to_string(),
                    number(p.position),
                ];
                if self.with_heads {
                    row.extend([number(p.head), number(p.lag())]);
                }
                row.extend([
                    p.lease
                        .as_ref()
                        .map_or_else(|| "-".to_owned(), |(owner, _)| shown(owner)),
                    number(p.lease.as_ref().map(|(_, epoch)| *epoch)),
                    p.parked.to_string(),
                ]);
                row
            })
            .collect();
        let columns: Vec<(&str, bool)> = if self.with_heads {
            let (before, after) = COLUMNS.split_at(3);
            before
                .iter()
                .chain(&HEAD_COLUMNS)
                .chain(after)
                .copied()
                .collect()
        } else {
            COLUMNS.to_vec()
        };
        write_columns(out, &columns, &rows)
    }
}

/// `status --json`: the object of the module doc. Fields in the order of their names, as in
/// every JSON row of the command (see [`super::write_json`]).
#[derive(Debug, Serialize)]
pub struct StatusListingJson<'a> {
    group: &'a str,
    partitions: Vec<PartitionJson<'a>>,
}

/// One partition of [`StatusListingJson`]. `head` and `lag` are there (a number or `null`) only
/// when the log was read: the outer `Option` says whether the field is written at all.
#[derive(Debug, Serialize)]
struct PartitionJson<'a> {
    epoch: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    head: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lag: Option<Option<u64>>,
    owner: Option<&'a str>,
    parked: usize,
    partition: u32,
    position: Option<u64>,
    subscription: &'a str,
}

/// The status of `partition` of `subscription` in `partitions`, added empty if it is not there.
fn at<'a>(
    partitions: &'a mut BTreeMap<(String, u32), PartitionStatus>,
    subscription: &str,
    partition: u32,
) -> &'a mut PartitionStatus {
    partitions
        .entry((subscription.to_owned(), partition))
        .or_insert_with(|| PartitionStatus {
            subscription: subscription.to_owned(),
            partition,
            ..PartitionStatus::default()
        })
}

/// The columns: title, and whether the values are aligned right.
const COLUMNS: [(&str, bool); 6] = [
    ("SUBSCRIPTION", false),
    ("PARTITION", true),
    ("POSITION", true),
    ("OWNER", false),
    ("EPOCH", true),
    ("PARKED", true),
];

/// The columns after `POSITION` when the log was read.
const HEAD_COLUMNS: [(&str, bool); 2] = [("HEAD", true), ("LAG", true)];

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// The JSON as a value, for comparing fields whatever their order.
    fn as_value(listing: &StatusListing) -> Value {
        serde_json::to_value(listing.to_json()).unwrap()
    }

    /// The JSON as the command writes it.
    fn text(listing: &StatusListing) -> String {
        serde_json::to_string(&listing.to_json()).unwrap()
    }

    fn lease(partition: u32, owner: &str, epoch: u64) -> Lease {
        Lease {
            partition,
            owner: owner.to_owned(),
            epoch,
            time_left: None,
            handover_requested_by: None,
        }
    }

    fn listing() -> StatusListing {
        StatusListing::new(
            "billing",
            &[
                Checkpoint::new("invoices", 1, 1_200),
                Checkpoint::new("invoices", 0, 9_223_372_036_854_775_807),
                Checkpoint::new("b", 0, 5),
            ],
            &[
                ("invoices".to_owned(), lease(1, "worker-a", 3)),
                ("quiet".to_owned(), lease(4, "worker-b", 1)),
            ],
            &[
                ParkedEntry::new("invoices", 1, 7, "e", 5),
                ParkedEntry::new("invoices", 1, 9, "e", 5),
                ParkedEntry::new("invoices", 2, 3, "e", 5),
            ],
        )
    }

    #[test]
    fn one_line_per_partition_sorted_and_aligned() {
        let mut out = Vec::new();
        listing().write_table(&mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "SUBSCRIPTION  PARTITION             POSITION  OWNER     EPOCH  PARKED\n\
             b                     0                    5  -             -       0\n\
             invoices              0  9223372036854775807  -             -       0\n\
             invoices              1                 1200  worker-a      3       2\n\
             invoices              2                    -  -             -       1\n\
             quiet                 4                    -  worker-b      1       0\n"
        );
    }

    #[test]
    fn the_json_has_the_documented_shape() {
        let value = as_value(&listing());
        assert_eq!(value["partitions"].as_array().unwrap().len(), 5, "{value}");
        assert_eq!(
            value["partitions"][2],
            json!({"subscription": "invoices", "partition": 1, "position": 1200,
                   "owner": "worker-a", "epoch": 3, "parked": 2})
        );
        assert_eq!(
            value["partitions"][3],
            json!({"subscription": "invoices", "partition": 2, "position": null,
                   "owner": null, "epoch": null, "parked": 1})
        );
    }

    /// `listing` with the log read: partition 0's head is 40 (`b` is behind, `invoices` past
    /// it), 1's is 1199 (caught up), 2 has no entry, 4 is not in the log.
    fn with_heads() -> StatusListing {
        let mut listing = listing();
        let heads = BTreeMap::from([(0, Some(40)), (1, Some(1_199)), (2, None)]);
        listing.set_heads(&heads);
        listing
    }

    #[test]
    fn the_log_adds_head_and_lag_after_the_position() {
        let mut out = Vec::new();
        with_heads().write_table(&mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "SUBSCRIPTION  PARTITION             POSITION  HEAD  LAG  OWNER     EPOCH  PARKED\n\
             b                     0                    5    40   36  -             -       0\n\
             invoices              0  9223372036854775807    40    0  -             -       0\n\
             invoices              1                 1200  1199    0  worker-a      3       2\n\
             invoices              2                    -     -    -  -             -       1\n\
             quiet                 4                    -     -    -  worker-b      1       0\n"
        );
    }

    #[test]
    fn the_json_has_head_and_lag_only_when_the_log_was_read() {
        let value = as_value(&with_heads());
        assert_eq!(
            value["partitions"][0],
            json!({"subscription": "b", "partition": 0, "position": 5, "head": 40, "lag": 36,
                   "owner": null, "epoch": null, "parked": 0})
        );
        assert_eq!(value["partitions"][2]["lag"], json!(0));
        assert_eq!(value["partitions"][3]["head"], json!(null));
        assert_eq!(value["partitions"][3]["lag"], json!(null));
        // No checkpoint, no lag.
        assert_eq!(value["partitions"][4]["lag"], json!(null));
        let plain = as_value(&listing());
        assert!(plain["partitions"][0].get("head").is_none(), "{plain}");
        assert!(plain["partitions"][0].get("lag").is_none(), "{plain}");
    }

    #[test]
    fn the_json_text_has_fields_in_name_order_and_head_and_lag_only_with_the_log() {
        // The exact text, not only the value: the fields in the order of their names, as the
        // command has printed them since its first version.
        assert_eq!(
            text(&listing()),
            concat!(
                r#"{"group":"billing","partitions":["#,
                r#"{"epoch":null,"owner":null,"parked":0,"partition":0,"position":5,"subscription":"b"},"#,
                r#"{"epoch":null,"owner":null,"parked":0,"partition":0,"position":9223372036854775807,"subscription":"invoices"},"#,
                r#"{"epoch":3,"owner":"worker-a","parked":2,"partition":1,"position":1200,"subscription":"invoices"},"#,
                r#"{"epoch":null,"owner":null,"parked":1,"partition":2,"position":null,"subscription":"invoices"},"#,
                r#"{"epoch":1,"owner":"worker-b","parked":0,"partition":4,"position":null,"subscription":"quiet"}]}"#,
            )
        );
        assert_eq!(
            text(&with_heads()),
            concat!(
                r#"{"group":"billing","partitions":["#,
                r#"{"epoch":null,"head":40,"lag":36,"owner":null,"parked":0,"partition":0,"position":5,"subscription":"b"},"#,
                r#"{"epoch":null,"head":40,"lag":0,"owner":null,"parked":0,"partition":0,"position":9223372036854775807,"subscription":"invoices"},"#,
                r#"{"epoch":3,"head":1199,"lag":0,"owner":"worker-a","parked":2,"partition":1,"position":1200,"subscription":"invoices"},"#,
                r#"{"epoch":null,"head":null,"lag":null,"owner":null,"parked":1,"partition":2,"position":null,"subscription":"invoices"},"#,
                r#"{"epoch":1,"head":null,"lag":null,"owner":"worker-b","parked":0,"partition":4,"position":null,"subscription":"quiet"}]}"#,
            )
        );
    }

    #[test]
    fn nothing_is_empty() {
        let listing = StatusListing::new("g", &[], &[], &[]);
        assert!(listing.is_empty());
        assert_eq!(as_value(&listing), json!({"group": "g", "partitions": []}));
    }
}
