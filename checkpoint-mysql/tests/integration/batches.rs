//! `save_all`: one statement over `JSON_TABLE`, exact at the limits, names kept byte for byte
//! through the JSON text, and concurrent batches.
//!
//! Every test works on a group of its own in the shared default table.

use std::time::Instant;

use checkpoint_conformance::fresh_group;
use checkpoint_core::{Checkpoint, CheckpointAdmin, CheckpointStore};
use checkpoint_mysql::MysqlCheckpointStore;

use crate::support;

const MAX: u64 = i64::MAX as u64;

/// The premise of the batch statement: `JSON_TABLE`'s `BIGINT` columns read an integer within
/// the signed 64-bit range exactly, not through a double (which would round `i64::MAX` and
/// 2^53 + 1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_table_reads_i64_max_as_an_exact_bigint() {
    let store = support::store().await;
    let (partition, position, odd): (i64, i64, i64) = sqlx::query_as(
        "SELECT b.p, b.pos, b.odd FROM JSON_TABLE(\
         '[[\"s\",4294967295,9223372036854775807,9007199254740993]]', '$[*]' COLUMNS (\
         p BIGINT PATH '$[1]', pos BIGINT PATH '$[2]', odd BIGINT PATH '$[3]')) AS b",
    )
    .fetch_one(store.pool())
    .await
    .expect("querying JSON_TABLE");
    assert_eq!(partition, i64::from(u32::MAX));
    assert_eq!(position, i64::MAX);
    assert_eq!(odd, (1 << 53) + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn positions_and_partitions_at_their_limits_go_through_json_exactly() {
    let store = support::store().await;
    let group = fresh_group("batch-limits");
    let batch = [
        Checkpoint::new("s", u32::MAX, MAX),
        Checkpoint::new("s", 0, MAX - 1),
        Checkpoint::new("t", 1, 0),
        Checkpoint::new("t", 2, 1 << 53 | 1), // not representable as a double
        Checkpoint::new("t", u32::MAX - 1, 1 << 62),
    ];
    store.save_all(&group, &batch).await.expect("save_all");
    let mut listed = store.list(&group).await.expect("list");
    listed.sort();
    let mut expected = batch.to_vec();
    expected.sort();
    assert_eq!(listed, expected);
    for checkpoint in &batch {
        assert_eq!(
            store
                .load(&group, &checkpoint.subscription, checkpoint.partition)
                .await
                .expect("load"),
            Some(checkpoint.position),
            "{checkpoint:?}"
        );
    }
    // And the upsert compares them as integers: MAX - 1 does not overwrite MAX.
    store
        .save_all(&group, &[Checkpoint::new("s", u32::MAX, MAX - 1)])
        .await
        .expect("save_all");
    assert_eq!(
        store.load(&group, "s", u32::MAX).await.expect("load"),
        Some(MAX)
    );
    store
        .save_all(&group, &[Checkpoint::new("s", 0, MAX)])
        .await
        .expect("save_all");
    assert_eq!(store.load(&group, "s", 0).await.expect("load"), Some(MAX));
}

/// Names that need escaping in JSON, and names a collation would take for one another
/// (trailing spaces, case, accents composed or not), come back byte for byte through the batch
/// statement, each its own key: the columns are `VARBINARY`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_that_need_json_escaping_round_trip() {
    let store = support::store().await;
    let group = fresh_group("batch-names");
    let names = awkward_names();
    let batch: Vec<Checkpoint> = names
        .iter()
        .enumerate()
        .map(|(index, name)| Checkpoint::new(name.as_str(), 7, index as u64 + 1))
        .collect();
    store.save_all(&group, &batch).await.expect("save_all");
    for checkpoint in &batch {
        assert_eq!(
            store
                .load(&group, &checkpoint.subscription, 7)
                .await
                .expect("load"),
            Some(checkpoint.position),
            "{:?}",
            checkpoint.subscription
        );
    }
    let mut listed = store.list(&group).await.expect("list");
    listed.sort();
    let mut expected = batch.clone();
    expected.sort();
    assert_eq!(listed, expected);

    // The table holds exactly these bytes.
    assert_rows_hold_exactly_these_bytes(&group, &batch).await;

    // A second batch, lower for some names and higher for others: each moves only its own key.
    assert_a_second_batch_moves_only_its_own_keys(&store, &group, &batch).await;
}

/// Names that need escaping in JSON, and names a collation would take for one another.
fn awkward_names() -> Vec<String> {
    [
        "quote\"",
        "back\\slash",
        "\\u0041 not an escape",
        "\\",
        "new\nline\ttab\r\u{1}\u{1f}\u{7f}",
        "emoji 😀 and é and \u{2028}",
        "[\"looks\",1,2]",
        "' OR 1=1 --",
        "$[0]",
        "a",
        "a ",
        "a  ",
        " a",
        "A",
        "\u{e9}",   // é composed
        "e\u{301}", // é decomposed
        "\u{feff}bom",
        "ß",
        "ss",
        "trailing tab\t",
        "日本語の名前",
        &"😀".repeat(128),                 // 512 bytes, 128 characters
        &format!("{}  ", "x".repeat(510)), // 512 bytes, two trailing spaces
    ]
    .map(str::to_owned)
    .to_vec()
}

/// The rows of `group`'s partition 7 in the checkpoint table are exactly `batch`'s names (as
/// bytes) and positions.
async fn assert_rows_hold_exactly_these_bytes(group: &str, batch: &[Checkpoint]) {
    let mut admin = support::admin_connection().await;
    let mut rows: Vec<(Vec<u8>, i64)> = sqlx::query_as(
        "SELECT subscription, position FROM checkpoints WHERE group_name = ? AND partition_id = 7",
    )
    .bind(group)
    .fetch_all(&mut admin)
    .await
    .expect("read the rows");
    rows.sort();
    let mut want: Vec<(Vec<u8>, i64)> = batch
        .iter()
        .map(|c| {
            (
                c.subscription.as_bytes().to_vec(),
                i64::try_from(c.position).unwrap(),
            )
        })
        .collect();
    want.sort();
    assert_eq!(rows, want);
}

/// Saves `batch` again, every even entry at 0 (lower) and every odd one 100 higher, and checks
/// each name moved only its own key.
async fn assert_a_second_batch_moves_only_its_own_keys(
    store: &MysqlCheckpointStore,
    group: &str,
    batch: &[Checkpoint],
) {
    let again: Vec<Checkpoint> = batch
        .iter()
        .enumerate()
        .map(|(index, c)| {
            let position = if index % 2 == 0 { 0 } else { c.position + 100 };
            Checkpoint::new(c.subscription.clone(), 7, position)
        })
        .collect();
    store.save_all(group, &again).await.expect("save_all");
    for (index, checkpoint) in batch.iter().enumerate() {
        let want = if index % 2 == 0 {
            checkpoint.position
        } else {
            checkpoint.position + 100
        };
        assert_eq!(
            store
                .load(group, &checkpoint.subscription, 7)
                .await
                .unwrap(),
            Some(want),
            "{:?}",
            checkpoint.subscription
        );
    }
}

/// The names a collation would take for one another: trailing spaces, case, accents.
/// (`utf8mb4_general_ci`, utf8mb4's default collation on MariaDB 10.11, holds all of each
/// line equal.)
const LOOK_ALIKES: [&[&str]; 3] = [
    &["A ", "a", "a ", "a  "],
    &["E", "e", "é"],
    &["S", "s", "s "],
];

/// The tombstone keeps a retired name out of a batch, whatever other names the batch holds:
/// beside names a collation would take for it, sent before it in the batch's order (by bytes),
/// the retired name still gets no checkpoint.
///
/// Found by this test: `sql/save_all.sql` read the subscription out of `JSON_TABLE` as
/// `utf8mb4` text, which took the default collation (`utf8mb4_general_ci` on MariaDB 10.11:
/// case- and accent-insensitive, PAD SPACE), and MariaDB's subquery cache keys the correlated
/// `NOT EXISTS` by the outer value under that collation, so the first name of a look-alike
/// class decided for all of them: after `"A "` (live) the retired `"a "` was saved again. The
/// statement now reads the name as `VARBINARY`, as the table keeps it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tombstone_keeps_its_name_out_of_a_batch_of_look_alikes() {
    let store = support::store().await;
    for names in LOOK_ALIKES {
        let group = fresh_group("batch-tombstone");
        // The last of the class in the batch's order is retired; the others are live.
        let retired = names[names.len() - 1];
        store.save(&group, retired, 0, 1).await.unwrap();
        store.retire(&group, retired).await.unwrap();
        let batch: Vec<Checkpoint> = names.iter().map(|n| Checkpoint::new(*n, 0, 5)).collect();
        store.save_all(&group, &batch).await.unwrap();
        let mut listed = store.list(&group).await.unwrap();
        listed.sort();
        let want: Vec<Checkpoint> = batch
            .iter()
            .filter(|c| c.subscription != retired)
            .cloned()
            .collect();
        assert_eq!(listed, want, "retired {retired:?} in a batch of {names:?}");
        assert_eq!(store.load(&group, retired, 0).await.unwrap(), None);
        // The single save's check is exact.
        store.save(&group, retired, 0, 9).await.unwrap();
        assert_eq!(store.load(&group, retired, 0).await.unwrap(), None);
    }
}

/// A tombstone drops only its own name from a batch: the live names a collation would take
/// for it, sent after it in the batch's order (by bytes), are saved.
///
/// The same subquery cache the other way round (before the fix): after the retired `"A "` the
/// live `"a"`, `"a "` and `"a  "` were silently dropped from any batch that held it too, and
/// `save_all` returned `Ok`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tombstone_drops_no_other_name_from_a_batch_of_look_alikes() {
    let store = support::store().await;
    for names in LOOK_ALIKES {
        let group = fresh_group("batch-tombstone");
        // The first of the class in the batch's order is retired; the others are live.
        let retired = names[0];
        store.retire(&group, retired).await.unwrap();
        let batch: Vec<Checkpoint> = names.iter().map(|n| Checkpoint::new(*n, 0, 5)).collect();
        store.save_all(&group, &batch).await.unwrap();
        let mut listed = store.list(&group).await.unwrap();
        listed.sort();
        assert_eq!(
            listed,
            batch[1..],
            "retired {retired:?} in a batch of {names:?}"
        );
    }
}

/// Eight batches over the same keys, in different orders, at the same time: none fails and
/// every key ends at its maximum (the kit's SQL family).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_concurrent_overlapping_batches_all_succeed_and_keep_the_maximum() {
    checkpoint_conformance::sql_family::batches::eight_concurrent_overlapping_batches_all_succeed_and_keep_the_maximum(
        &support::Server,
    )
    .await;
}

/// A batch of 10,000 checkpoints in one call is one statement: right after it, `ROW_COUNT()`
/// (the rows the connection's most recent statement inserted or updated) counts the whole
/// batch, which a statement per row (or per chunk) would not. Every row reads back; a lower
/// batch afterwards moves none of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_ten_thousand_is_one_statement() {
    let store = support::store().await;
    let group = fresh_group("batch-10k");
    const SIZE: u32 = 10_000;
    // Keys in a scrambled order (7919 is prime to 10,000, so this is a permutation).
    let batch: Vec<Checkpoint> = (0..SIZE)
        .map(|i| {
            let key = i * 7919 % SIZE;
            Checkpoint::new(format!("sub-{}", key % 100), key / 100, u64::from(key) + 1)
        })
        .collect();
    let mut conn = store.pool().acquire().await.expect("acquire");
    let started = Instant::now();
    store
        .save_all_in(&mut conn, &group, &batch)
        .await
        .expect("save_all_in");
    let took = started.elapsed();
    let changed: i64 = sqlx::raw_sql("SELECT ROW_COUNT()")
        .fetch_one(&mut *conn)
        .await
        .and_then(|row| sqlx::Row::try_get(&row, 0))
        .expect("ROW_COUNT()");
    assert_eq!(changed, i64::from(SIZE), "one statement inserts every row");
    drop(conn);
    eprintln!("save_all of {SIZE} new checkpoints: {took:?}");

    let lower: Vec<Checkpoint> = batch
        .iter()
        .map(|c| Checkpoint::new(c.subscription.clone(), c.partition, c.position - 1))
        .collect();
    store.save_all(&group, &lower).await.expect("save_all");

    let mut listed = store.list(&group).await.expect("list");
    listed.sort();
    let mut expected = batch;
    expected.sort();
    assert_eq!(listed.len(), SIZE as usize);
    assert_eq!(listed, expected);
}
