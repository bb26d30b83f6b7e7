//! The migration: the checkpoint table, its tombstone table, the lease tables and the parked
//! entries' table, each created unless it exists; then the store's procedures, each created
//! unless it exists.

use checkpoint_core::{Error, Operation};
use sqlx::mysql::MySqlConnection;

use super::{Requests, sql};
use crate::error::{backend, is_existing_routine};

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

    /// `sql/procedures/`, one `CREATE PROCEDURE` at a time (the server parses each whole, its
    /// body's `;` included: no client delimiter is involved). A procedure that exists is left
    /// as it is: its name carries its version, so one of that name has this text. MySQL has no
    /// `CREATE OR REPLACE PROCEDURE` and MySQL 8.0 before 8.0.29 no `IF NOT EXISTS` for it, so
    /// the server's refusal, `ER_SP_ALREADY_EXISTS`, is what says it exists; the routine's
    /// metadata lock makes a process that migrates at the same time wait for the other's
    /// `CREATE` and then get that refusal. Never dropped and created again: a `DROP
    /// PROCEDURE` also drops every `EXECUTE` granted on it.
    pub(super) async fn create_procedures(
        &self,
        connection: &mut MySqlConnection,
    ) -> Result<(), Error> {
        for statement in &self.create_procedures {
            match sqlx::raw_sql(sql(statement))
                .execute(&mut *connection)
                .await
            {
                Ok(_) => {}
                Err(error) if is_existing_routine(&error) => {}
                Err(error) => return Err(backend(Operation::Migrate, error)),
            }
        }
        Ok(())
    }
}
