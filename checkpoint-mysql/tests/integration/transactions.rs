//! The `*_in` methods on the caller's transaction (`store.pool().begin()`): a read model and
//! its checkpoints commit together or not at all, of two projections under one name only one
//! commits, and reads inside the transaction see its own writes.
//!
//! Every test works on a group of its own in the shared default table. The read model is a
//! table of the test's own, created before the transaction begins (DDL commits implicitly in
//! MySQL and MariaDB) and dropped at the end.

use checkpoint_conformance::fresh_group;
use checkpoint_conformance::sql_family::transactions::{self, ReadModels};
use checkpoint_core::{Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint};
use checkpoint_mysql::{MysqlCheckpointStore, MysqlEngine};
use sqlx::{AssertSqlSafe, MySqlConnection};

use crate::support;

/// The kit's read models are [`ReadModel`]s, on an administrator's connection.
impl ReadModels<MysqlEngine> for support::Server {
    async fn create_read_model(&self, _: &MysqlCheckpointStore) -> String {
        ReadModel::create().await.table
    }

    async fn write_read_model(connection: &mut MySqlConnection, table: &str, id: i64, note: &str) {
        let model = ReadModel {
            table: table.to_owned(),
        };
        model.write(connection, id, note).await;
    }

    async fn read_model_ids(&self, _: &MysqlCheckpointStore, table: &str) -> Vec<i64> {
        let model = ReadModel {
            table: table.to_owned(),
        };
        model.rows().await.into_iter().map(|(id, _)| id).collect()
    }

    async fn drop_read_model(&self, _: &MysqlCheckpointStore, table: &str) {
        ReadModel {
            table: table.to_owned(),
        }
        .drop_table()
        .await;
    }
}

/// A read-model table of the test's own: (id, note).
struct ReadModel {
    table: String,
}

impl ReadModel {
    /// Creates the table, on an administrator's connection and outside any transaction.
    async fn create() -> Self {
        let table = support::unique_ident("rm");
        support::admin_sql(&[format!(
            "CREATE TABLE `{table}` (id BIGINT NOT NULL PRIMARY KEY, note VARCHAR(64) NOT NULL) \
             ENGINE = InnoDB"
        )])
        .await;
        Self { table }
    }

    async fn write(&self, connection: &mut MySqlConnection, id: i64, note: &str) {
        sqlx::query(AssertSqlSafe(format!(
            "INSERT INTO `{}` (id, note) VALUES (?, ?)",
            self.table
        )))
        .bind(id)
        .bind(note)
        .execute(connection)
        .await
        .expect("write the read model");
    }

    /// Every row, by id, as committed (read on a connection of its own).
    async fn rows(&self) -> Vec<(i64, String)> {
        let mut admin = support::admin_connection().await;
        sqlx::query_as(AssertSqlSafe(format!(
            "SELECT id, note FROM `{}` ORDER BY id",
            self.table
        )))
        .fetch_all(&mut admin)
        .await
        .expect("read the read model")
    }

    async fn drop_table(self) {
        support::admin_sql(&[format!("DROP TABLE `{}`", self.table)]).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_model_and_checkpoints_roll_back_together() {
    let store = support::store().await;
    let read_model = ReadModel::create().await;
    let group = fresh_group("tx-rollback");

    let mut tx = store.pool().begin().await.expect("begin");
    read_model.write(&mut tx, 1, "rolled back").await;
    store
        .save_in(&mut tx, &group, "s", 0, 10)
        .await
        .expect("save_in");
    store
        .save_all_in(&mut tx, &group, &[Checkpoint::new("t", 1, 5)])
        .await
        .expect("save_all_in");
    let fingerprint = Fingerprint::from_bytes([9; 32]);
    assert_eq!(
        store
            .claim_in(&mut tx, &group, "x", 0, fingerprint, 3)
            .await
            .expect("claim_in"),
        3
    );
    store
        .advance_in(&mut tx, &group, "x", 0, 3, 4)
        .await
        .expect("advance_in");
    // Inside the transaction, the checkpoints are visible...
    let seen: Option<i64> = sqlx::query_scalar(
        "SELECT position FROM checkpoints WHERE group_name = ? AND subscription = 's'",
    )
    .bind(&group)
    .fetch_optional(&mut *tx)
    .await
    .expect("read inside the transaction");
    assert_eq!(seen, Some(10));
    assert_eq!(store.list_in(&mut tx, &group).await.unwrap().len(), 3);
    // ...and outside not yet.
    assert_eq!(store.load(&group, "s", 0).await.expect("load"), None);
    tx.rollback().await.expect("rollback");

    assert!(read_model.rows().await.is_empty());
    assert_eq!(store.list(&group).await.expect("list"), vec![]);
    read_model.drop_table().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_model_and_checkpoints_commit_together() {
    let store = support::store().await;
    let read_model = ReadModel::create().await;
    let group = fresh_group("tx-commit");
    let fingerprint = Fingerprint::from_bytes([9; 32]);
    let from = store
        .claim(&group, "x", 0, fingerprint, 0)
        .await
        .expect("claim");

    let mut tx = store.pool().begin().await.expect("begin");
    read_model.write(&mut tx, 1, "committed").await;
    store
        .advance_in(&mut tx, &group, "x", 0, from, 7)
        .await
        .expect("advance_in");
    store
        .save_in(&mut tx, &group, "s", 2, 11)
        .await
        .expect("save_in");
    tx.commit().await.expect("commit");

    assert_eq!(read_model.rows().await, vec![(1, "committed".to_owned())]);
    assert_eq!(store.load(&group, "x", 0).await.expect("load"), Some(7));
    assert_eq!(store.load(&group, "s", 2).await.expect("load"), Some(11));
    read_model.drop_table().await;
}

/// Two "processes" (two pools on one server) project under one name: the one that advances
/// second finds the checkpoint moved, says where it is, and its read model rolls back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advance_in_fails_with_moved_when_another_pool_advanced_first() {
    let first = support::store().await;
    let second = support::store().await;
    let read_model = ReadModel::create().await;
    let group = fresh_group("tx-moved");
    let fingerprint = Fingerprint::from_bytes([5; 32]);
    assert_eq!(
        first
            .claim(&group, "p", 0, fingerprint, 0)
            .await
            .expect("claim"),
        0
    );
    assert_eq!(
        second
            .claim(&group, "p", 0, fingerprint, 0)
            .await
            .expect("claim"),
        0
    );

    second
        .advance(&group, "p", 0, 0, 5)
        .await
        .expect("the other process advances first");

    let mut tx = first.pool().begin().await.expect("begin");
    read_model.write(&mut tx, 1, "projected twice").await;
    match first.advance_in(&mut tx, &group, "p", 0, 0, 3).await {
        Err(Error::Moved { expected, current }) => {
            assert_eq!(expected, 0);
            assert_eq!(current, Some(5));
        }
        other => panic!("expected Moved, got {other:?}"),
    }
    tx.rollback().await.expect("rollback");
    assert!(read_model.rows().await.is_empty());
    assert_eq!(first.load(&group, "p", 0).await.expect("load"), Some(5));

    // On an absent checkpoint, Moved says so.
    let mut conn = first.pool().acquire().await.expect("acquire");
    match first.advance_in(&mut conn, &group, "absent", 0, 0, 1).await {
        Err(Error::Moved {
            expected: 0,
            current: None,
        }) => {}
        other => panic!("expected Moved with no current position, got {other:?}"),
    }
    drop(conn);
    read_model.drop_table().await;
}

/// Many contenders from two pools race to advance the same step, each in its own transaction
/// with its read-model row: exactly one commits per step, and the read model holds exactly the
/// winners' rows (the kit's SQL family).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_transactions_commit_exactly_one_winner_per_step() {
    transactions::racing_transactions_commit_exactly_one_winner_per_step(&support::Server).await;
}

/// The loser's advance waits for the winner's row lock, and then reports where the winner
/// really left the position, not the one of its own snapshot (the kit's SQL family). Under
/// REPEATABLE READ: a plain read after the wait still sees its snapshot's 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_advance_reports_the_committed_position() {
    checkpoint_conformance::sql_family::transactions::a_waiting_advance_reports_the_committed_position(
        &support::Server,
        0,
    )
    .await;
}

/// `load_in` and `list_in` read through the caller's transaction: they see its uncommitted
/// checkpoints, which the pool does not, and refuse bad input like `load` and `list`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_in_and_list_in_see_the_transactions_own_writes() {
    let store = support::store().await;
    let group = fresh_group("tx-own-writes");
    store.save(&group, "s", 0, 1).await.expect("save");

    let mut tx = store.pool().begin().await.expect("begin");
    store
        .save_all_in(
            &mut tx,
            &group,
            &[Checkpoint::new("s", 0, 5), Checkpoint::new("t", 1, 2)],
        )
        .await
        .expect("save_all_in");
    assert_eq!(
        store
            .load_in(&mut tx, &group, "s", 0)
            .await
            .expect("load_in"),
        Some(5)
    );
    assert_eq!(
        store
            .load_in(&mut tx, &group, "absent", 0)
            .await
            .expect("load_in"),
        None
    );
    let mut listed = store.list_in(&mut tx, &group).await.expect("list_in");
    listed.sort_by(|a, b| a.subscription.cmp(&b.subscription));
    assert_eq!(
        listed,
        vec![Checkpoint::new("s", 0, 5), Checkpoint::new("t", 1, 2)]
    );
    // The pool, outside the transaction, sees only what was committed.
    assert_eq!(store.load(&group, "s", 0).await.expect("load"), Some(1));
    for error in [
        store.load_in(&mut tx, "", "s", 0).await.map(drop),
        store.list_in(&mut tx, "g\0").await.map(drop),
    ] {
        let error = error.expect_err("invalid");
        assert!(error.invalid_input().is_some(), "{error:?}");
    }
    tx.rollback().await.expect("rollback");

    assert_eq!(store.load(&group, "s", 0).await.expect("load"), Some(1));
    assert_eq!(
        store.list(&group).await.expect("list"),
        vec![Checkpoint::new("s", 0, 1)]
    );
}
