//! The checkpoint store of the fleet: checkpoints and leases (the workers') and parked
//! entries (the subscriptions' poison ones), on SQLite, PostgreSQL, MySQL or Redis.
//!
//! `checkpoint_examples::open_store` gives checkpoints and leases only; a subscription that
//! parks needs the store's `ParkedStore` too, so the fleet keeps every operation of the store
//! `checkpoint_examples::open_url` opens.

use std::sync::Arc;

use checkpoint_connect::StoreUrl;

use crate::BoxError;

/// What the fleet's store offers: checkpoints and leases (the workers'), parked entries (the
/// subscriptions'): every operation of a store of the workspace.
pub use checkpoint_connect::Store as FleetStore;

/// Opens the store `spec` names (`sqlite:<path>`, `postgres://…`, `mysql://…`, `redis://…`).
/// Only the supervisor `migrate`s, before any child starts: children migrating at once would
/// race on creating the same tables.
pub async fn open(spec: &str, migrate: bool) -> Result<Arc<dyn FleetStore>, BoxError> {
    let shared = matches!(
        spec.parse(),
        Ok(StoreUrl::Sqlite(_)
            | StoreUrl::Postgres(_)
            | StoreUrl::Mysql(_)
            | StoreUrl::Redis(_)
            | StoreUrl::RedisCluster(_))
    );
    if !shared {
        let shown = checkpoint_examples::display_store(spec).unwrap_or_else(|| "<store>".into());
        return Err(format!(
            "the fleet needs a store that processes share (sqlite:, postgres://, mysql://, redis://), not {shown}"
        )
        .into());
    }
    let store = checkpoint_examples::open_url(spec, migrate).await?;
    Ok(Arc::from(store))
}
