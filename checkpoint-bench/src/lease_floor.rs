//! The acquire floor of the SQL stores: the rows a first acquire of a new owner writes (its
//! heartbeat and the lease), written by plain upserts with nothing read or judged, on the
//! store's own tables and pool. `acquire` ÷ this floor is what the store's checks cost;
//! this floor ÷ `save` is what writing two new rows costs against updating one.

use std::sync::Arc;

use sqlx::{MySqlPool, PgPool, SqlitePool};

use crate::subject::{SaveArgs, SaveFn};

/// Ten minutes, in microseconds (PostgreSQL) and milliseconds (SQLite, MySQL): nothing expires
/// while the bench runs.
const LEASE_MICROS: i64 = 600_000_000;

/// PostgreSQL: one statement, as the store's acquire is: the heartbeat upserted in a CTE, then
/// the lease row upserted. `table` is the store's checkpoint table (its lease tables are named
/// after it).
pub fn postgres(pool: PgPool, table: &str) -> SaveFn {
    let sql: Arc<str> = format!(
        "WITH heartbeat AS ( \
            INSERT INTO {table}_owners AS o (group_name, subscription, owner, generation, expires_at) \
            VALUES ($1, $2, $3, 1, now() + $5::bigint * interval '1 microsecond') \
            ON CONFLICT (group_name, subscription, owner) DO UPDATE SET expires_at = EXCLUDED.expires_at \
         ) \
         INSERT INTO {table}_leases AS l (group_name, subscription, partition_id, owner, owner_generation, epoch) \
         VALUES ($1, $2, $4, $3, 1, 1) \
         ON CONFLICT (group_name, subscription, partition_id) DO UPDATE \
            SET owner = EXCLUDED.owner, owner_generation = 1, epoch = l.epoch + 1"
    )
    .into();
    Arc::new(move |args: SaveArgs| {
        let (pool, sql) = (pool.clone(), Arc::clone(&sql));
        Box::pin(async move {
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(&*args.group)
                .bind(&*args.subscription)
                .bind(format!("floor-{}", args.partition))
                .bind(i64::from(args.partition))
                .bind(LEASE_MICROS)
                .execute(&pool)
                .await?;
            Ok(())
        })
    })
}

/// SQLite: one write transaction, as the store's acquire is, with the two upserts in it.
pub fn sqlite(pool: SqlitePool, table: &str) -> SaveFn {
    let owner_sql: Arc<str> = format!(
        "INSERT INTO {table}_lease_owners (group_name, subscription, owner, expires_at_ms) \
         VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (group_name, subscription, owner) DO UPDATE \
            SET expires_at_ms = excluded.expires_at_ms"
    )
    .into();
    let lease_sql: Arc<str> = format!(
        "INSERT INTO {table}_leases (group_name, subscription, partition_id, owner, epoch, expires_at_ms) \
         VALUES (?1, ?2, ?5, ?3, 1, ?4) \
         ON CONFLICT (group_name, subscription, partition_id) DO UPDATE \
            SET owner = excluded.owner, epoch = epoch + 1, expires_at_ms = excluded.expires_at_ms"
    )
    .into();
    Arc::new(move |args: SaveArgs| {
        let (pool, owner_sql, lease_sql) =
            (pool.clone(), Arc::clone(&owner_sql), Arc::clone(&lease_sql));
        Box::pin(async move {
            let owner = format!("floor-{}", args.partition);
            let expires = now_ms() + LEASE_MICROS / 1_000;
            let mut tx = pool.begin().await?;
            sqlx::query(sqlx::AssertSqlSafe(owner_sql))
                .bind(&*args.group)
                .bind(&*args.subscription)
                .bind(&owner)
                .bind(expires)
                .execute(&mut *tx)
                .await?;
            sqlx::query(sqlx::AssertSqlSafe(lease_sql))
                .bind(&*args.group)
                .bind(&*args.subscription)
                .bind(&owner)
                .bind(expires)
                .bind(i64::from(args.partition))
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(())
        })
    })
}

/// MySQL: one transaction, as the store's acquire is, with the two upserts in it.
pub fn mysql(pool: MySqlPool, table: &str) -> SaveFn {
    let owner_sql: Arc<str> = format!(
        "INSERT INTO {table}_lease_owners (group_name, subscription, owner, expires_at_ms) \
         VALUES (?, ?, ?, ?) \
         ON DUPLICATE KEY UPDATE expires_at_ms = VALUES(expires_at_ms)"
    )
    .into();
    let lease_sql: Arc<str> = format!(
        "INSERT INTO {table}_leases (group_name, subscription, partition_id, owner, epoch, expires_at_ms) \
         VALUES (?, ?, ?, ?, 1, ?) \
         ON DUPLICATE KEY UPDATE owner = VALUES(owner), epoch = epoch + 1, \
            expires_at_ms = VALUES(expires_at_ms)"
    )
    .into();
    Arc::new(move |args: SaveArgs| {
        let (pool, owner_sql, lease_sql) =
            (pool.clone(), Arc::clone(&owner_sql), Arc::clone(&lease_sql));
        Box::pin(async move {
            let owner = format!("floor-{}", args.partition);
            let expires = now_ms() + LEASE_MICROS / 1_000;
            let mut tx = pool.begin().await?;
            sqlx::query(sqlx::AssertSqlSafe(owner_sql))
                .bind(&*args.group)
                .bind(&*args.subscription)
                .bind(&owner)
                .bind(expires)
                .execute(&mut *tx)
                .await?;
            sqlx::query(sqlx::AssertSqlSafe(lease_sql))
                .bind(&*args.group)
                .bind(&*args.subscription)
                .bind(i64::from(args.partition))
                .bind(&owner)
                .bind(expires)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(())
        })
    })
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}
