//! The commit-order stress test (issue 30, "How it is proven").
//!
//! 16 writer connections write to 8 partitions in transactions of 0-200 ms, half through the
//! source's `append_in`, half with plain multi-row `INSERT`s into its table (as an
//! application's own code may; the table's triggers see both); 10 % roll back; some take their
//! positions and sleep 1-2 s before committing; one stays open across hundreds of other
//! commits. Every transaction writes each entry twice, in the same transaction: to the source's
//! table and to a plain `bigserial` table. 4 readers read the source; a naive reader
//! reads the plain table with `id > checkpoint`, as so many event stores did.
//!
//! Every reader must read every committed entry exactly once, in position order per
//! partition, none of the rolled-back ones, and the clause must hold at every read: the
//! entries below each `next` a read returned are exactly the ones read so far. The naive
//! reader must have skipped entries (printed): the test's proof that the scenario produces the
//! failure it guards against. A second naive reader filters on the horizon as this source does
//! but still orders by `id`; what it skips is printed, not asserted (it needs a transaction that
//! takes its id before, and its transaction id after, another one that is read meanwhile).
//!
//! `CHECKPOINT_SOURCE_STRESS_SECS` sets how long the writers write (default 30).

mod naive;
mod readers;
mod truth;
mod writers;

use std::sync::Arc;
use std::time::{Duration, Instant};

use checkpoint_source_postgres::PostgresSource;

use crate::support::{pool, unique_table};

const PARTITIONS: u32 = 8;
const WRITERS: usize = 16;
const READERS: usize = 4;

fn duration() -> Duration {
    let secs = std::env::var("CHECKPOINT_SOURCE_STRESS_SECS")
        .ok()
        .map(|value| {
            value.parse::<f64>().unwrap_or_else(|_| {
                panic!("CHECKPOINT_SOURCE_STRESS_SECS={value:?} is not a number")
            })
        })
        .unwrap_or(30.0);
    Duration::from_secs_f64(secs)
}

/// The connections this test opens: the writers' pool, and per reader two and its
/// notification connection, and one per naive reader.
const CONNECTIONS: i64 = WRITERS as i64 + 2 + READERS as i64 * 3 + 2;

/// Fails at once, saying why, when the server has too few connections left for the test
/// (other sessions' pools share its `max_connections`), rather than after a pool's timeout.
async fn check_connections_left(pool: &sqlx::PgPool) {
    let left: i64 = sqlx::query_scalar(
        "SELECT current_setting('max_connections')::int8 \
              - current_setting('superuser_reserved_connections')::int8 \
              - (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert!(
        left + 1 >= CONNECTIONS,
        "the server has {} connections left and this test needs {CONNECTIONS}: other sessions \
         hold the rest (raise max_connections or run it alone)",
        left + 1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn commit_order_stress_every_committed_entry_once_in_order_and_the_naive_reader_skips() {
    // Alone: its long transactions would hold back the other tests' reads for seconds.
    let _alone = crate::support::exclusive().await;
    let duration = duration();
    let table = unique_table("stress");
    let writer_pool = pool(WRITERS as u32 + 2).await;
    check_connections_left(&writer_pool).await;
    let source = PostgresSource::new(writer_pool.clone(), PARTITIONS)
        .with_table(&table)
        .unwrap();
    source.migrate().await.unwrap();
    let naive_table = naive::create(&writer_pool, &table).await;
    let truth = Arc::new(truth::Truth::default());
    let started = Instant::now();

    let mut reader_tasks = Vec::new();
    for reader in 0..READERS {
        // Two connections per reader (its 8 partitions' reads take turns), beside its own
        // notification connection: the server's 100 connections are shared with other tests.
        let source = PostgresSource::new(pool(2).await, PARTITIONS)
            .with_table(&table)
            .unwrap();
        reader_tasks.push(readers::spawn(reader, source, Arc::clone(&truth)));
    }
    let mut naive_tasks = Vec::new();
    for below_horizon in [false, true] {
        let (table, truth) = (naive_table.clone(), Arc::clone(&truth));
        naive_tasks.push(naive::spawn(
            pool(1).await,
            table,
            PARTITIONS,
            below_horizon,
            truth,
        ));
    }
    let sql = Arc::new(writers::Sql::new(&table, naive::insert_sql(&table)));
    let load = writers::run(&source, &sql, WRITERS, duration, &truth).await;
    truth.writers_done();
    report_load(duration, &load, &truth);

    let expected = truth.committed_by_partition(PARTITIONS);
    for task in reader_tasks {
        let reads = task.await.unwrap();
        truth::check_reader(&reads, &expected, &truth);
    }
    let horizon_skipped = naive_tasks.pop().unwrap().await.unwrap();
    let skipped = naive_tasks.pop().unwrap().await.unwrap();
    println!(
        "stress: 4 readers read all {} committed entries once, in order, the clause held at \
         every read; the naive reader (id > checkpoint) skipped {} of them ({} read), the one \
         reading below the horizon but by id {} ({} read); {:.1} s",
        truth.committed_count(),
        skipped.skipped,
        skipped.read,
        horizon_skipped.skipped,
        horizon_skipped.read,
        started.elapsed().as_secs_f64(),
    );
    assert!(
        skipped.skipped > 0,
        "the naive reader skipped nothing: the scenario lacks late commits"
    );
}

/// Prints what the writers did and checks that the load had its ingredients.
fn report_load(duration: Duration, load: &writers::Load, truth: &truth::Truth) {
    println!(
        "stress: {:.1} s of writing: {} transactions committed ({} of them plain INSERTs, {} \
         entries), {} rolled back ({} entries), {} committed late after 1-2 s; the long \
         transaction stayed open {:.1} s across {} other commits",
        duration.as_secs_f64(),
        load.committed_transactions,
        load.plain_transactions,
        truth.committed_count(),
        load.rolled_back_transactions,
        truth.rolled_back_count(),
        load.late_transactions,
        load.long_open.as_secs_f64(),
        load.commits_during_long,
    );
    assert!(
        load.commits_during_long >= 100,
        "the long transaction must span hundreds of commits"
    );
    assert!(load.late_transactions >= 1 && load.rolled_back_transactions >= 1);
    assert!(
        load.plain_transactions >= 1,
        "plain INSERTs must be read beside append_in"
    );
}
