//! Read throughput of one partition through the source against the raw query of the same rows
//! on the same pool, printed (never asserted: a debug build on a shared machine says little);
//! the test checks only that both read every entry.

use std::time::{Duration, Instant};

use checkpoint_core::source::Source;

use checkpoint_source_sqlite::SqliteSource;

use crate::support::{TempDb, source};

const ENTRIES: u64 = 20_000;
const PAGE: usize = 500;

#[tokio::test]
async fn partition_read_rate_is_printed_beside_the_raw_query() {
    let db = TempDb::new();
    let source = source(db.path(), 2).await;
    let mut tx = source
        .pool()
        .begin_with("BEGIN IMMEDIATE")
        .await
        .expect("begin");
    for n in 0..ENTRIES {
        source
            .append_in(
                &mut tx,
                1,
                Some("k"),
                format!("entry {n:>8} of the log").as_bytes(),
            )
            .await
            .expect("append");
    }
    tx.commit().await.expect("commit");

    // Each twice, alternating, and the second of each counted: the first warms the cache.
    let mut timings = Vec::new();
    for _ in 0..2 {
        timings.push((through_source(&source).await, through_raw(&source).await));
    }
    let ((read, through_source), (raw, through_raw)) = timings[1];
    assert_eq!((read, raw), (ENTRIES, ENTRIES));
    let rate = |elapsed: Duration| ENTRIES as f64 / elapsed.as_secs_f64();
    println!(
        "one partition, {ENTRIES} entries in pages of {PAGE}: source {:.0} entries/s, raw query \
         {:.0} entries/s, ratio {:.2}",
        rate(through_source),
        rate(through_raw),
        rate(through_source) / rate(through_raw)
    );
}

async fn through_source(source: &SqliteSource) -> (u64, Duration) {
    let started = Instant::now();
    let (mut next, mut read) = (0, 0u64);
    loop {
        let page = source.read(1, next, PAGE).await.expect("read");
        if page.entries.is_empty() {
            return (read, started.elapsed());
        }
        read += page.entries.len() as u64;
        next = page.next;
    }
}

async fn through_raw(source: &SqliteSource) -> (u64, Duration) {
    let started = Instant::now();
    let (mut after, mut raw) = (0i64, 0u64);
    loop {
        let rows: Vec<(i64, Option<String>, Vec<u8>, i64)> = sqlx::query_as(
            "SELECT position, key, payload, appended_at FROM events \
             WHERE partition = 1 AND position >= ? ORDER BY position LIMIT ?",
        )
        .bind(after)
        .bind(PAGE as i64)
        .fetch_all(source.pool())
        .await
        .expect("raw read");
        let Some(last) = rows.last() else {
            return (raw, started.elapsed());
        };
        after = last.0 + 1;
        raw += rows.len() as u64;
    }
}
