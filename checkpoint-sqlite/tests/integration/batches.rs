//! `save_all`: one statement over `json_each`, exact at the limits, and concurrent batches.

use checkpoint_core::{Checkpoint, CheckpointStore};
use checkpoint_sqlite::SqliteCheckpointStore;
use sqlx::sqlite::SqliteConnection;

use crate::support::TempDb;

const MAX: u64 = i64::MAX as u64;

/// The premise of the batch statement: SQLite's JSON reads an integer within the signed 64-bit
/// range as an INTEGER, exactly, not as a REAL (which would round i64::MAX).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_json_reads_i64_max_as_an_exact_integer() {
    let db = TempDb::new();
    let store = db.store().await;
    let (kind, value): (String, i64) = sqlx::query_as(
        "SELECT typeof(entry.value ->> 2), entry.value ->> 2 \
         FROM json_each('[[\"s\",4294967295,9223372036854775807]]') AS entry",
    )
    .fetch_one(store.pool())
    .await
    .expect("querying json_each");
    assert_eq!(kind, "integer");
    assert_eq!(value, i64::MAX);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn positions_and_partitions_at_their_limits_go_through_json_exactly() {
    let db = TempDb::new();
    let store = db.store().await;
    let batch = [
        Checkpoint::new("s", u32::MAX, MAX),
        Checkpoint::new("s", 0, MAX - 1),
        Checkpoint::new("t", 1, 0),
        Checkpoint::new("t", 2, 1 << 53 | 1), // not representable as a double
    ];
    store.save_all("g", &batch).await.expect("save_all");
    let mut listed = store.list("g").await.expect("list");
    listed.sort();
    let mut expected = batch.to_vec();
    expected.sort();
    assert_eq!(listed, expected);
    // And the upsert compares them as integers: MAX - 1 does not overwrite MAX.
    store
        .save_all("g", &[Checkpoint::new("s", u32::MAX, MAX - 1)])
        .await
        .expect("save_all");
    assert_eq!(
        store.load("g", "s", u32::MAX).await.expect("load"),
        Some(MAX)
    );
    store
        .save_all("g", &[Checkpoint::new("s", 0, MAX)])
        .await
        .expect("save_all");
    assert_eq!(store.load("g", "s", 0).await.expect("load"), Some(MAX));
}

/// Names that need escaping in JSON come back byte for byte through the batch statement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_that_need_json_escaping_round_trip() {
    let db = TempDb::new();
    let store = db.store().await;
    let names = [
        "quote\"",
        "back\\slash",
        "\\u0041 not an escape",
        "new\nline\ttab\r\u{1}\u{1f}\u{7f}",
        "emoji 😀 and é and \u{2028}",
        "[\"looks\",1,2]",
        "' OR 1=1 --",
    ];
    let batch: Vec<Checkpoint> = names
        .iter()
        .enumerate()
        .map(|(index, name)| Checkpoint::new(*name, 7, index as u64 + 1))
        .collect();
    store.save_all("g", &batch).await.expect("save_all");
    for checkpoint in &batch {
        assert_eq!(
            store
                .load("g", &checkpoint.subscription, 7)
                .await
                .expect("load"),
            Some(checkpoint.position),
            "{:?}",
            checkpoint.subscription
        );
    }
    assert_eq!(store.list("g").await.expect("list").len(), names.len());
}

/// Eight batches over the same keys, in different orders, at the same time: none fails and
/// every key ends at its maximum (the kit's SQL family).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_concurrent_overlapping_batches_all_succeed_and_keep_the_maximum() {
    checkpoint_conformance::sql_family::batches::eight_concurrent_overlapping_batches_all_succeed_and_keep_the_maximum(
        &TempDb::new(),
    )
    .await;
}

/// `save_all` is one statement whatever the batch size: right after it, SQLite's `changes()`
/// (the rows changed by the most recent statement of the connection) counts the whole batch,
/// which a statement per row would not. A lower batch afterwards changes no row at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_changes_each_row_at_most_once_in_one_statement() {
    let db = TempDb::new();
    let store = db.store().await;
    let mut conn = store.pool().acquire().await.expect("acquire");
    // All 1000 rows by that one statement.
    assert_eq!(save_all_changes(&store, &mut conn, 10).await, 1000);
    assert_eq!(
        save_all_changes(&store, &mut conn, 9).await,
        0,
        "a lower batch must change nothing"
    );
}

/// Saves partitions 0 to 999 of one subscription at `position` in one `save_all_in`, and
/// returns what `changes()` reports right after it: the rows changed by the most recent
/// statement on this connection.
async fn save_all_changes(
    store: &SqliteCheckpointStore,
    conn: &mut SqliteConnection,
    position: u64,
) -> i64 {
    let batch: Vec<Checkpoint> = (0..1000u32)
        .map(|partition| Checkpoint::new("s", partition, position))
        .collect();
    store
        .save_all_in(&mut *conn, "g", &batch)
        .await
        .expect("save_all_in");
    sqlx::query_scalar("SELECT changes()")
        .fetch_one(conn)
        .await
        .expect("changes()")
}
