use super::*;
use crate::monitor::Verdict;
use crate::output::status::StatusListing;

/// One partition of a test snapshot: partition, position, head, owner and epoch.
type Row<'a> = (u32, u64, u64, Option<(&'a str, u64)>);

/// A snapshot of subscription `s` with `partitions`.
fn snapshot(partitions: &[Row<'_>]) -> Snapshot {
    let mut listing = StatusListing {
        group: "g".to_owned(),
        partitions: Vec::new(),
        with_heads: true,
    };
    for &(partition, position, head, lease) in partitions {
        listing.partitions.push(PartitionStatus {
            subscription: "s".to_owned(),
            partition,
            position: Some(position),
            lease: lease.map(|(owner, epoch)| (owner.to_owned(), epoch)),
            parked: 0,
            head: Some(head),
        });
    }
    Snapshot {
        listing,
        requests: Requests {
            store: 3,
            source: 1,
        },
    }
}

fn fleet() -> Fleet {
    Fleet::new(
        "g",
        Settings {
            window: 3,
            ..Settings::default()
        },
    )
}

#[test]
fn owner_changes_count_from_the_first_sample_not_before_it() {
    let mut fleet = fleet();
    fleet.record(snapshot(&[(0, 5, 9, Some(("a", 1))), (1, 5, 9, None)]));
    let changes = |fleet: &Fleet| -> Vec<u64> {
        let mut by_partition: Vec<(u32, u64)> = fleet
            .report()
            .partitions
            .iter()
            .map(|p| (p.partition, p.owner_changes))
            .collect();
        by_partition.sort_unstable();
        by_partition.into_iter().map(|(_, c)| c).collect()
    };
    assert_eq!(changes(&fleet), [0, 0]);
    fleet.record(snapshot(&[
        (0, 5, 9, Some(("a", 1))),
        (1, 5, 9, Some(("b", 1))),
    ]));
    assert_eq!(changes(&fleet), [0, 1]);
    // A new epoch of the same owner (it lost the lease and took it again) is a change too.
    fleet.record(snapshot(&[
        (0, 5, 9, Some(("a", 2))),
        (1, 5, 9, Some(("b", 1))),
    ]));
    assert_eq!(changes(&fleet), [1, 1]);
}

#[test]
fn the_window_keeps_the_last_samples_and_restarts_after_a_gap() {
    let mut fleet = fleet();
    for position in [1, 2, 3, 4] {
        fleet.record(snapshot(&[(0, position, 9, Some(("a", 1)))]));
    }
    let window = |fleet: &Fleet| fleet.tracks[&("s".to_owned(), 0)].window.len();
    assert_eq!(window(&fleet), 3);
    // Not shown at one refresh: its old samples would judge across the gap.
    fleet.record(snapshot(&[]));
    assert!(fleet.report().partitions.is_empty());
    fleet.record(snapshot(&[(0, 9, 9, Some(("a", 1)))]));
    assert_eq!(window(&fleet), 1);
}

#[test]
fn the_report_puts_what_needs_attention_first_and_keeps_the_history() {
    let mut fleet = fleet();
    // 0: caught up; 1: stalled (owned, not moving); 2: stopped (no owner); 3: behind by more.
    for head in [20, 30] {
        fleet.record(snapshot(&[
            (0, head + 1, head, Some(("a", 1))),
            (1, 5, head, Some(("a", 1))),
            (2, 5, head, None),
            (3, 4, head, Some(("a", 1))),
        ]));
    }
    let report = fleet.report();
    let order: Vec<(u32, Verdict)> = report
        .partitions
        .iter()
        .map(|p| (p.partition, p.verdict))
        .collect();
    assert_eq!(
        order,
        [
            (2, Verdict::Stopped),
            (3, Verdict::Stalled),
            (1, Verdict::Stalled),
            (0, Verdict::CaughtUp)
        ]
    );
    assert_eq!(report.refreshes, 2);
    assert_eq!(report.requests.store, 3);
    let history = &report.history[0];
    assert_eq!(history.subscription, "s");
    assert_eq!(history.at_s.len(), 2);
    let lags: Vec<Vec<Option<u64>>> = history.partitions.iter().map(|p| p.lag.clone()).collect();
    assert_eq!(
        lags,
        [
            vec![Some(0), Some(0)],
            vec![Some(16), Some(26)],
            vec![Some(16), Some(26)],
            vec![Some(17), Some(27)]
        ]
    );
}

#[test]
fn a_failed_refresh_keeps_the_figures_and_says_why() {
    let mut fleet = fleet();
    fleet.record(snapshot(&[(0, 5, 9, Some(("a", 1)))]));
    fleet.record_error("timed out".to_owned());
    let report = fleet.report();
    assert_eq!(report.error.as_deref(), Some("timed out"));
    assert_eq!(report.partitions.len(), 1);
    fleet.record(snapshot(&[(0, 6, 9, Some(("a", 1)))]));
    assert_eq!(fleet.report().error, None);
}
