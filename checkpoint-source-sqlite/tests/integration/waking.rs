//! `wait` wakes for an append of this process at once, and for another process's (here:
//! another pool on the same file, which shares nothing with the waiter) within its poll
//! interval. Latencies are printed, not asserted; the bound only catches a wait that never
//! wakes.

use std::time::{Duration, Instant};

use checkpoint_core::source::Source;
use checkpoint_source_sqlite::SqliteSource;

use crate::support::{TempDb, pool, source};

/// Far above any poll interval here: only a lost wake-up reaches it.
const BOUND: Duration = Duration::from_secs(3);

async fn woken_after(waiter: &SqliteSource, writer: &SqliteSource, from: u64) -> Duration {
    let (woken, appended) = tokio::join!(
        async {
            tokio::time::timeout(BOUND, waiter.wait(0, from))
                .await
                .expect("wait did not wake within the bound")
                .expect("wait failed");
            Instant::now()
        },
        async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            writer.append(0, None, b"x").await.expect("append");
            Instant::now()
        }
    );
    woken.saturating_duration_since(appended)
}

#[tokio::test]
async fn an_append_in_this_process_wakes_at_once() {
    let db = TempDb::new();
    let source = source(db.path(), 1).await;
    let latency = woken_after(&source, &source, 0).await;
    println!("in-process wake-up after {latency:?}");
}

#[tokio::test]
async fn another_connections_append_wakes_within_the_poll_interval() {
    let db = TempDb::new();
    let writer = source(db.path(), 1).await;
    let interval = Duration::from_millis(20);
    let waiter = SqliteSource::new(pool(db.path()).await, 1)
        .with_poll_interval(interval)
        .expect("an interval");
    let mut latencies = Vec::new();
    for from in 1..=5 {
        latencies.push(woken_after(&waiter, &writer, from).await);
    }
    println!("wake-ups by polling every {interval:?}: {latencies:?}");
    let page = waiter.read(0, 0, 10).await.expect("read");
    assert_eq!(page.entries.len(), 5);
}
