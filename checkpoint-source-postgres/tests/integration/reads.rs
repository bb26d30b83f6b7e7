//! Reads: order, positions, transactions committed out of order, rollbacks, long transactions.

use std::time::Duration;

use checkpoint_core::source::Source;
use checkpoint_source_postgres::position::{INDEX_BITS, decode};

use crate::support::{named_source, read_all, settle, source};

#[tokio::test]
async fn entries_come_back_in_order_with_key_payload_and_time_from_every_position() {
    let _shared = crate::support::shared().await;
    let source = source("reads", 2).await;
    let mut appended = Vec::new();
    for i in 0..7u8 {
        let key = format!("stream-{}", i % 3);
        appended.push(source.append(1, Some(&key), &[i]).await.unwrap());
    }
    settle(&source, 1, 7).await;
    let all = source.read(1, 0, 100).await.unwrap();
    let positions: Vec<u64> = all.entries.iter().map(|e| e.position).collect();
    assert_eq!(
        positions, appended,
        "append returns the position a read gives"
    );
    assert!(positions.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(all.next, positions[6] + 1);
    assert_eq!(all.entries[4].key.as_deref(), Some("stream-1"));
    assert_eq!(all.entries[4].payload, vec![4]);
    assert!(all.entries[4].appended_at.is_some());
    assert_eq!(source.head(1).await.unwrap(), Some(positions[6]));
    assert_eq!(source.head(0).await.unwrap(), None);
    assert!(source.read(0, 0, 10).await.unwrap().entries.is_empty());
    // From every position (and every checkpoint between), the rest in pages of any size.
    for (i, &position) in positions.iter().enumerate() {
        for max in [1, 2, 100] {
            let rest = read_all(&source, 1, position, max).await;
            let expected: Vec<u64> = positions[i..].to_vec();
            assert_eq!(rest.iter().map(|e| e.0).collect::<Vec<_>>(), expected);
        }
        let after = read_all(&source, 1, position + 1, 3).await;
        assert_eq!(after.len(), positions.len() - i - 1);
    }
    let empty = source.read(1, all.next, 10).await.unwrap();
    assert!(empty.entries.is_empty());
    assert_eq!(
        empty.next, all.next,
        "an empty page goes on from where it was asked"
    );
}

#[tokio::test]
async fn a_transaction_s_entries_share_its_id_and_count_per_partition_and_a_rollback_leaves_none() {
    let _shared = crate::support::shared().await;
    let source = source("tx", 2).await;
    let mut transaction = source.pool().begin().await.unwrap();
    let a = source
        .append_in(&mut transaction, 0, None, b"a")
        .await
        .unwrap();
    let b = source
        .append_in(&mut transaction, 1, None, b"b")
        .await
        .unwrap();
    let c = source
        .append_in(&mut transaction, 0, None, b"c")
        .await
        .unwrap();
    assert_eq!(decode(a).0, decode(c).0);
    assert_eq!((decode(a).1, decode(b).1, decode(c).1), (0, 0, 1));
    assert!(
        source.read(0, 0, 10).await.unwrap().entries.is_empty(),
        "not committed yet"
    );
    transaction.commit().await.unwrap();
    settle(&source, 0, 2).await;
    let page = source.read(0, 0, 10).await.unwrap();
    let positions: Vec<u64> = page.entries.iter().map(|e| e.position).collect();
    assert_eq!(positions, vec![a, c]);
    // A read from the middle of a transaction returns the rest of it.
    assert_eq!(read_all(&source, 0, c, 10).await, vec![(c, b"c".to_vec())]);

    let mut rolled_back = source.pool().begin().await.unwrap();
    source
        .append_in(&mut rolled_back, 0, None, b"never")
        .await
        .unwrap();
    rolled_back.rollback().await.unwrap();
    let after = source.append(0, None, b"d").await.unwrap();
    let all = settle(&source, 0, 3).await;
    assert_eq!(
        all.iter().map(|e| e.0).collect::<Vec<_>>(),
        vec![a, c, after]
    );
}

/// The trap of every sequence-ordered reader: a transaction takes its sequence value first and
/// commits after a later one. Here the later one is not readable until the earlier has ended,
/// and then both are read, the earlier first: nothing is skipped.
#[tokio::test]
async fn an_entry_that_commits_late_is_read_before_the_later_ones_never_skipped() {
    let _shared = crate::support::shared().await;
    let source = source("late", 1).await;
    let mut early = source.pool().begin().await.unwrap();
    let first = source
        .append_in(&mut early, 0, None, b"early")
        .await
        .unwrap();
    let second = source.append(0, None, b"committed first").await.unwrap();
    assert!(first < second, "ordered by writing transaction");
    let page = source.read(0, 0, 10).await.unwrap();
    assert!(
        page.entries.is_empty(),
        "the later entry waits for the earlier transaction"
    );
    assert_eq!(page.next, 0);
    assert_eq!(source.head(0).await.unwrap(), None);
    early.commit().await.unwrap();
    settle(&source, 0, 2).await;
    let page = source.read(0, 0, 10).await.unwrap();
    let positions: Vec<u64> = page.entries.iter().map(|e| e.position).collect();
    assert_eq!(positions, vec![first, second]);
}

/// A transaction that writes elsewhere (or only took an id) holds readers back in every
/// partition until it ends: a delay, never a skip.
#[tokio::test]
async fn a_long_transaction_elsewhere_delays_reads_until_it_ends() {
    let _shared = crate::support::shared().await;
    let source = source("long", 2).await;
    let mut long = source.pool().begin().await.unwrap();
    sqlx::query("SELECT pg_current_xact_id()")
        .execute(&mut *long)
        .await
        .unwrap();
    let position = source.append(1, None, b"x").await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(source.read(1, 0, 10).await.unwrap().entries.is_empty());
    long.rollback().await.unwrap();
    settle(&source, 1, 1).await;
    let page = source.read(1, 0, 10).await.unwrap();
    assert_eq!(page.entries.len(), 1);
    assert_eq!(page.entries[0].position, position);
    assert_eq!(page.next, position + 1);
    assert_eq!(position & ((1 << INDEX_BITS) - 1), 0);
}

/// A transaction of many entries read in pages: a source that goes on from its own `next`
/// seeks past the last entry it returned; another source (a resumed reader) starting inside the
/// transaction skips to the same entries. Both see the same positions.
#[tokio::test]
async fn a_large_transaction_reads_the_same_in_pages_and_from_inside_it() {
    let _shared = crate::support::shared().await;
    let (source, table) = named_source("large", 1).await;
    let mut transaction = source.pool().begin().await.unwrap();
    let insert = "INSERT INTO \"{t}\" (partition, payload) \
                  SELECT 0, int4send(i) FROM generate_series(1, 2500) i";
    sqlx::query(sqlx::AssertSqlSafe(insert.replace("{t}", &table)))
        .execute(&mut *transaction)
        .await
        .unwrap();
    transaction.commit().await.unwrap();
    let whole = settle(&source, 0, 2500).await;
    let paged = read_all(&source, 0, 0, 100).await;
    assert_eq!(paged, whole);
    let (xid, _) = decode(whole[0].0);
    assert!(
        whole
            .iter()
            .enumerate()
            .all(|(i, e)| e.0 == xid << INDEX_BITS | i as u64)
    );
    let resumed = checkpoint_source_postgres::PostgresSource::new(source.pool().clone(), 1)
        .with_table(&table)
        .unwrap();
    let from = whole[1234].0;
    assert_eq!(
        read_all(&resumed, 0, from, 300).await,
        whole[1234..].to_vec()
    );
    tokio::time::timeout(Duration::from_secs(20), resumed.wait(0, from))
        .await
        .unwrap()
        .unwrap();
}
