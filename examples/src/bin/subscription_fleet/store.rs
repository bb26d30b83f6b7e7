//! The checkpoint store of the fleet: checkpoints and leases (the workers') and parked
//! entries (the subscriptions' poison ones), on SQLite, PostgreSQL or Redis.
//!
//! `checkpoint_examples::open_store` gives checkpoints and leases only; a subscription that
//! parks needs the store's `ParkedStore` too, so the store is opened here by its own type.

use std::sync::Arc;

use checkpoint_core::parked::ParkedStore;
use checkpoint_core::{CheckpointStore, LeaseStore};
use checkpoint_examples::check_store;
use checkpoint_sqlite::SqliteCheckpointStore;

use crate::BoxError;

/// What the fleet's store offers: checkpoints, leases and parked entries.
pub trait FleetStore: CheckpointStore + LeaseStore + ParkedStore {}

impl<S: CheckpointStore + LeaseStore + ParkedStore + ?Sized> FleetStore for S {}

/// Opens the store `spec` names (`sqlite:<path>`, `postgres://…`, `redis://…`). Only the
/// supervisor `migrate`s, before any child starts: children migrating at once would race on
/// creating the same tables.
pub async fn open(spec: &str, migrate: bool) -> Result<Arc<dyn FleetStore>, BoxError> {
    check_store(spec)?;
    if let Some(path) = spec.strip_prefix("sqlite:") {
        let store = SqliteCheckpointStore::open(path).await?;
        if migrate {
            store.migrate().await?;
        }
        return Ok(Arc::new(store));
    }
    #[cfg(feature = "postgres")]
    if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
        let store = checkpoint_postgres::PostgresCheckpointStore::connect(spec).await?;
        if migrate {
            store.migrate().await?;
        }
        return Ok(Arc::new(store));
    }
    #[cfg(feature = "redis")]
    if spec.starts_with("redis://") || spec.starts_with("rediss://") {
        return Ok(Arc::new(
            checkpoint_redis::RedisCheckpointStore::connect(spec).await?,
        ));
    }
    Err(format!("the fleet needs a store that processes share (sqlite:, postgres://, redis://), not {spec:?}").into())
}
