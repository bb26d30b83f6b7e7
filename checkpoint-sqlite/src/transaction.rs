//! The `*_in` family: every operation on the caller's own connection or transaction (pass
//! `&mut *tx`), so that a read model and its checkpoint commit together or not at all. Each
//! runs the same statements as its counterpart on the pool, under the store's timeout.

checkpoint_sql::in_family!(
    crate::SqliteCheckpointStore,
    sqlx::sqlite::SqliteConnection,
    save_in: "Inside a transaction begun with a plain `BEGIN` that has already read, SQLite may \
        fail the write at once with `SQLITE_BUSY` (retryable) if another connection wrote since \
        that read; begin with `BEGIN IMMEDIATE` to take the write lock up front instead.",
    claim_in: "Inside a transaction, the claim takes SQLite's write lock and holds it until the \
        transaction ends.",
    advance_in: "Inside a transaction, the compare-and-set takes SQLite's write lock and holds \
        it until the transaction ends, so other writers of the same database wait for the \
        commit (up to their busy timeout). Keep such transactions short.",
);
