//! The `*_in` methods in the caller's transaction: the read model and the checkpoint commit
//! together or not at all, and of two projections under one name only one commits.

use std::time::Duration;

use checkpoint_conformance::fresh_group;
use checkpoint_core::{Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint};
use sqlx::{AssertSqlSafe, PgConnection};

use crate::support;

const FINGERPRINT: Fingerprint = Fingerprint::from_bytes([0x11; 32]);

/// A read-model table of the test's own: (projection writer, event position).
struct ReadModel {
    table: String,
}

impl ReadModel {
    async fn create() -> Self {
        let table = support::unique_ident("read_model");
        let mut admin = support::admin_connection().await;
        sqlx::query(AssertSqlSafe(format!(
            "CREATE TABLE {table} (writer TEXT NOT NULL, position BIGINT NOT NULL)"
        )))
        .execute(&mut admin)
        .await
        .unwrap();
        Self { table }
    }

    async fn write(&self, connection: &mut PgConnection, writer: &str, position: i64) {
        sqlx::query(AssertSqlSafe(format!(
            "INSERT INTO {} (writer, position) VALUES ($1, $2)",
            self.table
        )))
        .bind(writer)
        .bind(position)
        .execute(connection)
        .await
        .unwrap();
    }

    async fn rows(&self) -> Vec<(String, i64)> {
        let mut admin = support::admin_connection().await;
        sqlx::query_as(AssertSqlSafe(format!(
            "SELECT writer, position FROM {} ORDER BY position, writer",
            self.table
        )))
        .fetch_all(&mut admin)
        .await
        .unwrap()
    }

    async fn drop_table(self) {
        let mut admin = support::admin_connection().await;
        sqlx::query(AssertSqlSafe(format!("DROP TABLE {}", self.table)))
            .execute(&mut admin)
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_model_and_checkpoint_roll_back_together() {
    let store = support::store().await;
    let read_model = ReadModel::create().await;
    let group = fresh_group("tx-rollback");

    let mut transaction = store.pool().begin().await.unwrap();
    read_model.write(&mut transaction, "p", 1).await;
    store
        .save_in(&mut transaction, &group, "s", 0, 1)
        .await
        .unwrap();
    store
        .save_all_in(&mut transaction, &group, &[Checkpoint::new("t", 1, 5)])
        .await
        .unwrap();
    // Inside the transaction, the checkpoint is there...
    assert_eq!(
        store
            .load_in(&mut transaction, &group, "s", 0)
            .await
            .unwrap(),
        Some(1)
    );
    assert_eq!(
        store.list_in(&mut transaction, &group).await.unwrap().len(),
        2
    );
    // ...and outside not yet.
    assert_eq!(store.load(&group, "s", 0).await.unwrap(), None);
    transaction.rollback().await.unwrap();

    assert_eq!(store.load(&group, "s", 0).await.unwrap(), None);
    assert!(store.list(&group).await.unwrap().is_empty());
    assert!(read_model.rows().await.is_empty());
    read_model.drop_table().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_model_and_checkpoint_commit_together() {
    let store = support::store().await;
    let read_model = ReadModel::create().await;
    let group = fresh_group("tx-commit");

    let mut transaction = store.pool().begin().await.unwrap();
    read_model.write(&mut transaction, "p", 7).await;
    store
        .save_in(&mut transaction, &group, "s", 0, 7)
        .await
        .unwrap();
    transaction.commit().await.unwrap();

    assert_eq!(store.load(&group, "s", 0).await.unwrap(), Some(7));
    assert_eq!(read_model.rows().await, vec![("p".to_owned(), 7)]);
    read_model.drop_table().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_rolled_back_leaves_nothing() {
    let store = support::store().await;
    let group = fresh_group("tx-claim");
    let mut transaction = store.pool().begin().await.unwrap();
    assert_eq!(
        store
            .claim_in(&mut transaction, &group, "s", 0, FINGERPRINT, 3)
            .await
            .unwrap(),
        3
    );
    transaction.rollback().await.unwrap();
    assert_eq!(store.load(&group, "s", 0).await.unwrap(), None);
}

/// Two processes run the same projection: the second to commit finds its position gone,
/// gets `Moved`, and its read-model write is rolled back with its transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loser_of_two_projections_is_moved_and_rolled_back() {
    let store = support::store().await;
    let read_model = ReadModel::create().await;
    let group = fresh_group("tx-exclusive");

    let from_a = store.claim(&group, "p", 0, FINGERPRINT, 100).await.unwrap();
    let from_b = store.claim(&group, "p", 0, FINGERPRINT, 100).await.unwrap();
    assert_eq!((from_a, from_b), (100, 100));

    let mut a = store.pool().begin().await.unwrap();
    let mut b = store.pool().begin().await.unwrap();
    read_model.write(&mut a, "a", 110).await;
    read_model.write(&mut b, "b", 110).await;

    store
        .advance_in(&mut b, &group, "p", 0, from_b, 110)
        .await
        .unwrap();
    b.commit().await.unwrap();

    let error = store
        .advance_in(&mut a, &group, "p", 0, from_a, 110)
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            Error::Moved {
                expected: 100,
                current: Some(110)
            }
        ),
        "{error:?}"
    );
    a.rollback().await.unwrap();

    assert_eq!(store.load(&group, "p", 0).await.unwrap(), Some(110));
    assert_eq!(read_model.rows().await, vec![("b".to_owned(), 110)]);
    read_model.drop_table().await;
}

/// The loser's advance waits for the winner's row lock, and then reports where the winner
/// really left the position, not the one of its own snapshot (the kit's SQL family). Under
/// READ COMMITTED: a plain read after the wait sees the winner's 50.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_advance_reports_the_committed_position() {
    checkpoint_conformance::sql_family::transactions::a_waiting_advance_reports_the_committed_position(
        &support::Server,
        50,
    )
    .await;
}

/// `Moved` for a checkpoint that does not exist says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advance_of_an_absent_checkpoint_is_moved_to_none() {
    let store = support::store().await;
    let group = fresh_group("tx-absent");
    let mut transaction = store.pool().begin().await.unwrap();
    let result = store
        .advance_in(&mut transaction, &group, "p", 0, 0, 1)
        .await;
    assert!(
        matches!(
            result,
            Err(Error::Moved {
                expected: 0,
                current: None
            })
        ),
        "{result:?}"
    );
}

/// Whether the pool's only connection runs statements inside a transaction left open:
/// `now()` is the transaction's start, so two reads apart in time agree only then.
async fn inside_a_leftover_transaction(pool: &sqlx::PgPool) -> bool {
    // Microseconds since the epoch, as a bigint: no time type needed on the client.
    const NOW: &str = "SELECT (extract(epoch FROM now()) * 1e6)::bigint";
    let first: i64 = sqlx::query_scalar(NOW).fetch_one(pool).await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second: i64 = sqlx::query_scalar(NOW).fetch_one(pool).await.unwrap();
    first == second
}

/// A `begin_transaction` cancelled while its `BEGIN` is on the wire (a task aborted, a
/// `select!` or a timeout around it: the subscription's reader drops its batch when the
/// lease is lost) must not leave the pool's connection inside a transaction nobody ends:
/// the next borrower's statements would run in it and hold their locks for ever (every
/// lease request of the group then waits on them). sqlx 0.9.0 did, on PostgreSQL; 0.9.1
/// rolls it back. Cancelled after each number of polls from 1 to 50 (with a yield between
/// them), so that one of them lands in the window whatever the pool's own steps take: on
/// 0.9.0 the second did, and the test failed there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_begin_cancelled_on_the_wire_leaves_no_transaction_on_the_pool() {
    use checkpoint_core::transactional::TransactionalStore;
    use std::future::Future;
    use std::task::{Context, Poll};

    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect_with(support::connect_options())
        .await
        .unwrap();
    let store = checkpoint_postgres::PostgresCheckpointStore::new(pool.clone());
    for polls in 1..=50 {
        let mut begin = Box::pin(store.begin_transaction());
        let waker = std::task::Waker::noop();
        let mut context = Context::from_waker(waker);
        let mut ended = false;
        for _ in 0..polls {
            if let Poll::Ready(result) = begin.as_mut().poll(&mut context) {
                // Begun before the cancel: a plain drop of a Transaction, not this case.
                drop(result.unwrap());
                ended = true;
                break;
            }
            // Let the pool's tasks and the socket's bytes move between polls.
            tokio::task::yield_now().await;
        }
        drop(begin);
        assert!(
            !inside_a_leftover_transaction(&pool).await,
            "after a begin cancelled at poll {polls} (begun: {ended}), the pool's connection \
             runs statements inside a transaction nobody ends"
        );
    }
}
