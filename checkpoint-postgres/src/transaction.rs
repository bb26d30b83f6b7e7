//! The `*_in` family: every operation on a connection the caller holds, typically
//! `&mut *transaction`, so that a projection commits its read model and its checkpoint together
//! or not at all.
//!
//! Each runs the same statement as its counterpart on the pool, under the store's timeout, and
//! never runs it a second time: on a lost connection the caller's transaction is gone anyway.

checkpoint_sql::in_family!(
    crate::PostgresCheckpointStore,
    sqlx::postgres::PgConnection,
    save_in: "The row stays locked until the transaction ends.",
    claim_in: "The claim locks the checkpoint's row until the transaction ends, so a second \
        process claiming the same checkpoint waits for this one to commit or roll back.",
    advance_in: "The compare-and-set locks the checkpoint's row until the transaction ends, so \
        another advance of it waits for the commit and then finds it moved.",
);
