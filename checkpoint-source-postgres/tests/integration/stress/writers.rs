//! The writers: 16 connections of random transactions, and the one long transaction.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use checkpoint_source_postgres::PostgresSource;
use sqlx::{AssertSqlSafe, PgConnection};

use super::PARTITIONS;
use super::truth::Truth;

/// What the load did.
#[derive(Debug, Default)]
pub struct Load {
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
    naive_sql: &str,
    writers: usize,
    duration: Duration,
    truth: &Arc<Truth>,
) -> Load {
    let deadline = Instant::now() + duration;
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for writer in 0..writers {
        let (source, sql, truth) = (source.clone(), naive_sql.to_owned(), Arc::clone(truth));
        tasks.push(tokio::spawn(async move {
            write(writer as u64, &source, &sql, deadline, &truth).await
        }));
    }
    let long = {
        let (source, sql, truth, stop) = (
            source.clone(),
            naive_sql.to_owned(),
            Arc::clone(truth),
            Arc::clone(&stop),
        );
        tokio::spawn(async move { long_transaction(&source, &sql, &truth, &stop).await })
    };
    let mut load = Load::default();
    for task in tasks {
        let (committed, rolled_back, late) = task.await.unwrap();
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

/// Random transactions until `deadline`: (committed, rolled back, committed late).
async fn write(
    writer: u64,
    source: &PostgresSource,
    naive_sql: &str,
    deadline: Instant,
    truth: &Truth,
) -> (u64, u64, u64) {
    let mut rng = fastrand::Rng::new();
    let (mut committed, mut rolled_back, mut late) = (0, 0, 0);
    let mut counter = 0u64;
    while Instant::now() < deadline {
        let mut transaction = source.pool().begin().await.unwrap();
        let mut entries = Vec::new();
        for _ in 0..=rng.u64(..3) {
            let partition = rng.u32(..PARTITIONS);
            let id = writer << 40 | counter;
            counter += 1;
            let position = insert(source, naive_sql, &mut transaction, partition, id).await;
            entries.push((partition, position, id));
        }
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
