//! `heads`: every partition's head in one statement, exactly what `head` answers.

use checkpoint_core::source::Source;
use checkpoint_source_sqlite::SqliteSource;

use crate::support::{TempDb, pool, source};

/// `heads` of `asked` against `head` of each (`None` beyond the count, not asked).
async fn assert_heads_are_heads(source: &SqliteSource, asked: &[u32]) -> Vec<Option<u64>> {
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
async fn heads_are_head_of_each_partition_empty_ones_and_an_open_transaction_s_too() {
    let db = TempDb::new();
    let source = source(db.path(), 5).await;
    for payload in [b"a", b"b", b"c"] {
        source.append(0, None, payload).await.unwrap();
    }
    let last_of_three = source.append(3, Some("k"), b"d").await.unwrap();
    let mut rolled_back = source.pool().begin_with("BEGIN IMMEDIATE").await.unwrap();
    source
        .append_in(&mut rolled_back, 2, None, b"never")
        .await
        .unwrap();
    rolled_back.rollback().await.unwrap();

    let asked = [4, 3, 0, 1, 2, 3, 5, u32::MAX];
    let heads = assert_heads_are_heads(&source, &asked).await;
    assert_eq!(
        heads,
        [
            None,
            Some(last_of_three),
            Some(3),
            None,
            None,
            Some(last_of_three),
            None,
            None
        ]
    );
    assert_eq!(source.heads(&[]).await.unwrap(), []);

    // An append not committed yet is in neither.
    let mut open = source.pool().begin_with("BEGIN IMMEDIATE").await.unwrap();
    source.append_in(&mut open, 1, None, b"open").await.unwrap();
    source.append_in(&mut open, 0, None, b"open").await.unwrap();
    assert_eq!(assert_heads_are_heads(&source, &asked).await, heads);
    open.commit().await.unwrap();
    let after = assert_heads_are_heads(&source, &asked).await;
    assert_eq!((after[2], after[3]), (Some(4), Some(1)));
}

#[tokio::test]
async fn heads_of_many_partitions_and_of_partitions_a_growth_added() {
    let db = TempDb::new();
    let source = source(db.path(), 1024).await;
    for partition in [0, 511, 1023] {
        source.append(partition, None, b"x").await.unwrap();
    }
    // More partitions than a statement of SQLite takes parameters: one parameter, however many.
    let all: Vec<u32> = (0..1024).chain(0..40_000).collect();
    let heads = assert_heads_are_heads(&source, &all).await;
    assert_eq!(heads.iter().flatten().count(), 6);

    source.grow_to(1025).await.unwrap();
    source.append(1024, None, b"new").await.unwrap();
    // Opened with the old count: the first operation takes the stored one.
    let stale = SqliteSource::new(pool(db.path()).await, 1024);
    assert_eq!(
        stale.heads(&[1024, 1023, 1025]).await.unwrap(),
        [Some(1), Some(1), None]
    );
}
