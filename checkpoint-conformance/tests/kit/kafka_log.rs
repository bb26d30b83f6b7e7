//! The simulated Kafka log step by step: offsets, markers, the high watermark and the last
//! stable offset; what the read-committed source returns at each step, and the records a
//! read-uncommitted reader returns and a reader bounded by the high watermark skips.

use std::sync::Arc;

use checkpoint_conformance::sources::kafka_log::{
    KafkaLog, KafkaTransaction, ReadCommittedSource, Record, TxState,
};
use checkpoint_core::source::{Page, Source};

use crate::broken_sources::{IsolationFlaw, KafkaReader};

/// Runs `body` on a runtime of its own.
fn run<F: std::future::Future<Output = ()>>(body: F) {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(body);
}

/// The positions and payloads of a page, and its `next`.
fn seen(page: &Page) -> (Vec<(u64, String)>, u64) {
    let entries = page
        .entries
        .iter()
        .map(|entry| {
            let payload = String::from_utf8_lossy(&entry.payload).into_owned();
            (entry.position, payload)
        })
        .collect();
    (entries, page.next)
}

/// The records of partition 0 as (offset, what): a payload, or "commit"/"abort" for a marker.
fn records(log: &KafkaLog) -> Vec<(u64, String)> {
    let snapshot = log.snapshot(0).expect("partition 0");
    snapshot
        .records
        .iter()
        .map(|record| match record {
            Record::Data { entry, .. } => {
                let payload = String::from_utf8_lossy(&entry.payload).into_owned();
                (record.offset(), payload)
            }
            Record::Marker { committed, .. } => {
                let marker = if *committed { "commit" } else { "abort" };
                (record.offset(), marker.to_owned())
            }
        })
        .collect()
}

fn at(offset: u64, what: &str) -> (u64, String) {
    (offset, what.to_owned())
}

/// The log of one partition after: transaction `a` writes offset 0, a plain producer offset
/// 1, transaction `b` offset 2 and stays open, `a` writes offset 3 and commits (marker at 4),
/// transaction `c` writes offset 5 and aborts (marker at 6), a plain record at 7. Returns the
/// log and `b`, still open.
fn interleaved() -> (Arc<KafkaLog>, KafkaTransaction) {
    let log = KafkaLog::new(1);
    let mut a = log.begin();
    a.append(0, "a", b"a0").expect("append");
    log.produce(0, "plain", b"plain1").expect("produce");
    let mut b = log.begin();
    b.append(0, "b", b"b2").expect("append");
    a.append(0, "a", b"a3").expect("append");
    a.commit();
    let mut c = log.begin();
    c.append(0, "c", b"c5").expect("append");
    c.abort();
    log.produce(0, "plain", b"plain7").expect("produce");
    (log, b)
}

#[test]
fn offsets_are_dense_and_markers_take_one() {
    let (log, b) = interleaved();
    let expected = vec![
        at(0, "a0"),
        at(1, "plain1"),
        at(2, "b2"),
        at(3, "a3"),
        at(4, "commit"),
        at(5, "c5"),
        at(6, "abort"),
        at(7, "plain7"),
    ];
    assert_eq!(records(&log), expected);
    let snapshot = log.snapshot(0).expect("partition 0");
    assert_eq!(snapshot.high_watermark, 8);
    assert_eq!(
        snapshot.last_stable_offset, 2,
        "b, open, took offset 2 first"
    );
    let states: Vec<TxState> = snapshot.data(0, 8).map(|(_, state)| state).collect();
    let (open, committed, aborted) = (TxState::Open, TxState::Committed, TxState::Aborted);
    assert_eq!(
        states,
        vec![committed, committed, open, committed, aborted, committed]
    );
    b.commit();
    let snapshot = log.snapshot(0).expect("partition 0");
    assert_eq!(
        (snapshot.high_watermark, snapshot.last_stable_offset),
        (9, 9)
    );
}

#[test]
fn read_committed_stops_at_the_last_stable_offset_and_carries_next_over_markers() {
    run(async {
        let (log, b) = interleaved();
        let source = ReadCommittedSource::new(Arc::clone(&log));
        let page = source.read(0, 0, 10).await.expect("read");
        assert_eq!(
            seen(&page),
            (vec![at(0, "a0"), at(1, "plain1")], 2),
            "below the LSO (2) only; nothing from b's open offset on"
        );
        assert_eq!(source.head(0).await.expect("head"), Some(1));
        b.commit();
        let page = source.read(0, 2, 10).await.expect("read");
        assert_eq!(
            seen(&page),
            (vec![at(2, "b2"), at(3, "a3"), at(7, "plain7")], 9),
            "b's record once committed; c's aborted record and the markers never, next past them"
        );
        assert_eq!(source.head(0).await.expect("head"), Some(7));
        let page = source.read(0, 4, 1).await.expect("read");
        assert_eq!(
            seen(&page),
            (vec![at(7, "plain7")], 8),
            "a read from a marker's offset returns the next committed record"
        );
    });
}

#[test]
fn a_reader_bounded_by_the_high_watermark_skips_an_open_transaction() {
    run(async {
        let (log, b) = interleaved();
        let reader = KafkaReader::new(Arc::clone(&log), IsolationFlaw::HighWatermark);
        let page = reader.read(0, 0, 10).await.expect("read");
        assert_eq!(
            seen(&page),
            (
                vec![at(0, "a0"), at(1, "plain1"), at(3, "a3"), at(7, "plain7")],
                8
            ),
            "b's open record at 2 left out, next at the high watermark"
        );
        b.commit();
        let after = reader.read(0, page.next, 10).await.expect("read");
        assert_eq!(seen(&after), (vec![], 9), "going on from 8: b2 is behind");
        let again = reader.read(0, 0, 10).await.expect("read");
        assert!(
            seen(&again).0.contains(&at(2, "b2")),
            "b2 is committed now, at 2, below the next = 8 already returned: the skip"
        );
    });
}

#[test]
fn a_read_uncommitted_reader_returns_open_and_aborted_records() {
    run(async {
        let (log, b) = interleaved();
        let reader = KafkaReader::new(Arc::clone(&log), IsolationFlaw::ReadUncommitted);
        let page = reader.read(0, 0, 10).await.expect("read");
        let expected = vec![
            at(0, "a0"),
            at(1, "plain1"),
            at(2, "b2"),
            at(3, "a3"),
            at(5, "c5"),
            at(7, "plain7"),
        ];
        assert_eq!(
            seen(&page),
            (expected, 8),
            "b2 of the open transaction and c5 of the aborted one returned; markers not"
        );
        b.abort();
        let committed = ReadCommittedSource::new(log);
        let page = committed.read(0, 0, 10).await.expect("read");
        let payloads: Vec<String> = seen(&page).0.into_iter().map(|(_, p)| p).collect();
        assert_eq!(payloads, ["a0", "plain1", "a3", "plain7"], "b2 was aborted");
    });
}
