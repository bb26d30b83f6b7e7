//! Where the tests find a server, and small helpers they share.
//!
//! `DATABASE_URL` (read at run time) names the server; without it the tests use
//! `postgres://postgres@127.0.0.1:5432/test`, the server of this project's machines. A test
//! that cannot reach it fails and says so: none is skipped.

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use checkpoint_source_postgres::PostgresSource;
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

/// Tests share the server; the stress test, whose transactions stay open for seconds (and one
/// across the whole run) and so hold back every other test's reads, takes this exclusively,
/// every other test (the kit's cases too) shares it.
static SERVER: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// Shares the server with every test but one that needs it alone.
pub async fn shared() -> tokio::sync::RwLockReadGuard<'static, ()> {
    SERVER.read().await
}

/// Has the server alone among this binary's tests.
pub async fn exclusive() -> tokio::sync::RwLockWriteGuard<'static, ()> {
    SERVER.write().await
}

/// The environment variable with the server's URL.
pub const URL_VAR: &str = "DATABASE_URL";

/// The server used when `DATABASE_URL` is not set.
pub const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// The connect options of the server under test.
pub fn connect_options() -> PgConnectOptions {
    let url = std::env::var(URL_VAR).unwrap_or_else(|_| DEFAULT_URL.to_owned());
    PgConnectOptions::from_str(&url)
        .unwrap_or_else(|error| panic!("{URL_VAR} is not a valid PostgreSQL URL: {error}"))
}

/// A pool of `size` connections to the server under test; panics (fails the test) when the
/// server cannot be reached.
pub async fn pool(size: u32) -> PgPool {
    PgPoolOptions::new()
        .max_connections(size)
        .connect_with(connect_options())
        .await
        .unwrap_or_else(|error| {
            panic!("cannot connect to the server in {URL_VAR} (default {DEFAULT_URL}): {error}")
        })
}

/// A table name no other test (or run) uses.
pub fn unique_table(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.subsec_nanos());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}_{}_{nanos:x}_{n}", std::process::id())
}

/// A migrated source of `partitions` partitions on a fresh table.
pub async fn source(prefix: &str, partitions: u32) -> PostgresSource {
    named_source(prefix, partitions).await.0
}

/// A migrated source of `partitions` partitions on a fresh table, and the table's name.
pub async fn named_source(prefix: &str, partitions: u32) -> (PostgresSource, String) {
    let table = unique_table(prefix);
    let source = PostgresSource::new(pool(8).await, partitions)
        .with_table(&table)
        .unwrap();
    source.migrate().await.unwrap();
    (source, table)
}

/// Every entry of `partition` from `from`, in pages of `max`, as (position, payload).
pub async fn read_all(
    source: &PostgresSource,
    partition: u32,
    from: u64,
    max: usize,
) -> Vec<(u64, Vec<u8>)> {
    use checkpoint_core::source::Source;
    let mut from = from;
    let mut all = Vec::new();
    loop {
        let page = source.read(partition, from, max).await.unwrap();
        assert!(page.next >= from);
        if page.entries.is_empty() {
            return all;
        }
        all.extend(page.entries.into_iter().map(|e| (e.position, e.payload)));
        from = page.next;
    }
}

/// Every entry of `partition`, once at least `count` are readable: other sessions on the
/// server (any database of the cluster) may hold the horizon back for a while, so a test
/// waits for its own entries before asserting on them. Fails after 60 s.
pub async fn settle(source: &PostgresSource, partition: u32, count: usize) -> Vec<(u64, Vec<u8>)> {
    use checkpoint_core::source::Source;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let all = read_all(source, partition, 0, 1000).await;
        if all.len() >= count {
            return all;
        }
        let from = all.last().map_or(0, |last| last.0 + 1);
        assert!(
            std::time::Instant::now() < deadline,
            "partition {partition}: {} of {count} entries readable after 60 s",
            all.len()
        );
        let _ = tokio::time::timeout(
            std::time::Duration::from_secs(1),
            source.wait(partition, from),
        )
        .await;
    }
}
