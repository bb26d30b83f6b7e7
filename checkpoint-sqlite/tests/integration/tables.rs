//! Table names: validated, quoted, and independent of each other.

use std::time::Duration;

use checkpoint_core::{
    Argument, CheckpointAdmin, CheckpointStore, Error, InvalidReason, LeaseStore,
};
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
    // Each with its tombstone table, its two lease tables and its parked entries' table.
    assert_eq!(
        tables,
        [
            "checkpoints",
            "checkpoints_lease_owners",
            "checkpoints_leases",
            "checkpoints_parked",
            "checkpoints_retired",
            "order",
            "order_lease_owners",
            "order_leases",
            "order_parked",
            "order_retired"
        ]
    );
    default.retire("g", "s").await.expect("retire");
    assert_eq!(default.load("g", "s", 0).await.expect("load"), None);
    assert_eq!(order.load("g", "s", 0).await.expect("load"), Some(20));
    assert!(order.retired("g").await.expect("retired").is_empty());
}

/// A file made by the version before leases (the checkpoint table and its tombstone table
/// only) gets the lease tables from the next `migrate`, its checkpoints and tombstones kept;
/// and `migrate` stays idempotent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_adds_the_lease_tables_to_an_older_file() {
    let db = TempDb::new();
    let store = SqliteCheckpointStore::open(db.path()).await.expect("open");
    // The schema of the previous version, as it created it.
    for statement in [
        "CREATE TABLE \"checkpoints\" (group_name TEXT NOT NULL, subscription TEXT NOT NULL, \
         partition_id INTEGER NOT NULL, position INTEGER NOT NULL, query_fingerprint BLOB NULL, \
         updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')), \
         PRIMARY KEY (group_name, subscription, partition_id)) WITHOUT ROWID",
        "CREATE TABLE \"checkpoints_retired\" (group_name TEXT NOT NULL, subscription TEXT NOT NULL, \
         retired_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')), \
         PRIMARY KEY (group_name, subscription)) WITHOUT ROWID",
        "INSERT INTO \"checkpoints\" (group_name, subscription, partition_id, position) \
         VALUES ('g', 's', 0, 42)",
        "INSERT INTO \"checkpoints_retired\" (group_name, subscription) VALUES ('g', 'old')",
    ] {
        sqlx::query(statement)
            .execute(store.pool())
            .await
            .expect("the previous version's schema");
    }
    let error = store
        .acquire("g", "s", "w", &[0], Duration::from_secs(5))
        .await
        .expect_err("no lease table before migrate");
    assert!(!error.is_retryable(), "{error:?}");

    store.migrate().await.expect("migrate");
    store.migrate().await.expect("migrate is idempotent");
    assert_eq!(store.load("g", "s", 0).await.expect("load"), Some(42));
    assert_eq!(store.retired("g").await.expect("retired"), ["old"]);
    let acquired = store
        .acquire("g", "s", "w", &[0], Duration::from_secs(5))
        .await
        .expect("acquire after migrate");
    assert_eq!(acquired.granted.len(), 1);
    assert_eq!(acquired.granted[0].epoch, 1);
    assert!(matches!(
        store
            .acquire("g", "old", "w", &[0], Duration::from_secs(5))
            .await,
        Err(Error::Retired { .. })
    ));
}

/// A file made by the version before parked entries (every other table there) gets their
/// table from the next `migrate`, its checkpoints and leases kept; and parking works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_adds_the_parked_table_to_an_older_file() {
    use checkpoint_core::parked::{ParkedEntry, ParkedStore};

    let db = TempDb::new();
    let store = db.store().await;
    // What the previous version created: no parked entries' table.
    sqlx::query("DROP TABLE \"checkpoints_parked\"")
        .execute(store.pool())
        .await
        .expect("drop the parked entries' table");
    store.save("g", "s", 0, 42).await.expect("save");
    let lease = Duration::from_secs(30);
    store
        .acquire("g", "s", "w", &[0], lease)
        .await
        .expect("acquire");
    let entry = ParkedEntry::new("s", 0, 41, "boom", 2);
    let error = store
        .park("g", &entry)
        .await
        .expect_err("no parked entries' table before migrate");
    assert!(!error.is_retryable(), "{error:?}");

    store.migrate().await.expect("migrate");
    store.migrate().await.expect("migrate is idempotent");
    assert_eq!(store.load("g", "s", 0).await.expect("load"), Some(42));
    let renewed = store.renew("g", "s", "w", lease).await.expect("renew");
    assert_eq!((renewed.len(), renewed[0].epoch), (1, 1));
    store.park("g", &entry).await.expect("park after migrate");
    assert_eq!(store.parked("g").await.expect("parked"), [entry]);
}
