//! The writers: 16 connections of random transactions, and the one long transaction. Even
//! writers append through the source (`append_in`); odd ones write with a plain multi-row
//! `INSERT`, as an application's own code may, and compute the positions they expect from what
//! it returns, as a read numbers them.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use checkpoint_source_postgres::PostgresSource;
use checkpoint_source_postgres::position::INDEX_BITS;
use sqlx::{AssertSqlSafe, PgConnection};

use super::PARTITIONS;
use super::truth::Truth;

/// The statements the writers run beside the source's `append_in`.
pub struct Sql {
    /// The naive table's insert (`$1` partition, `$2` payload).
    pub naive: String,
    /// The plain multi-row insert into the source's table (`$1` partitions, `$2` ids, inserted
    /// in that order), returning each row's `(tx, partition, seq, payload)`.
    pub plain: String,
}

impl Sql {
    pub fn new(table: &str, naive: String) -> Self {
        let plain = format!(
            "INSERT INTO \"{table}\" (\"partition\", key, payload) \
             SELECT u.p, 'stream-' || (u.id % 97), int8send(u.id) \
               FROM unnest($1::int4[], $2::int8[]) WITH ORDINALITY AS u(p, id, o) ORDER BY u.o \
             RETURNING tx::text::int8, \"partition\", seq, payload"
        );
        Self { naive, plain }
    }
}

/// What the load did.
#[derive(Debug, Default)]
pub struct Load {
    pub plain_transactions: u64,
    pub committed_transactions: u64,
    pub rolled_back_transactions: u64,
    pub late_transactions: u64,
    pub long_open: Duration,
    pub commits_during_long: u64,
}

/// How many other commits the long transaction stays open across (unless the load ends first).
const LONG_SPAN: u64 = 500;

/// Runs `writers` writers for `duration` and the long transaction, and waits for all of them.
pub async fn run(
    source: &PostgresSource,
    sql: &Arc<Sql>,
    writers: usize,
    duration: Duration,
    truth: &Arc<Truth>,
) -> Load {
    let deadline = Instant::now() + duration;
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for writer in 0..writers {
        let (source, sql, truth) = (source.clone(), Arc::clone(sql), Arc::clone(truth));
        tasks.push(tokio::spawn(async move {
            write(writer as u64, &source, &sql, deadline, &truth).await
        }));
    }
    let long = {
        let (source, sql, truth, stop) = (
            source.clone(),
            Arc::clone(sql),
            Arc::clone(truth),
            Arc::clone(&stop),
        );
        tokio::spawn(async move { long_transaction(&source, &sql.naive, &truth, &stop).await })
    };
    let mut load = Load::default();
    for (writer, task) in tasks.into_iter().enumerate() {
        let (committed, rolled_back, late) = task.await.unwrap();
        if writer % 2 == 1 {
            load.plain_transactions += committed;
        }
        load.committed_transactions += committed;
        load.rolled_back_transactions += rolled_back;
        load.late_transactions += late;
    }
    stop.store(true, Ordering::SeqCst);
    (load.long_open, load.commits_during_long) = long.await.unwrap();
    load.committed_transactions += 1;
    load
}

/// One entry in both tables, in the caller's transaction: its position in the source.
async fn insert(
    source: &PostgresSource,
    naive_sql: &str,
    connection: &mut PgConnection,
    partition: u32,
    id: u64,
) -> u64 {
    let payload = id.to_be_bytes();
    let key = format!("stream-{}", id % 97);
    let position = source
        .append_in(connection, partition, Some(&key), &payload)
        .await
        .unwrap();
    sqlx::query(AssertSqlSafe(naive_sql.to_owned()))
        .bind(i64::from(partition))
        .bind(&payload[..])
        .execute(connection)
        .await
        .unwrap();
    position
}

/// A transaction's entries in one plain multi-row `INSERT` into the source's table, and each in
/// the naive table: their (partition, position, id). The position is what a read gives: the
/// writer's transaction id, and the entry's index among the rows this transaction wrote to the
/// partition in sequence order (all of them are this statement's).
async fn insert_plain(
    sql: &Sql,
    connection: &mut PgConnection,
    batch: &[(u32, u64)],
) -> Vec<(u32, u64, u64)> {
    let partitions: Vec<i32> = batch.iter().map(|e| e.0 as i32).collect();
    let ids: Vec<i64> = batch.iter().map(|e| e.1 as i64).collect();
    let mut rows: Vec<(i64, i32, i64, Vec<u8>)> = sqlx::query_as(AssertSqlSafe(sql.plain.clone()))
        .bind(partitions)
        .bind(ids)
        .fetch_all(&mut *connection)
        .await
        .unwrap();
    rows.sort_by_key(|row| row.2);
    let mut indexes: HashMap<i32, u64> = HashMap::new();
    let mut entries = Vec::new();
    for (tx, partition, _, payload) in rows {
        let index = indexes.entry(partition).or_default();
        let position = (tx as u64) << INDEX_BITS | *index;
        *index += 1;
        let id = u64::from_be_bytes(payload[..].try_into().unwrap());
        entries.push((partition as u32, position, id));
        sqlx::query(AssertSqlSafe(sql.naive.clone()))
            .bind(i64::from(partition))
            .bind(payload)
            .execute(&mut *connection)
            .await
            .unwrap();
    }
    entries
}

/// Random transactions until `deadline`, through `append_in` for even writers and plain
/// `INSERT`s for odd ones: (committed, rolled back, committed late).
async fn write(
    writer: u64,
    source: &PostgresSource,
    sql: &Sql,
    deadline: Instant,
    truth: &Truth,
) -> (u64, u64, u64) {
    let mut rng = fastrand::Rng::new();
    let (mut committed, mut rolled_back, mut late) = (0, 0, 0);
    let mut counter = 0u64;
    while Instant::now() < deadline {
        let mut transaction = source.pool().begin().await.unwrap();
        let batch: Vec<(u32, u64)> = (0..=rng.u64(..3))
            .map(|_| {
                counter += 1;
                (rng.u32(..PARTITIONS), writer << 40 | (counter - 1))
            })
            .collect();
        let entries = if writer % 2 == 1 {
            insert_plain(sql, &mut transaction, &batch).await
        } else {
            let mut entries = Vec::new();
            for &(partition, id) in &batch {
                let position = insert(source, &sql.naive, &mut transaction, partition, id).await;
                entries.push((partition, position, id));
            }
            entries
        };
        // The first transaction of writer 0 and 3 % of the others take their positions, then
        // commit 1-2 s later: the sequence trap, for sure at least once per run.
        let is_late = (writer == 0 && committed + rolled_back == 0) || rng.u8(..100) < 3;
        let pause = if is_late {
            rng.u64(1000..=2000)
        } else {
            rng.u64(..=200)
        };
        tokio::time::sleep(Duration::from_millis(pause)).await;
        if !is_late && rng.u8(..100) < 10 {
            transaction.rollback().await.unwrap();
            let ids: Vec<u64> = entries.iter().map(|e| e.2).collect();
            truth.rolled_back(&ids);
            rolled_back += 1;
        } else {
            transaction.commit().await.unwrap();
            truth.committed(&entries);
            committed += 1;
            late += u64::from(is_late);
        }
    }
    (committed, rolled_back, late)
}

/// Opens a transaction with one entry and keeps it open across [`LONG_SPAN`] other commits
/// (or until the writers stop): how long it stayed open and across how many commits.
async fn long_transaction(
    source: &PostgresSource,
    naive_sql: &str,
    truth: &Truth,
    stop: &AtomicBool,
) -> (Duration, u64) {
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut transaction = source.pool().begin().await.unwrap();
    let id = u64::MAX >> 1;
    let position = insert(source, naive_sql, &mut transaction, 3, id).await;
    let opened = Instant::now();
    let before = truth.commits();
    while truth.commits() - before < LONG_SPAN && !stop.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let during = truth.commits() - before;
    transaction.commit().await.unwrap();
    truth.committed(&[(3, position, id)]);
    (opened.elapsed(), during)
}
