//! A log that is not set up as the source expects is refused with `SourceError::Setup` naming
//! what to do; bad settings are refused before any I/O; `append_in` commits with the caller's
//! transaction.

use std::time::Duration;

use checkpoint_core::source::{Source, SourceError};
use checkpoint_source_sqlite::SqliteSource;

use crate::support::{TempDb, pool, source};

fn setup_message(result: Result<impl std::fmt::Debug, SourceError>, call: &str) -> String {
    match result {
        Err(SourceError::Setup { message, .. }) => message,
        other => panic!("{call} returned {other:?}, not SourceError::Setup"),
    }
}

#[tokio::test]
async fn a_missing_table_says_to_call_migrate() {
    let db = TempDb::new();
    let source = SqliteSource::new(pool(db.path()).await, 2);
    let messages = [
        setup_message(source.read(0, 0, 10).await, "read"),
        setup_message(source.head(0).await, "head"),
        setup_message(source.wait(0, 0).await, "wait"),
        setup_message(source.append(0, None, b"x").await, "append"),
    ];
    for message in messages {
        assert!(message.contains("migrate()"), "{message}");
        assert!(message.contains("\"events\""), "{message}");
    }
}

#[tokio::test]
async fn another_partition_count_is_refused_naming_both_counts() {
    let db = TempDb::new();
    let four = source(db.path(), 4).await;
    four.append(3, Some("k"), b"kept").await.expect("an append");
    let eight = SqliteSource::new(four.pool().clone(), 8);
    for message in [
        setup_message(eight.read(0, 0, 10).await, "read"),
        setup_message(eight.migrate().await, "migrate"),
    ] {
        assert!(message.contains("has 4 partitions"), "{message}");
        assert!(message.contains("this source has 8"), "{message}");
        assert!(message.contains("grow_to(8)"), "{message}");
    }
    // The log is untouched: the source with the stored count still reads it.
    assert_eq!(four.read(3, 0, 10).await.expect("a read").entries.len(), 1);
}

#[tokio::test]
async fn bad_settings_are_refused() {
    let db = TempDb::new();
    let pool = pool(db.path()).await;
    for name in ["", "1abc", "a-b", "a\"b", "sqlite_events", &"x".repeat(129)] {
        match SqliteSource::new(pool.clone(), 1).with_table(name) {
            Err(SourceError::InvalidInput {
                argument: "table", ..
            }) => {}
            other => panic!(
                "table name {name:?} gave {:?}",
                other.map(|s| s.table().to_owned())
            ),
        }
    }
    assert!(matches!(
        SqliteSource::new(pool.clone(), 1).with_poll_interval(Duration::ZERO),
        Err(SourceError::InvalidInput {
            argument: "poll_interval",
            ..
        })
    ));
    assert!(matches!(
        SqliteSource::new(pool.clone(), 0).migrate().await,
        Err(SourceError::InvalidInput {
            argument: "partitions",
            ..
        })
    ));
}

#[tokio::test]
async fn tables_of_other_names_are_separate_logs() {
    let db = TempDb::new();
    let pool = pool(db.path()).await;
    let orders = SqliteSource::new(pool.clone(), 2)
        .with_table("orders")
        .expect("a name");
    let invoices = SqliteSource::new(pool, 3)
        .with_table("select")
        .expect("a keyword");
    orders.migrate().await.expect("orders");
    invoices.migrate().await.expect("invoices");
    orders.append(1, None, b"o").await.expect("append");
    assert_eq!(orders.head(1).await.expect("head"), Some(1));
    assert_eq!(invoices.head(1).await.expect("head"), None);
}

#[tokio::test]
async fn append_in_commits_and_rolls_back_with_the_callers_transaction() {
    let db = TempDb::new();
    let source = source(db.path(), 2).await;
    let mut tx = source
        .pool()
        .begin_with("BEGIN IMMEDIATE")
        .await
        .expect("begin");
    assert_eq!(
        source
            .append_in(&mut tx, 1, Some("a"), b"gone")
            .await
            .expect("append"),
        1
    );
    tx.rollback().await.expect("rollback");
    assert_eq!(source.head(1).await.expect("head"), None);

    let mut tx = source
        .pool()
        .begin_with("BEGIN IMMEDIATE")
        .await
        .expect("begin");
    // The rolled-back position is taken again: no gap is left that could fill later.
    assert_eq!(
        source
            .append_in(&mut tx, 1, Some("a"), b"kept")
            .await
            .expect("append"),
        1
    );
    assert_eq!(
        source
            .append_in(&mut tx, 1, None, b"too")
            .await
            .expect("append"),
        2
    );
    tx.commit().await.expect("commit");
    source.notify_appended();
    let page = source.read(1, 0, 10).await.expect("read");
    let payloads: Vec<&[u8]> = page.entries.iter().map(|e| e.payload.as_slice()).collect();
    assert_eq!(payloads, [b"kept".as_slice(), b"too"]);
    assert_eq!(page.entries[0].key.as_deref(), Some("a"));
    assert!(page.entries[0].appended_at.is_some());
    assert_eq!(page.next, 3);
}

#[tokio::test]
async fn open_creates_a_wal_file_that_a_second_open_reads() {
    let db = TempDb::new();
    let first = SqliteSource::open(db.path(), 2).await.expect("open");
    first.migrate().await.expect("migrate");
    first.append(1, Some("k"), b"one").await.expect("append");
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(first.pool())
        .await
        .expect("journal mode");
    assert_eq!(mode, "wal");
    let second = SqliteSource::open(db.path(), 2).await.expect("open again");
    assert_eq!(second.read(1, 0, 10).await.expect("read").entries.len(), 1);
}
