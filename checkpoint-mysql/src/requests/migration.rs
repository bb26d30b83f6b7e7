//! The migration: the checkpoint table, its tombstone table, the lease tables and the parked
//! entries' table, each created unless it exists.

use checkpoint_core::{Error, Operation};
use sqlx::mysql::MySqlConnection;

use super::{Requests, sql};
use crate::error::backend;

impl Requests {
    /// `sql/schema.sql`, one statement at a time. MySQL commits each `CREATE TABLE` on its own
    /// (DDL is not transactional), so no transaction is opened; `IF NOT EXISTS` and the
    /// server's metadata lock make processes that migrate at once find the tables there.
    pub(super) async fn create_tables(
        &self,
        connection: &mut MySqlConnection,
    ) -> Result<(), Error> {
        for statement in &self.create_tables {
            sqlx::raw_sql(sql(statement))
                .execute(&mut *connection)
                .await
                .map_err(|error| backend(Operation::Migrate, error))?;
        }
        Ok(())
    }
}
