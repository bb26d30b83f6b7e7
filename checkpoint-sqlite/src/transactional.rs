//! [`TransactionalStore`](checkpoint_core::transactional::TransactionalStore): the
//! compare-and-set advance in a transaction of the store's pool, for a subscription's
//! transactional handler. `BEGIN IMMEDIATE`: the write lock from the start, so no later
//! statement fails on a lock upgrade.

checkpoint_sql::transactional_store!(
    crate::SqliteCheckpointStore,
    crate::requests::SqliteEngine,
    sqlx::Sqlite,
    begin: "BEGIN IMMEDIATE"
);
