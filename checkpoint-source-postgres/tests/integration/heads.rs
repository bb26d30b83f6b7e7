//! `heads`: every partition's head in one statement, exactly what `head` answers (under the
//! horizon of open transactions too), and one round trip on the wire for 1,024 partitions.

use std::time::Duration;

use checkpoint_conformance::round_trips::CountingProxy;
use checkpoint_core::source::Source;
use checkpoint_source_postgres::PostgresSource;
use sqlx::postgres::PgPoolOptions;

use crate::support::{connect_options, named_source, settle, source};

/// `heads` of `asked` against `head` of each (`None` beyond the count, not asked).
async fn assert_heads_are_heads(source: &PostgresSource, asked: &[u32]) -> Vec<Option<u64>> {
    let heads = source.heads(asked).await.unwrap();
    let mut one_by_one = Vec::new();
    for &partition in asked {
        one_by_one.push(if partition < source.partitions() {
            source.head(partition).await.unwrap()
        } else {
            None
        });
    }
    assert_eq!(heads, one_by_one, "heads of {asked:?} against head of each");
    heads
}

#[tokio::test]
async fn heads_are_head_of_each_partition_empty_ones_and_behind_an_open_transaction_too() {
    let _shared = crate::support::shared().await;
    let source = source("heads", 6).await;
    // Partition 0: a transaction of three entries (its head is the third's index), then one
    // more; 2 and 5 one each; 1, 3 and 4 empty (3 with a rolled-back entry).
    let mut transaction = source.pool().begin().await.unwrap();
    for payload in [b"a", b"b", b"c"] {
        source
            .append_in(&mut transaction, 0, None, payload)
            .await
            .unwrap();
    }
    transaction.commit().await.unwrap();
    let last_of_zero = source.append(0, None, b"d").await.unwrap();
    source.append(2, None, b"e").await.unwrap();
    source.append(5, Some("k"), b"f").await.unwrap();
    let mut rolled_back = source.pool().begin().await.unwrap();
    source
        .append_in(&mut rolled_back, 3, None, b"never")
        .await
        .unwrap();
    rolled_back.rollback().await.unwrap();
    for (partition, count) in [(0, 4), (2, 1), (5, 1)] {
        settle(&source, partition, count).await;
    }
    let asked = [5, 0, 1, 2, 3, 4, 0, 6, u32::MAX];
    let heads = assert_heads_are_heads(&source, &asked).await;
    assert_eq!(heads[1], Some(last_of_zero));
    assert_eq!(heads[2], None, "an empty partition");
    assert_eq!(heads[4], None, "a partition with a rolled-back entry only");
    assert_eq!(
        &heads[7..],
        [None, None],
        "partitions the log does not have"
    );
    assert_eq!(source.heads(&[]).await.unwrap(), []);

    // An open transaction holds the horizon: a later one's committed entries are not readable
    // yet, so they are in neither `head` nor `heads`.
    let mut open = source.pool().begin().await.unwrap();
    source.append_in(&mut open, 1, None, b"open").await.unwrap();
    let mut behind = source.pool().begin().await.unwrap();
    source.append_in(&mut behind, 4, None, b"g").await.unwrap();
    source.append_in(&mut behind, 0, None, b"h").await.unwrap();
    behind.commit().await.unwrap();
    let held = assert_heads_are_heads(&source, &asked).await;
    assert_eq!(held, heads, "nothing behind the open transaction counts");
    open.commit().await.unwrap();
    for (partition, count) in [(0, 5), (1, 1), (4, 1)] {
        settle(&source, partition, count).await;
    }
    let after = assert_heads_are_heads(&source, &asked).await;
    assert!(after[1] > heads[1] && after[2].is_some() && after[5].is_some());
}

#[tokio::test]
async fn heads_reads_the_stored_count_first_and_asks_grown_partitions() {
    let _shared = crate::support::shared().await;
    let (grown, table) = named_source("heads_grown", 2).await;
    grown.grow_to(3).await.unwrap();
    let position = grown.append(2, None, b"new").await.unwrap();
    settle(&grown, 2, 1).await;
    // Opened with the old count: the first operation takes the stored one.
    let stale = PostgresSource::new(grown.pool().clone(), 2)
        .with_table(&table)
        .unwrap();
    assert_eq!(
        stale.heads(&[2, 0, 3]).await.unwrap(),
        [Some(position), None, None]
    );
}

/// A source of 1,024 partitions on a fresh table whose pool goes through `proxy`.
async fn through(proxy: &CountingProxy) -> PostgresSource {
    let (direct, table) = named_source("heads_wire", 1024).await;
    for partition in [0, 511, 1023] {
        direct.append(partition, None, b"x").await.unwrap();
        settle(&direct, partition, 1).await;
    }
    let options = connect_options()
        .host("127.0.0.1")
        .port(proxy.local_addr().port());
    // No ping before each use (sqlx's `test_before_acquire`, on by default, adds one round
    // trip to every operation of any source or store): the count is the source's own.
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .test_before_acquire(false)
        .connect_with(options)
        .await
        .unwrap();
    PostgresSource::new(pool, 1024).with_table(&table).unwrap()
}

/// The pool checks a connection as it goes back (a ping in a task of its own, after the call
/// returned: see checkpoint-postgres's round-trip tests); on a current-thread runtime it
/// cannot run before the count is read, so the count is the call's own.
#[tokio::test(flavor = "current_thread")]
async fn the_heads_of_1024_partitions_are_one_round_trip() {
    let _shared = crate::support::shared().await;
    let upstream = connect_options();
    let proxy = CountingProxy::start((upstream.get_host().to_owned(), upstream.get_port()))
        .await
        .unwrap();
    let source = through(&proxy).await;
    let all: Vec<u32> = (0..1024).collect();
    // Warm-up: the setup check, and the statement prepared on the pool's one connection.
    let warm = source.heads(&all).await.unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;

    proxy.reset();
    let heads = source.heads(&all).await.unwrap();
    let trips = proxy.round_trips();
    println!("heads of 1024 partitions: {trips} round trip(s)");
    assert_eq!(trips, 1, "one statement for 1,024 partitions");
    assert_eq!(heads, warm);
    assert_eq!(heads.iter().flatten().count(), 3);
    tokio::time::sleep(Duration::from_millis(150)).await;

    proxy.reset();
    assert_eq!(source.heads(&[1024, 5000]).await.unwrap(), [None, None]);
    assert_eq!(
        proxy.round_trips(),
        0,
        "partitions it does not have are not asked"
    );

    // What it replaces, for the record: `head` once per partition.
    proxy.reset();
    for &partition in &all {
        assert_eq!(
            source.head(partition).await.unwrap(),
            heads[partition as usize]
        );
    }
    let one_by_one = proxy.round_trips();
    println!("head of each of 1024 partitions: {one_by_one} round trips");
    assert!(one_by_one >= 1024);
}
