//! The 2^20 entries a position can number per transaction and partition: the `{table}_limit`
//! trigger refuses every writer's statement that goes past them (plain `INSERT`, `COPY`,
//! `append_in`), exactly 2^20 are accepted and read, and a transaction past the limit written
//! without the trigger stops reads with a setup error naming the repair, never a skip.
//!
//! Each test holds the server alone: its transaction of 2^20 rows stays open for seconds and
//! would hold back every other test's reads. Two inserts of 2^20 rows in all (each takes
//! seconds; the time is printed).

use std::time::{Duration, Instant};

use checkpoint_core::source::{Source, SourceError};
use checkpoint_source_postgres::PostgresSource;
use checkpoint_source_postgres::position::{
    INDEX_BITS, MAX_ENTRIES_PER_TRANSACTION as MAX, TOO_MANY_ENTRIES_SQLSTATE, decode,
};
use sqlx::{AssertSqlSafe, PgConnection};

use crate::support::{exclusive, named_source, read_all};

/// `count` rows to `partition` in one plain `INSERT` (the payload of the i-th is `i`, from 1).
fn plain_insert(table: &str, partition: u32, count: u64) -> String {
    format!(
        "INSERT INTO \"{table}\" (partition, payload) \
         SELECT {partition}, int8send(i) FROM generate_series(1, {count}) i"
    )
}

async fn execute(connection: &mut PgConnection, statement: String) -> Result<u64, sqlx::Error> {
    let done = sqlx::query(AssertSqlSafe(statement))
        .execute(connection)
        .await?;
    Ok(done.rows_affected())
}

/// The message of the limit trigger's refusal; fails on any other error.
fn refusal(error: &sqlx::Error) -> String {
    let database = error
        .as_database_error()
        .unwrap_or_else(|| panic!("expected the limit trigger's refusal, got {error:?}"));
    assert_eq!(
        database.code().as_deref(),
        Some(TOO_MANY_ENTRIES_SQLSTATE),
        "{error:?}"
    );
    database.message().to_owned()
}

fn setup_message(error: SourceError) -> String {
    match error {
        SourceError::Setup { message, .. } => message,
        other => panic!("expected a setup error, got {other:?}"),
    }
}

/// The setup error of a read that must fail; says what it returned instead.
async fn refused_read(source: &PostgresSource, from: u64, max: usize) -> String {
    match source.read(1, from, max).await {
        Ok(page) => panic!(
            "read from {from} (max {max}) returned {} entries and next {} instead of failing",
            page.entries.len(),
            page.next
        ),
        Err(error) => setup_message(error),
    }
}

async fn savepoint(connection: &mut PgConnection) {
    sqlx::query("SAVEPOINT before_limit")
        .execute(connection)
        .await
        .unwrap();
}

async fn rollback_to_savepoint(connection: &mut PgConnection) {
    sqlx::query("ROLLBACK TO SAVEPOINT before_limit")
        .execute(connection)
        .await
        .unwrap();
}

/// Reads from `from` until at least `count` entries are readable (other sessions may hold the
/// horizon back a while); fails after 60 s.
async fn read_settled(
    source: &PostgresSource,
    partition: u32,
    from: u64,
    count: usize,
) -> Vec<(u64, Vec<u8>)> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let all = read_all(source, partition, from, 65_536).await;
        if all.len() >= count {
            return all;
        }
        assert!(
            Instant::now() < deadline,
            "partition {partition}: {} of {count} entries readable from {from} after 60 s",
            all.len()
        );
        let _ = tokio::time::timeout(Duration::from_secs(1), source.wait(partition, from)).await;
    }
}

#[tokio::test]
async fn one_plain_insert_past_2_20_entries_in_a_partition_is_refused_and_rolled_back() {
    let _alone = exclusive().await;
    let (source, table) = named_source("limit_one", 2).await;
    let mut transaction = source.pool().begin().await.unwrap();
    let started = Instant::now();
    let error = execute(&mut transaction, plain_insert(&table, 1, MAX + 1))
        .await
        .unwrap_err();
    println!(
        "limit: one INSERT of 2^20 + 1 rows refused after {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let message = refusal(&error);
    assert!(
        message.contains("partition 1") && message.contains("1048576") && message.contains(&table),
        "{message}"
    );
    transaction.rollback().await.unwrap();
    let after = source.append(1, None, b"after").await.unwrap();
    let all = read_settled(&source, 1, 0, 1).await;
    assert_eq!(
        all,
        vec![(after, b"after".to_vec())],
        "nothing else, nothing skipped"
    );
    let rows: i64 = sqlx::query_scalar(AssertSqlSafe(format!("SELECT count(*) FROM \"{table}\"")))
        .fetch_one(source.pool())
        .await
        .unwrap();
    assert_eq!(rows, 1, "the refused statement's rows were rolled back");
}

/// One transaction writes exactly 2^20 entries to partition 1 in many statements (a plain
/// `INSERT` of 2^20 - 3, then three `append_in`); every statement that would add one more is
/// refused (a plain `INSERT`, a `COPY`, `append_in`), each rolled back to a savepoint, while
/// partition 0 still takes entries. All 2^20 are read with their positions, then "after".
/// Then the table is given a transaction past the limit, as one written before the trigger
/// existed: reads stop at it with a setup error naming the repair, and after the repair every
/// entry is read, none skipped.
#[tokio::test]
async fn exactly_2_20_entries_are_accepted_and_read_every_statement_past_them_is_refused() {
    let _alone = exclusive().await;
    let (source, table) = named_source("limit_full", 2).await;
    let xid = write_exactly_the_limit(&source, &table).await;
    let after = reads_every_entry_then_after(&source, xid).await;
    a_transaction_past_the_limit_stops_reads_until_repaired(&source, &table, xid, after).await;
}

/// Writes the full transaction and checks the refusals; its transaction id.
async fn write_exactly_the_limit(source: &PostgresSource, table: &str) -> u64 {
    let mut transaction = source.pool().begin().await.unwrap();
    let started = Instant::now();
    let inserted = execute(&mut transaction, plain_insert(table, 1, MAX - 3)).await;
    println!(
        "limit: one INSERT of 2^20 - 3 rows took {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(inserted.unwrap(), MAX - 3);
    let mut positions = Vec::new();
    for i in 0..3u8 {
        let appended = source.append_in(&mut transaction, 1, None, &[i]).await;
        positions.push(appended.unwrap());
    }
    let xid = decode(positions[0]).0;
    let expected: Vec<u64> = (MAX - 3..MAX).map(|i| xid << INDEX_BITS | i).collect();
    assert_eq!(
        positions, expected,
        "the last three indexes below the limit"
    );

    savepoint(&mut transaction).await;
    let error = execute(&mut transaction, plain_insert(table, 1, 1)).await;
    let message = refusal(&error.unwrap_err());
    assert!(message.contains("partition 1"), "{message}");
    rollback_to_savepoint(&mut transaction).await;

    savepoint(&mut transaction).await;
    let statement = format!("COPY \"{table}\" (partition, payload) FROM STDIN WITH (FORMAT csv)");
    let mut copy = transaction.copy_in_raw(&statement).await.unwrap();
    copy.send(&b"1,\\x00\n"[..]).await.unwrap();
    refusal(&copy.finish().await.unwrap_err());
    rollback_to_savepoint(&mut transaction).await;

    savepoint(&mut transaction).await;
    let refused = source
        .append_in(&mut transaction, 1, None, b"one too many")
        .await;
    let message = setup_message(refused.unwrap_err());
    assert!(message.contains("partition 1"), "{message}");
    rollback_to_savepoint(&mut transaction).await;

    // The count is per partition: partition 0 of the same transaction takes entries.
    assert_eq!(
        execute(&mut transaction, plain_insert(table, 0, 2))
            .await
            .unwrap(),
        2
    );
    transaction.commit().await.unwrap();
    xid
}

/// All 2^20 entries in order, then "after"; a page that ends at the last of them goes on to
/// "after". The position of "after".
async fn reads_every_entry_then_after(source: &PostgresSource, xid: u64) -> u64 {
    let after = source.append(1, None, b"after").await.unwrap();
    let started = Instant::now();
    let all = read_settled(source, 1, 0, MAX as usize + 1).await;
    println!(
        "limit: read the 2^20 + 1 entries in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let positions: Vec<u64> = all.iter().map(|entry| entry.0).collect();
    let mut expected: Vec<u64> = (0..MAX).map(|i| xid << INDEX_BITS | i).collect();
    expected.push(after);
    assert!(
        positions == expected,
        "positions differ from tx << 20 | index, then after"
    );
    assert_eq!(
        all[0].1,
        1i64.to_be_bytes(),
        "the plain INSERT's first row first"
    );
    assert_eq!(all[MAX as usize].1, b"after");

    let page = source
        .read(1, xid << INDEX_BITS | (MAX - 3), 3)
        .await
        .unwrap();
    assert_eq!(page.entries.len(), 3);
    assert_eq!(page.next, (xid + 1) << INDEX_BITS);
    let rest = read_all(source, 1, page.next, 10).await;
    assert_eq!(rest, vec![(after, b"after".to_vec())]);
    assert_eq!(read_settled(source, 0, 0, 2).await.len(), 2);
    after
}

/// "after" moved into the full transaction leaves the table as a transaction of 2^20 + 1
/// entries committed before the trigger existed would (an `UPDATE` fires no insert trigger):
/// both page ends fail alike, and so does `head`; the repair the error names moves the extra
/// entry to a transaction of its own, and then everything is read.
async fn a_transaction_past_the_limit_stops_reads_until_repaired(
    source: &PostgresSource,
    table: &str,
    xid: u64,
    after: u64,
) {
    let overflow = format!("UPDATE \"{table}\" SET tx = '{xid}' WHERE payload = 'after'");
    sqlx::query(AssertSqlSafe(overflow))
        .execute(source.pool())
        .await
        .unwrap();
    let fresh = PostgresSource::new(source.pool().clone(), 2)
        .with_table(table)
        .unwrap();
    let last_page = xid << INDEX_BITS | (MAX - 3);
    // The page that ends at the 2^20th entry (it skipped the 2^20 + 1st before) and the one
    // that reaches the 2^20 + 1st, by a source without cursors and by the one that read it all.
    let message = refused_read(&fresh, last_page, 3).await;
    assert!(
        message.contains(&format!("transaction {xid} "))
            && message.contains("partition 1")
            && message.contains("UPDATE"),
        "{message}"
    );
    for (from, max) in [(last_page, 3), (last_page + 1, 10), (last_page - 500, 503)] {
        assert_eq!(
            refused_read(source, from, max).await,
            message,
            "from {from}, max {max}"
        );
    }
    assert_eq!(refused_read(&fresh, last_page + 1, 10).await, message);
    assert_eq!(setup_message(source.head(1).await.unwrap_err()), message);

    let repair = message
        .split_once("(each run moves 1048576): ")
        .and_then(|(_, rest)| rest.split_once("; and run migrate"))
        .map(|(statement, _)| statement.to_owned())
        .unwrap_or_else(|| panic!("no repair statement in: {message}"));
    let moved = sqlx::query(AssertSqlSafe(repair))
        .execute(source.pool())
        .await
        .unwrap();
    assert_eq!(moved.rows_affected(), 1);
    let rest = read_settled(&fresh, 1, last_page, 4).await;
    let positions: Vec<u64> = rest.iter().map(|entry| entry.0).collect();
    assert_eq!(positions[..3], [last_page, last_page + 1, last_page + 2]);
    let (moved_to, index) = decode(positions[3]);
    assert!(moved_to > xid && index == 0 && positions[3] > after);
    assert_eq!(rest[3].1, b"after", "the moved entry is read, not skipped");
    assert_eq!(fresh.head(1).await.unwrap(), Some(positions[3]));
}
