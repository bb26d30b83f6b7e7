//! The `*_in` methods on the caller's transaction: a read model and its checkpoint commit
//! together or not at all.

use checkpoint_conformance::sql_family::transactions::{self, ReadModels};
use checkpoint_core::{Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint};
use checkpoint_sqlite::{SqliteCheckpointStore, SqliteEngine};
use sqlx::{AssertSqlSafe, SqliteConnection, SqlitePool};

use crate::support::TempDb;

/// The kit's read model is the `read_model` table in the temporary file.
impl ReadModels<SqliteEngine> for TempDb {
    async fn create_read_model(&self, store: &SqliteCheckpointStore) -> String {
        create_read_model(store.pool()).await;
        "read_model".to_owned()
    }

    async fn write_read_model(connection: &mut SqliteConnection, table: &str, id: i64, note: &str) {
        sqlx::query(AssertSqlSafe(format!(
            "INSERT INTO \"{table}\" (id, note) VALUES (?1, ?2)"
        )))
        .bind(id)
        .bind(note.to_owned())
        .execute(connection)
        .await
        .expect("write the read model");
    }

    async fn read_model_ids(&self, store: &SqliteCheckpointStore, _: &str) -> Vec<i64> {
        read_model(store.pool())
            .await
            .into_iter()
            .map(|(id, _)| id)
            .collect()
    }

    async fn drop_read_model(&self, _: &SqliteCheckpointStore, _: &str) {
        // The temporary file goes with the TempDb.
    }
}

async fn create_read_model(pool: &SqlitePool) {
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS read_model (id INTEGER PRIMARY KEY, note TEXT NOT NULL)",
    )
    .execute(pool)
    .await
    .expect("create the read model");
}

async fn read_model(pool: &SqlitePool) -> Vec<(i64, String)> {
    sqlx::query_as("SELECT id, note FROM read_model ORDER BY id")
        .fetch_all(pool)
        .await
        .expect("read the read model")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_model_and_checkpoints_roll_back_together() {
    let db = TempDb::new();
    let store = db.store().await;
    create_read_model(store.pool()).await;

    let mut tx = store.pool().begin().await.expect("begin");
    sqlx::query("INSERT INTO read_model (id, note) VALUES (1, 'rolled back')")
        .execute(&mut *tx)
        .await
        .expect("write the read model");
    store
        .save_in(&mut tx, "g", "s", 0, 10)
        .await
        .expect("save_in");
    store
        .save_all_in(&mut tx, "g", &[Checkpoint::new("t", 1, 5)])
        .await
        .expect("save_all_in");
    let fingerprint = Fingerprint::from_bytes([9; 32]);
    assert_eq!(
        store
            .claim_in(&mut tx, "g", "x", 0, fingerprint, 3)
            .await
            .expect("claim_in"),
        3
    );
    store
        .advance_in(&mut tx, "g", "x", 0, 3, 4)
        .await
        .expect("advance_in");
    // Inside the transaction, the checkpoints are visible.
    let seen: Option<i64> = sqlx::query_scalar(
        "SELECT position FROM checkpoints WHERE group_name = 'g' AND subscription = 's'",
    )
    .fetch_optional(&mut *tx)
    .await
    .expect("read inside the transaction");
    assert_eq!(seen, Some(10));
    tx.rollback().await.expect("rollback");

    assert!(read_model(store.pool()).await.is_empty());
    assert_eq!(store.list("g").await.expect("list"), vec![]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_model_and_checkpoints_commit_together() {
    let db = TempDb::new();
    let store = db.store().await;
    create_read_model(store.pool()).await;
    let fingerprint = Fingerprint::from_bytes([9; 32]);
    let from = store
        .claim("g", "x", 0, fingerprint, 0)
        .await
        .expect("claim");

    let mut tx = store.pool().begin().await.expect("begin");
    sqlx::query("INSERT INTO read_model (id, note) VALUES (1, 'committed')")
        .execute(&mut *tx)
        .await
        .expect("write the read model");
    store
        .advance_in(&mut tx, "g", "x", 0, from, 7)
        .await
        .expect("advance_in");
    store
        .save_in(&mut tx, "g", "s", 2, 11)
        .await
        .expect("save_in");
    tx.commit().await.expect("commit");

    assert_eq!(
        read_model(store.pool()).await,
        vec![(1, "committed".to_owned())]
    );
    assert_eq!(store.load("g", "x", 0).await.expect("load"), Some(7));
    assert_eq!(store.load("g", "s", 2).await.expect("load"), Some(11));
}

/// Two "processes" (two pools on one file) project under one name: the one that advances
/// second finds the checkpoint moved, says where it is, and its read model rolls back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advance_in_fails_with_moved_when_another_pool_advanced_first() {
    let db = TempDb::new();
    let first = db.store().await;
    let second = SqliteCheckpointStore::open(db.path())
        .await
        .expect("open a second pool");
    create_read_model(first.pool()).await;
    let fingerprint = Fingerprint::from_bytes([5; 32]);
    assert_eq!(
        first
            .claim("g", "p", 0, fingerprint, 0)
            .await
            .expect("claim"),
        0
    );
    assert_eq!(
        second
            .claim("g", "p", 0, fingerprint, 0)
            .await
            .expect("claim"),
        0
    );

    second
        .advance("g", "p", 0, 0, 5)
        .await
        .expect("the other process advances first");

    let mut tx = first.pool().begin().await.expect("begin");
    sqlx::query("INSERT INTO read_model (id, note) VALUES (1, 'projected twice')")
        .execute(&mut *tx)
        .await
        .expect("write the read model");
    match first.advance_in(&mut tx, "g", "p", 0, 0, 3).await {
        Err(Error::Moved { expected, current }) => {
            assert_eq!(expected, 0);
            assert_eq!(current, Some(5));
        }
        other => panic!("expected Moved, got {other:?}"),
    }
    tx.rollback().await.expect("rollback");
    assert!(read_model(first.pool()).await.is_empty());
    assert_eq!(first.load("g", "p", 0).await.expect("load"), Some(5));

    // On an absent checkpoint, Moved says so.
    let mut conn = first.pool().acquire().await.expect("acquire");
    match first.advance_in(&mut conn, "g", "absent", 0, 0, 1).await {
        Err(Error::Moved {
            expected: 0,
            current: None,
        }) => {}
        other => panic!("expected Moved with no current position, got {other:?}"),
    }
}

/// Many contenders from two pools race to advance the same step, each in its own transaction
/// with its read-model row: exactly one commits per step, and the read model holds exactly the
/// winners' rows (the kit's SQL family).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_transactions_commit_exactly_one_winner_per_step() {
    transactions::racing_transactions_commit_exactly_one_winner_per_step(&TempDb::new()).await;
}

/// `load_in` and `list_in` read through the caller's transaction: they see its uncommitted
/// checkpoints, which the pool does not, and refuse bad input like `load` and `list`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_in_and_list_in_see_the_transactions_own_writes() {
    let db = TempDb::new();
    let store = db.store().await;
    store.save("g", "s", 0, 1).await.expect("save");

    let mut tx = store.pool().begin().await.expect("begin");
    store
        .save_all_in(
            &mut tx,
            "g",
            &[Checkpoint::new("s", 0, 5), Checkpoint::new("t", 1, 2)],
        )
        .await
        .expect("save_all_in");
    assert_eq!(
        store.load_in(&mut tx, "g", "s", 0).await.expect("load_in"),
        Some(5)
    );
    assert_eq!(
        store
            .load_in(&mut tx, "g", "absent", 0)
            .await
            .expect("load_in"),
        None
    );
    let mut listed = store.list_in(&mut tx, "g").await.expect("list_in");
    listed.sort_by(|a, b| a.subscription.cmp(&b.subscription));
    assert_eq!(
        listed,
        vec![Checkpoint::new("s", 0, 5), Checkpoint::new("t", 1, 2)]
    );
    for error in [
        store.load_in(&mut tx, "", "s", 0).await.map(drop),
        store.list_in(&mut tx, "g\0").await.map(drop),
    ] {
        let error = error.expect_err("invalid");
        assert!(error.invalid_input().is_some(), "{error:?}");
    }
    tx.rollback().await.expect("rollback");

    assert_eq!(store.load("g", "s", 0).await.expect("load"), Some(1));
    assert_eq!(
        store.list("g").await.expect("list"),
        vec![Checkpoint::new("s", 0, 1)]
    );
}
