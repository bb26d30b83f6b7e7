//! The `*_in` family: every operation on the caller's own connection or transaction (pass
//! `&mut *tx`), so that a read model and its checkpoint commit together or not at all. Each
//! runs the same statements as its counterpart on the pool, under the store's timeout, and
//! never runs them a second time: a deadlock (InnoDB rolled the caller's whole transaction
//! back) is returned as a retryable error, since the caller's earlier statements are gone
//! with it.

checkpoint_sql::in_family!(
    crate::MysqlCheckpointStore,
    sqlx::mysql::MySqlConnection,
    save_in: "The row stays locked until the transaction ends. A deadlock (InnoDB rolled the \
        caller's whole transaction back) is returned as a retryable error, not run again.",
    claim_in: "The claim's read locks the checkpoint's row until the transaction ends, so a \
        second process claiming it waits for this one to commit or roll back.",
    advance_in: "The compare-and-set locks the checkpoint's row until the transaction ends, so \
        another advance of it waits for the commit (up to the server's \
        `innodb_lock_wait_timeout`) and then finds it moved. Keep such transactions short. A \
        deadlock is returned as a retryable error, not run again: the caller's earlier \
        statements are gone with it.",
);
