//! [`TransactionalStore`](checkpoint_core::transactional::TransactionalStore): the
//! compare-and-set advance in a transaction of the store's pool, for a subscription's
//! transactional handler. A plain `BEGIN`: READ COMMITTED, as the handler's own statements
//! expect.

checkpoint_sql::transactional_store!(
    crate::PostgresCheckpointStore,
    crate::requests::PgEngine,
    sqlx::Postgres,
    begin: "BEGIN"
);
