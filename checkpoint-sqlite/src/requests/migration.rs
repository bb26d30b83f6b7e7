//! The migration: the checkpoint table, its tombstone table, the lease tables and the parked
//! entries' table created in one transaction, each unless it exists.

use checkpoint_core::{Error, Operation};
use sqlx::Connection;
use sqlx::sqlite::SqliteConnection;

use super::{Requests, sql};
use crate::error::backend;

impl Requests {
    /// `sql/schema.sql`, every statement, in one `BEGIN IMMEDIATE` transaction: it takes the
    /// write lock first, so of processes migrating at once the second finds the tables there.
    pub(super) async fn create_tables(
        &self,
        connection: &mut SqliteConnection,
    ) -> Result<(), Error> {
        let failed = |error| backend(Operation::Migrate, error);
        let mut transaction = connection
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(failed)?;
        sqlx::raw_sql(sql(&self.create_table))
            .execute(&mut *transaction)
            .await
            .map_err(failed)?;
        transaction.commit().await.map_err(failed)
    }
}
