//! [`TransactionalStore`](checkpoint_core::transactional::TransactionalStore): the
//! compare-and-set advance in a transaction of the store's pool, for a subscription's
//! transactional handler, at the session's isolation level (`REPEATABLE READ` on the store's
//! own connections).

checkpoint_sql::transactional_store!(
    crate::MysqlCheckpointStore,
    crate::requests::MysqlEngine,
    sqlx::MySql,
    begin: "BEGIN"
);
