//! The raw bulk floor of `save_all`: the same rows written by one unconditional upsert (SQL)
//! or `HSET` (Redis), without the forward-only condition or the tombstone check, sent as the
//! store sends its batch. `save_all` ÷ this floor is what the store's guarantees cost a batch.
//! On Redis a second floor, the script floor, is the least any server-side conditional batch
//! does (a script that reads every field and writes them all back), so the page can say how
//! much of `save_all`'s cost is the scripting itself and how much the store's own checks.

use std::sync::Arc;

use checkpoint_core::Checkpoint;
use redis::aio::ConnectionManager;
use sqlx::{MySqlPool, PgPool, SqlitePool};

use crate::subject::{BenchError, BulkFn};

/// PostgreSQL: one `INSERT … ON CONFLICT DO UPDATE` over the same three arrays as the store's
/// `save_all`, in the same order, with no `WHERE` on the update and no tombstone check.
const POSTGRES_BULK: &str = "INSERT INTO checkpoint_bench AS t \
    (group_name, subscription, partition_id, position) \
    SELECT $1, b.subscription, b.partition_id, b.position \
    FROM unnest($2::text[], $3::bigint[], $4::bigint[]) \
        WITH ORDINALITY AS b (subscription, partition_id, position, ordinality) \
    ORDER BY b.ordinality \
    ON CONFLICT (group_name, subscription, partition_id) DO UPDATE \
        SET position = EXCLUDED.position, updated_at = now()";

/// SQLite: the store's `save_all` statement (one JSON array expanded by `json_each`) with no
/// `WHERE` on the update and no tombstone check. (`WHERE true` is SQLite's grammar: see the
/// store's statement.)
const SQLITE_BULK: &str = "INSERT INTO checkpoints \
    (group_name, subscription, partition_id, position) \
    SELECT ?1, entry.value ->> 0, entry.value ->> 1, entry.value ->> 2 \
    FROM json_each(?2) AS entry WHERE true \
    ON CONFLICT (group_name, subscription, partition_id) DO UPDATE \
    SET position = excluded.position, updated_at = excluded.updated_at";

/// MySQL: the store's `save_all` statement (one JSON array expanded by `JSON_TABLE`) with the
/// position written unconditionally and no tombstone check.
const MYSQL_BULK: &str = "INSERT INTO checkpoint_bench \
    (group_name, subscription, partition_id, position) \
    SELECT ?, b.s, b.p, b.pos \
    FROM JSON_TABLE(?, '$[*]' COLUMNS ( \
        ordinal FOR ORDINALITY, \
        s VARBINARY(512) PATH '$[0]', \
        p BIGINT PATH '$[1]', \
        pos BIGINT PATH '$[2]')) AS b \
    ORDER BY b.ordinal \
    ON DUPLICATE KEY UPDATE position = VALUES(position), updated_at = CURRENT_TIMESTAMP(6)";

/// The MySQL floor on `pool`.
pub fn mysql(pool: MySqlPool) -> BulkFn {
    Arc::new(move |group: Arc<str>, rows: Arc<Vec<Checkpoint>>| {
        let pool = pool.clone();
        Box::pin(async move {
            let json = json_rows(&rows)?;
            sqlx::query(MYSQL_BULK)
                .bind(&*group)
                .bind(json)
                .execute(&pool)
                .await?;
            Ok(())
        })
    })
}

/// The PostgreSQL floor on `pool`.
pub fn postgres(pool: PgPool) -> BulkFn {
    Arc::new(move |group: Arc<str>, rows: Arc<Vec<Checkpoint>>| {
        let pool = pool.clone();
        Box::pin(async move {
            let subscriptions: Vec<&str> = rows.iter().map(|c| c.subscription.as_str()).collect();
            let partitions: Vec<i64> = rows.iter().map(|c| i64::from(c.partition)).collect();
            let positions = rows
                .iter()
                .map(|c| i64::try_from(c.position))
                .collect::<Result<Vec<i64>, _>>()?;
            sqlx::query(POSTGRES_BULK)
                .bind(&*group)
                .bind(subscriptions)
                .bind(partitions)
                .bind(positions)
                .execute(&pool)
                .await?;
            Ok(())
        })
    })
}

/// The SQLite floor on `pool`.
pub fn sqlite(pool: SqlitePool) -> BulkFn {
    Arc::new(move |group: Arc<str>, rows: Arc<Vec<Checkpoint>>| {
        let pool = pool.clone();
        Box::pin(async move {
            let json = json_rows(&rows)?;
            sqlx::query(SQLITE_BULK)
                .bind(&*group)
                .bind(json)
                .execute(&pool)
                .await?;
            Ok(())
        })
    })
}

/// `[["subscription", partition, position], …]`. The bench's subscriptions are plain ASCII
/// names without quotes or backslashes; anything else is refused rather than escaped.
fn json_rows(rows: &[Checkpoint]) -> Result<String, BenchError> {
    let mut json = String::with_capacity(rows.len() * 32);
    json.push('[');
    for (i, row) in rows.iter().enumerate() {
        if row.subscription.contains(['"', '\\']) || !row.subscription.is_ascii() {
            return Err(format!(
                "the bulk floor takes plain names, not {:?}",
                row.subscription
            )
            .into());
        }
        if i > 0 {
            json.push(',');
        }
        json.push_str(&format!(
            "[\"{}\",{},{}]",
            row.subscription, row.partition, row.position
        ));
    }
    json.push(']');
    Ok(json)
}

/// The store's key of a group.
pub type GroupKey = Arc<dyn Fn(&str) -> Result<String, checkpoint_core::Error> + Send + Sync>;

/// Redis: one `HSET` of the same fields and decimal positions per chunk of `chunk` entries,
/// all chunks in one pipeline, as the store pipelines its `save_all` scripts. `group_key` is
/// the store's key of a group.
pub fn redis(manager: ConnectionManager, chunk: usize, group_key: GroupKey) -> BulkFn {
    Arc::new(move |group: Arc<str>, rows: Arc<Vec<Checkpoint>>| {
        let mut manager = manager.clone();
        let key = group_key(&group);
        Box::pin(async move {
            let key = key?;
            let mut pipeline = redis::pipe();
            for slice in rows.chunks(chunk) {
                let command = pipeline.cmd("HSET").arg(&key);
                for row in slice {
                    command
                        .arg(format!("{}:{}", row.partition, row.subscription))
                        .arg(row.position.to_string());
                }
                command.ignore();
            }
            pipeline.query_async::<()>(&mut manager).await?;
            Ok(())
        })
    })
}

/// The script floor on Redis: what every script that moves hash fields conditionally must do at
/// the least, one `HMGET` of the fields and one `HSET` of them all, with nothing checked or
/// compared. `ARGV` is the fields, then their positions, as the store's `save_all.lua` takes
/// them. Sent with `EVAL` (the server hashes these few bytes and runs its cached copy).
const REDIS_SCRIPT_FLOOR: &str = "local n = #ARGV / 2 \
    redis.call('HMGET', KEYS[1], unpack(ARGV, 1, n)) \
    local pairs = {} \
    for i = 1, n do pairs[2 * i - 1] = ARGV[i]; pairs[2 * i] = ARGV[n + i] end \
    redis.call('HSET', KEYS[1], unpack(pairs)) \
    return n";

/// Redis: the script floor (see [`REDIS_SCRIPT_FLOOR`]) per chunk of `chunk` entries, all
/// chunks in one pipeline, as the store sends its `save_all` scripts.
pub fn redis_script(manager: ConnectionManager, chunk: usize, group_key: GroupKey) -> BulkFn {
    Arc::new(move |group: Arc<str>, rows: Arc<Vec<Checkpoint>>| {
        let mut manager = manager.clone();
        let key = group_key(&group);
        Box::pin(async move {
            let key = key?;
            let mut pipeline = redis::pipe();
            for slice in rows.chunks(chunk) {
                let command = pipeline
                    .cmd("EVAL")
                    .arg(REDIS_SCRIPT_FLOOR)
                    .arg(1)
                    .arg(&key);
                for row in slice {
                    command.arg(format!("{}:{}", row.partition, row.subscription));
                }
                for row in slice {
                    command.arg(row.position.to_string());
                }
                command.ignore();
            }
            pipeline.query_async::<()>(&mut manager).await?;
            Ok(())
        })
    })
}
