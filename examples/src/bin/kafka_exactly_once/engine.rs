//! The checkpoint store and its database, by the `--store` URL's scheme: the transactional
//! handler writes through the engine's own sqlx transaction, so each engine is its store's
//! concrete type (not `checkpoint_connect`'s trait object) with a handler of its own.

use std::sync::Arc;
use std::time::Duration;

use checkpoint_connect::StoreUrl;
use checkpoint_core::source::Source;
use checkpoint_core::transactional::TransactionalStore;
use checkpoint_core::{CheckpointStore, Query, QueryItem, fingerprint};
#[cfg(feature = "mysql")]
use checkpoint_mysql::MysqlCheckpointStore;
#[cfg(feature = "postgres")]
use checkpoint_postgres::PostgresCheckpointStore;
use checkpoint_sqlite::SqliteCheckpointStore;
use checkpoint_subscription::{Retry, Subscription, TransactionalHandler};
use checkpoint_worker::WorkerStore;

use crate::record::Row;
use crate::{BATCH, BoxError, LEASE, SUBSCRIPTION};

/// A little work per batch inside its transaction, so that a SIGKILL lands inside an open
/// transaction now and then (rolled back with the connection), not only between two.
pub async fn work() {
    tokio::time::sleep(Duration::from_millis(5)).await;
}

/// One engine's store: checkpoints, leases, and the read model in the same database.
pub enum Db {
    #[cfg(feature = "postgres")]
    Postgres(Arc<PostgresCheckpointStore>),
    #[cfg(feature = "mysql")]
    Mysql(Arc<MysqlCheckpointStore>),
    Sqlite(Arc<SqliteCheckpointStore>),
}

impl Db {
    /// Opens the store `url` names: `sqlite:PATH`, `postgres://…` or `mysql://…` (a backend
    /// this build left out is refused, naming the feature to add).
    pub async fn open(url: &str) -> Result<Self, BoxError> {
        checkpoint_examples::check_store(url)?;
        match url.parse::<StoreUrl>()? {
            #[cfg(feature = "postgres")]
            StoreUrl::Postgres(url) => Ok(Self::Postgres(Arc::new(
                PostgresCheckpointStore::connect(&url).await?,
            ))),
            #[cfg(feature = "mysql")]
            StoreUrl::Mysql(url) => Ok(Self::Mysql(Arc::new(
                MysqlCheckpointStore::connect(&url).await?,
            ))),
            StoreUrl::Sqlite(path) => Ok(Self::Sqlite(Arc::new(
                SqliteCheckpointStore::open(&path).await?,
            ))),
            _ => Err("a transactional handler needs an SQL store: sqlite:PATH, \
                      postgres://… or mysql://…"
                .into()),
        }
    }

    /// The engine's name, for the summary.
    pub fn name(&self) -> &'static str {
        match self {
            #[cfg(feature = "postgres")]
            Self::Postgres(_) => "postgres",
            #[cfg(feature = "mysql")]
            Self::Mysql(_) => "mysql",
            Self::Sqlite(_) => "sqlite",
        }
    }

    /// The store's tables and the read model's. The supervisor's alone, before any child
    /// starts: children creating them at once would race.
    pub async fn prepare(&self) -> Result<(), BoxError> {
        match self {
            #[cfg(feature = "postgres")]
            Self::Postgres(store) => {
                store.migrate().await?;
                sqlx::query(crate::postgres::CREATE)
                    .execute(store.pool())
                    .await?;
            }
            #[cfg(feature = "mysql")]
            Self::Mysql(store) => {
                store.migrate().await?;
                sqlx::query(crate::mysql::CREATE)
                    .execute(store.pool())
                    .await?;
            }
            Self::Sqlite(store) => {
                store.migrate().await?;
                sqlx::query(crate::sqlite::CREATE)
                    .execute(store.pool())
                    .await?;
            }
        }
        Ok(())
    }

    /// Starts child `child`'s subscription of the run over `source`, with the engine's
    /// handler.
    pub fn subscribe(
        &self,
        source: Arc<dyn Source>,
        run: &str,
        child: &str,
    ) -> Result<Subscription, BoxError> {
        let (run_, child_) = (run.to_owned(), child.to_owned());
        match self {
            #[cfg(feature = "postgres")]
            Self::Postgres(store) => {
                let rows = crate::postgres::Rows {
                    run: run_,
                    child: child_,
                };
                subscribe(Arc::clone(store), rows, source, run, child)
            }
            #[cfg(feature = "mysql")]
            Self::Mysql(store) => {
                let rows = crate::mysql::Rows {
                    run: run_,
                    child: child_,
                };
                subscribe(Arc::clone(store), rows, source, run, child)
            }
            Self::Sqlite(store) => {
                let rows = crate::sqlite::Rows {
                    run: run_,
                    child: child_,
                };
                subscribe(Arc::clone(store), rows, source, run, child)
            }
        }
    }

    /// The run's rows of the read model.
    pub async fn rows(&self, run: &str) -> Result<Vec<Row>, BoxError> {
        match self {
            #[cfg(feature = "postgres")]
            Self::Postgres(store) => crate::postgres::rows(store, run).await,
            #[cfg(feature = "mysql")]
            Self::Mysql(store) => crate::mysql::rows(store, run).await,
            Self::Sqlite(store) => crate::sqlite::rows(store, run).await,
        }
    }

    /// How many of the run's rows `child` committed (all of them with `None`).
    pub async fn count(&self, run: &str, child: Option<&str>) -> Result<u64, BoxError> {
        match self {
            #[cfg(feature = "postgres")]
            Self::Postgres(store) => crate::postgres::count(store, run, child).await,
            #[cfg(feature = "mysql")]
            Self::Mysql(store) => crate::mysql::count(store, run, child).await,
            Self::Sqlite(store) => crate::sqlite::count(store, run, child).await,
        }
    }

    /// Removes the run's rows (after a run that passed: a failed one keeps them to look at).
    pub async fn delete(&self, run: &str) -> Result<(), BoxError> {
        match self {
            #[cfg(feature = "postgres")]
            Self::Postgres(store) => crate::postgres::delete(store, run).await,
            #[cfg(feature = "mysql")]
            Self::Mysql(store) => crate::mysql::delete(store, run).await,
            Self::Sqlite(store) => crate::sqlite::delete(store, run).await,
        }
    }

    /// The stored checkpoint of `partition` (the next offset to read), if any.
    pub async fn checkpoint(&self, run: &str, partition: u32) -> Result<Option<u64>, BoxError> {
        let store: &dyn CheckpointStore = match self {
            #[cfg(feature = "postgres")]
            Self::Postgres(store) => &**store,
            #[cfg(feature = "mysql")]
            Self::Mysql(store) => &**store,
            Self::Sqlite(store) => &**store,
        };
        Ok(store.load(run, SUBSCRIPTION, partition).await?)
    }
}

/// The subscription of every engine: the run is its group; short leases; a failed batch
/// (a deadlock, a busy database) rolled back and retried for a few seconds before the
/// partition stops, which the verdict would report as missing records.
fn subscribe<S, H>(
    store: Arc<S>,
    handler: H,
    source: Arc<dyn Source>,
    run: &str,
    child: &str,
) -> Result<Subscription, BoxError>
where
    S: TransactionalStore + WorkerStore + 'static,
    H: TransactionalHandler<S::Transaction>,
{
    // Stored with the first claim: a process of the run reading anything else is refused.
    let query = fingerprint(Some(&Query::new([QueryItem::new(["record"], [run])])));
    let retry = Retry::exponential(Duration::from_millis(20), Duration::from_secs(1)).attempts(10);
    Ok(
        Subscription::transactional(store, source, run, SUBSCRIPTION, query)
            .handler(handler)
            .batch_size(BATCH)
            .retry(retry)
            .worker(|worker| worker.worker_id(child).lease_duration(LEASE))
            .start()?,
    )
}
