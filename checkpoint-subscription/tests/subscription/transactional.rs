//! The transactional handler on PostgreSQL, MySQL and SQLite: the read model (a table of the
//! same database, written in the batch's transaction) equals the log exactly once, with workers
//! killed at random points, handler failures rolled back and retried, and poison entries
//! parked.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use checkpoint_core::parked::ParkedStore;
use checkpoint_core::source::{Entry, InMemorySource};
use checkpoint_core::transactional::TransactionalStore;
use checkpoint_core::{CheckpointStore, Fingerprint, Query, QueryItem, fingerprint};
use checkpoint_mysql::MysqlCheckpointStore;
use checkpoint_postgres::PostgresCheckpointStore;
use checkpoint_sqlite::SqliteCheckpointStore;
use checkpoint_subscription::{HandlerResult, OnPoison, Retry, Subscription, TransactionalHandler};
use checkpoint_worker::WorkerStore;
use futures_util::future::BoxFuture;
// The table names are the test's own (a process id and a random number).
use sqlx::{AssertSqlSafe, MySql, Postgres, Sqlite, Transaction};

const PARTITIONS: u32 = 2;
const PER_PARTITION: u64 = 300;

/// Whether an entry is poison (its handler always fails), and whether it fails its first run
/// only (a transient failure: the batch is rolled back and retried).
fn poison(position: u64) -> bool {
    position.is_multiple_of(97)
}
fn fails_once(position: u64) -> bool {
    position.is_multiple_of(23)
}

/// What every handler does before writing: fail on poison entries, and once on the
/// transient ones (after the batch's earlier entries were written: the rollback must undo
/// them).
fn check(
    entry: &Entry,
    failed_once: &Mutex<BTreeSet<(u32, u64)>>,
    partition: u32,
) -> HandlerResult {
    if poison(entry.position) {
        return Err(format!("poison at {}", entry.position).into());
    }
    if fails_once(entry.position)
        && failed_once
            .lock()
            .expect("not poisoned")
            .insert((partition, entry.position))
    {
        return Err("a transient failure".into());
    }
    Ok(())
}

fn partition_of(entry: &Entry) -> u32 {
    entry
        .key
        .as_deref()
        .and_then(|k| k.parse().ok())
        .expect("the key is the partition")
}

struct PostgresCounts {
    table: String,
    failed_once: Mutex<BTreeSet<(u32, u64)>>,
}

impl TransactionalHandler<Transaction<'static, Postgres>> for PostgresCounts {
    fn handle<'a>(
        &'a self,
        transaction: &'a mut Transaction<'static, Postgres>,
        entries: &'a [Entry],
    ) -> BoxFuture<'a, HandlerResult> {
        Box::pin(async move {
            for entry in entries {
                let partition = partition_of(entry);
                sqlx::query(AssertSqlSafe(format!(
                    "INSERT INTO {0} (partition, position, n) VALUES ($1, $2, 1) \
                     ON CONFLICT (partition, position) DO UPDATE SET n = {0}.n + 1",
                    self.table
                )))
                .bind(i64::from(partition))
                .bind(i64::try_from(entry.position)?)
                .execute(&mut **transaction)
                .await?;
                check(entry, &self.failed_once, partition)?;
            }
            Ok(())
        })
    }
}

struct MysqlCounts {
    table: String,
    failed_once: Mutex<BTreeSet<(u32, u64)>>,
}

impl TransactionalHandler<Transaction<'static, MySql>> for MysqlCounts {
    fn handle<'a>(
        &'a self,
        transaction: &'a mut Transaction<'static, MySql>,
        entries: &'a [Entry],
    ) -> BoxFuture<'a, HandlerResult> {
        Box::pin(async move {
            for entry in entries {
                let partition = partition_of(entry);
                sqlx::query(AssertSqlSafe(format!(
                    "INSERT INTO {} (`partition`, position, n) VALUES (?, ?, 1) \
                     ON DUPLICATE KEY UPDATE n = n + 1",
                    self.table
                )))
                .bind(i64::from(partition))
                .bind(i64::try_from(entry.position)?)
                .execute(&mut **transaction)
                .await?;
                check(entry, &self.failed_once, partition)?;
            }
            Ok(())
        })
    }
}

struct SqliteCounts {
    failed_once: Mutex<BTreeSet<(u32, u64)>>,
}

impl TransactionalHandler<Transaction<'static, Sqlite>> for SqliteCounts {
    fn handle<'a>(
        &'a self,
        transaction: &'a mut Transaction<'static, Sqlite>,
        entries: &'a [Entry],
    ) -> BoxFuture<'a, HandlerResult> {
        Box::pin(async move {
            for entry in entries {
                let partition = partition_of(entry);
                sqlx::query(
                    "INSERT INTO effects (partition, position, n) VALUES (?, ?, 1) \
                     ON CONFLICT (partition, position) DO UPDATE SET n = n + 1",
                )
                .bind(i64::from(partition))
                .bind(i64::try_from(entry.position)?)
                .execute(&mut **transaction)
                .await?;
                check(entry, &self.failed_once, partition)?;
            }
            Ok(())
        })
    }
}

/// Appends `PER_PARTITION` entries to each partition over about 6 s, keyed by partition.
fn write(source: Arc<InMemorySource>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        for position in 1..=PER_PARTITION {
            for partition in 0..PARTITIONS {
                let mut entry = Entry::new(position, b"x".to_vec());
                entry.key = Some(partition.to_string());
                source.append_entry(partition, entry).expect("ahead");
            }
            if position.is_multiple_of(5) {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    })
}

/// Runs the projection through five workers killed at random points and a last one that
/// finishes, then checks the read model (`counts`) and the parked entries.
async fn exactly_once<S, H, C, F>(store: Arc<S>, handler: Arc<H>, counts: C)
where
    S: TransactionalStore + WorkerStore + ParkedStore + 'static,
    H: TransactionalHandler<S::Transaction>,
    C: Fn() -> F,
    F: Future<Output = BTreeMap<(u32, u64), i64>>,
{
    struct Shared<H>(Arc<H>);
    impl<T, H: TransactionalHandler<T>> TransactionalHandler<T> for Shared<H> {
        fn handle<'a>(&'a self, t: &'a mut T, e: &'a [Entry]) -> BoxFuture<'a, HandlerResult> {
            self.0.handle(t, e)
        }
    }
    let group = format!("tx-{}-{}", std::process::id(), fastrand::u64(..));
    let query: Fingerprint =
        fingerprint(Some(&Query::new([QueryItem::new(["Entry"], ["effects"])])));
    let source = Arc::new(InMemorySource::new(PARTITIONS));
    let writer = write(Arc::clone(&source));
    let start = |id: String| {
        Subscription::transactional(
            Arc::clone(&store),
            source.clone(),
            group.clone(),
            "effects",
            query,
        )
        .handler(Shared(Arc::clone(&handler)))
        .batch_size(16)
        .retry(Retry::exponential(Duration::from_millis(1), Duration::from_millis(5)).attempts(3))
        .on_poison(OnPoison::park(Arc::clone(&store)))
        .worker(move |w| {
            w.worker_id(id)
                .lease_duration(Duration::from_millis(800))
                .renew_interval(Duration::from_millis(100))
        })
        .start()
        .expect("valid settings")
    };
    // Each killed worker lives longer than a lease, so that it takes the partitions over from
    // the one killed before it and is killed while it projects.
    let mut handled_by_killed = Vec::new();
    for round in 0..5 {
        let subscription = start(format!("killed-{round}"));
        tokio::time::sleep(Duration::from_millis(fastrand::u64(1000..1400))).await;
        handled_by_killed.push(subscription.stats().handled);
        subscription.worker().crash(); // no handover, no release: the leases expire
        drop(subscription);
    }
    assert!(
        handled_by_killed.iter().filter(|n| **n > 0).count() >= 3,
        "killed workers that projected something: {handled_by_killed:?}"
    );
    writer.await.expect("the writer");
    let last = start("last".to_owned());
    let expected = PARTITIONS as usize * (PER_PARTITION - PER_PARTITION / 97) as usize;
    let mut projected = 0;
    for _ in 0..600 {
        projected = counts().await.len();
        if projected == expected {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        projected,
        expected,
        "entries projected within 30 s; the last worker's stats: {:#?}",
        last.stats()
    );
    last.shutdown().await.expect("a clean shutdown");
    check_outcome(&*store, &group, counts().await).await;
    eprintln!(
        "{} entries, {} poison; 5 workers killed (entries each had handled: \
         {handled_by_killed:?}); the read model holds each of the {projected} others once",
        PARTITIONS as u64 * PER_PARTITION,
        PARTITIONS as u64 * (PER_PARTITION / 97),
    );
}

/// Every entry's effect once, none of a poison entry's, the poison entries parked, the
/// checkpoints past the last entry.
async fn check_outcome<S: CheckpointStore + ParkedStore>(
    store: &S,
    group: &str,
    counts: BTreeMap<(u32, u64), i64>,
) {
    let twice: Vec<_> = counts.iter().filter(|(_, n)| **n != 1).collect();
    assert!(
        twice.is_empty(),
        "effects applied more than once: {twice:?}"
    );
    let poisoned: BTreeSet<(u32, u64)> = (0..PARTITIONS)
        .flat_map(|p| {
            (1..=PER_PARTITION)
                .filter(|x| poison(*x))
                .map(move |x| (p, x))
        })
        .collect();
    assert!(
        counts.keys().all(|key| !poisoned.contains(key)),
        "a poison entry's effect committed"
    );
    let parked: BTreeSet<(u32, u64)> = store
        .parked(group)
        .await
        .expect("parked")
        .into_iter()
        .map(|p| (p.partition, p.position))
        .collect();
    assert_eq!(
        parked, poisoned,
        "parked entries are exactly the poison ones"
    );
    for partition in 0..PARTITIONS {
        let at = store.load(group, "effects", partition).await.expect("load");
        assert_eq!(
            at,
            Some(PER_PARTITION + 1),
            "partition {partition}'s checkpoint"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_the_read_model_equals_the_log_exactly_once_through_kills() {
    let url = std::env::var("DATABASE_URL")
        .expect("DATABASE_URL must name a PostgreSQL server (scripts/test.sh sets it)");
    let store = Arc::new(
        PostgresCheckpointStore::connect(&url)
            .await
            .expect("PostgreSQL"),
    );
    store.migrate().await.expect("migrate");
    let table = format!("tx_effects_{}_{}", std::process::id(), fastrand::u32(..));
    sqlx::query(AssertSqlSafe(format!(
        "CREATE TABLE {table} (partition BIGINT, position BIGINT, n BIGINT NOT NULL, \
         PRIMARY KEY (partition, position))"
    )))
    .execute(store.pool())
    .await
    .expect("the read model's table");
    let handler = Arc::new(PostgresCounts {
        table: table.clone(),
        failed_once: Mutex::default(),
    });
    let pool = store.pool().clone();
    let counts = || {
        let (pool, table) = (pool.clone(), table.clone());
        async move {
            read_counts(
                sqlx::query_as(AssertSqlSafe(format!(
                    "SELECT partition, position, n FROM {table}"
                )))
                .fetch_all(&pool)
                .await,
            )
        }
    };
    exactly_once(Arc::clone(&store), handler, counts).await;
    sqlx::query(AssertSqlSafe(format!("DROP TABLE {table}")))
        .execute(store.pool())
        .await
        .expect("drop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_mysql_the_read_model_equals_the_log_exactly_once_through_kills() {
    let url = std::env::var("MYSQL_URL")
        .expect("MYSQL_URL must name a MySQL or MariaDB server (scripts/test.sh sets it)");
    let store = Arc::new(MysqlCheckpointStore::connect(&url).await.expect("MySQL"));
    store.migrate().await.expect("migrate");
    let table = format!("tx_effects_{}_{}", std::process::id(), fastrand::u32(..));
    // `partition` is a reserved word in MySQL and MariaDB: quoted.
    sqlx::query(AssertSqlSafe(format!(
        "CREATE TABLE {table} (`partition` BIGINT, position BIGINT, n BIGINT NOT NULL, \
         PRIMARY KEY (`partition`, position)) ENGINE = InnoDB"
    )))
    .execute(store.pool())
    .await
    .expect("the read model's table");
    let handler = Arc::new(MysqlCounts {
        table: table.clone(),
        failed_once: Mutex::default(),
    });
    let pool = store.pool().clone();
    let counts = || {
        let (pool, table) = (pool.clone(), table.clone());
        async move {
            read_counts(
                sqlx::query_as(AssertSqlSafe(format!(
                    "SELECT `partition`, position, n FROM {table}"
                )))
                .fetch_all(&pool)
                .await,
            )
        }
    };
    exactly_once(Arc::clone(&store), handler, counts).await;
    sqlx::query(AssertSqlSafe(format!("DROP TABLE {table}")))
        .execute(store.pool())
        .await
        .expect("drop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_the_read_model_equals_the_log_exactly_once_through_kills() {
    let path = std::env::temp_dir().join(format!(
        "checkpoint-tx-{}-{}.db",
        std::process::id(),
        fastrand::u32(..)
    ));
    let store = Arc::new(SqliteCheckpointStore::open(&path).await.expect("SQLite"));
    store.migrate().await.expect("migrate");
    sqlx::query("CREATE TABLE effects (partition INTEGER, position INTEGER, n INTEGER NOT NULL, PRIMARY KEY (partition, position))")
        .execute(store.pool())
        .await
        .expect("the read model's table");
    let handler = Arc::new(SqliteCounts {
        failed_once: Mutex::default(),
    });
    let pool = store.pool().clone();
    let counts = || {
        let pool = pool.clone();
        async move {
            read_counts(
                sqlx::query_as("SELECT partition, position, n FROM effects")
                    .fetch_all(&pool)
                    .await,
            )
        }
    };
    exactly_once(Arc::clone(&store), handler, counts).await;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

fn read_counts(rows: Result<Vec<(i64, i64, i64)>, sqlx::Error>) -> BTreeMap<(u32, u64), i64> {
    rows.expect("the read model")
        .into_iter()
        .map(|(p, x, n)| ((p as u32, x as u64), n))
        .collect()
}
