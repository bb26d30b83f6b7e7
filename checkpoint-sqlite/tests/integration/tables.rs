//! Table names: validated, quoted, and independent of each other.

use checkpoint_core::{Argument, CheckpointAdmin, CheckpointStore, Error, InvalidReason};
use checkpoint_sqlite::SqliteCheckpointStore;

use crate::support::TempDb;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injection_attempts_and_malformed_names_are_rejected() {
    let db = TempDb::new();
    let store = db.store().await;
    store.save("g", "s", 0, 1).await.expect("save");
    for name in [
        "x\"; DROP TABLE checkpoints; --",
        "checkpoints; DELETE FROM checkpoints",
        "t\" (a) ; --",
        "main.checkpoints",
        "[checkpoints]",
        "`t`",
        "t'",
        "",
        " t",
        "9lives",
        "sqlite_master",
        "naïve",
        "t\0",
    ] {
        match store.clone().with_table(name) {
            Err(Error::InvalidInput(invalid)) => {
                assert_eq!(invalid.argument, Argument::Setting("table"), "{name:?}");
                assert!(
                    matches!(invalid.reason, InvalidReason::Malformed { .. }),
                    "{name:?}: {:?}",
                    invalid.reason
                );
            }
            other => panic!("{name:?} was accepted: {other:?}"),
        }
    }
    // Nothing happened to the table.
    assert_eq!(store.load("g", "s", 0).await.expect("load"), Some(1));
}

/// A keyword is a fine table name (it is quoted), and two tables in one file are separate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_tables_are_separate_and_keywords_work() {
    let db = TempDb::new();
    let default = db.store().await;
    assert_eq!(default.table(), checkpoint_sqlite::DEFAULT_TABLE);
    let order = SqliteCheckpointStore::new(default.pool().clone())
        .with_table("order")
        .expect("a keyword is a valid identifier");
    assert_eq!(order.table(), "order");
    order.migrate().await.expect("migrate");
    order.migrate().await.expect("migrate is idempotent");

    default.save("g", "s", 0, 10).await.expect("save");
    order.save("g", "s", 0, 20).await.expect("save");
    assert_eq!(default.load("g", "s", 0).await.expect("load"), Some(10));
    assert_eq!(order.load("g", "s", 0).await.expect("load"), Some(20));
    let tables: Vec<String> =
        sqlx::query_scalar("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
            .fetch_all(default.pool())
            .await
            .expect("tables");
    // Each with its tombstone table.
    assert_eq!(
        tables,
        [
            "checkpoints",
            "checkpoints_retired",
            "order",
            "order_retired"
        ]
    );
    default.retire("g", "s").await.expect("retire");
    assert_eq!(default.load("g", "s", 0).await.expect("load"), None);
    assert_eq!(order.load("g", "s", 0).await.expect("load"), Some(20));
    assert!(order.retired("g").await.expect("retired").is_empty());
}
