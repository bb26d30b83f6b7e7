//! The migration: the checkpoint table, its tombstone table, its lease tables and its parked
//! entries' table (and their schema) created in one transaction, each only when missing;
//! lease tables of the first layout (an expiry per lease) upgraded to the current one (expiry
//! in the heartbeat only).

use checkpoint_core::{Error, Operation};
use sqlx::Connection;
use sqlx::postgres::PgConnection;

use super::{LEASE_LAYOUT, MIGRATE_LOCK, Requests, SCHEMA_EXISTS, TABLE_EXISTS, sql};
use crate::error::backend;

impl Requests {
    /// The migration in one transaction on `connection`, under the table's advisory lock so
    /// that concurrent migrations take turns. Creates nothing when all five tables exist with
    /// the current layout, so a role without the privilege to create can run it; lease tables
    /// of the first layout are upgraded (`sql/upgrade_leases.sql`).
    pub(super) async fn create_tables(&self, connection: &mut PgConnection) -> Result<(), Error> {
        let failed = |error| backend(Operation::Migrate, error);
        let mut transaction = connection.begin().await.map_err(failed)?;
        sqlx::query(MIGRATE_LOCK)
            .bind(&self.table)
            .execute(&mut *transaction)
            .await
            .map_err(failed)?;
        let mut missing = false;
        for quoted in &self.quoted {
            let exists: bool = sqlx::query_scalar(TABLE_EXISTS)
                .bind(quoted)
                .fetch_one(&mut *transaction)
                .await
                .map_err(failed)?;
            missing |= !exists;
        }
        let (current, first): (bool, bool) = sqlx::query_as(LEASE_LAYOUT)
            .bind(&self.quoted[2])
            .bind(&self.quoted[3])
            .bind(&self.by_owner)
            .fetch_one(&mut *transaction)
            .await
            .map_err(failed)?;
        if missing || !current {
            self.create_missing(&mut transaction).await?;
        }
        if first {
            // Several statements, so the simple protocol; no parameters.
            sqlx::raw_sql(sql(&self.upgrade_leases))
                .execute(&mut *transaction)
                .await
                .map_err(failed)?;
        }
        transaction.commit().await.map_err(failed)
    }

    /// Creates the schema when the name has one and it is missing, then the five tables and
    /// the lease table's index (each `IF NOT EXISTS`): a deployment made before the parked
    /// entries' table gets it here, its other tables untouched.
    async fn create_missing(&self, connection: &mut PgConnection) -> Result<(), Error> {
        let failed = |error| backend(Operation::Migrate, error);
        if let (Some(schema), Some(create_schema)) = (&self.schema, &self.create_schema) {
            // Only when missing: CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege on
            // the database even when the schema is there.
            let schema_exists: bool = sqlx::query_scalar(SCHEMA_EXISTS)
                .bind(schema)
                .fetch_one(&mut *connection)
                .await
                .map_err(failed)?;
            if !schema_exists {
                sqlx::query(sql(create_schema))
                    .execute(&mut *connection)
                    .await
                    .map_err(failed)?;
            }
        }
        // Six statements (the tables, the index), so the simple protocol; no parameters.
        sqlx::raw_sql(sql(&self.create_table))
            .execute(&mut *connection)
            .await
            .map_err(failed)?;
        Ok(())
    }
}
