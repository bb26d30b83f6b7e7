//! What the PostgreSQL and SQLite subjects share: the same requests through sqlx on either
//! pool (the floor, the store's own upsert and listing sent directly, and the hand-written
//! read-compare-write save), with only the SQL text differing.

use std::sync::Arc;

use sqlx::{AssertSqlSafe, Database, Encode, Executor, FromRow, IntoArguments, Pool, Type};

use crate::subject::{BenchError, BenchStore, ListFn, SaveArgs, SaveFn, Subject, UnitFn};

/// The statements of a hand-written save: open a write transaction, read the position under
/// it, compare in the client, then insert or update, and commit. `$1`…`$4` (or `?1`…`?4`) are
/// the group, the subscription, the partition and the position.
pub struct HandWritten {
    /// The statement that opens the transaction.
    pub begin: &'static str,
    /// The stored position of the key, if any.
    pub select: &'static str,
    /// A new row.
    pub insert: &'static str,
    /// A position moved forward.
    pub update: &'static str,
}

/// What a subject sends besides the store, on the store's own pool.
pub struct Requests {
    /// The store's save statement, rendered for the bench's table.
    pub save: Arc<str>,
    /// The store's list statement, rendered for the bench's table.
    pub list: Arc<str>,
    /// The cheapest durable write, where the subject has one (see [`Subject::commit_floor`]).
    pub commit_floor: Option<&'static str>,
    /// The hand-written alternative to the store's save.
    pub hand_written: HandWritten,
}

/// The subject of a SQL store: the store, and the same pool running `SELECT 1`, `requests`'
/// commit floor, the store's own upsert and listing, and the hand-written save.
pub fn subject<DB>(pool: Pool<DB>, store: Arc<dyn BenchStore>, requests: Requests) -> Subject
where
    DB: Database,
    for<'c> &'c Pool<DB>: Executor<'c, Database = DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'t> &'t str: Encode<'t, DB> + Type<DB>,
    for<'t> i64: Encode<'t, DB> + Type<DB>,
    (i64,): for<'r> FromRow<'r, DB::Row>,
    (String, i64, i64): for<'r> FromRow<'r, DB::Row>,
{
    let floor = statement(&pool, "SELECT 1");
    let commit_floor = requests.commit_floor.map(|sql| statement(&pool, sql));
    let raw_save = raw_save(&pool, requests.save);
    let hand_save = hand_save(&pool, requests.hand_written);
    let raw_list = raw_list(pool, requests.list);
    Subject {
        store,
        floor,
        commit_floor,
        raw_save,
        hand_save,
        raw_list,
        raw_save_all: None,
        script_save_all: None,
        acquire_floor: None,
    }
}

/// One fixed statement on the pool, its result ignored: the floors.
fn statement<DB>(pool: &Pool<DB>, sql: &'static str) -> UnitFn
where
    DB: Database,
    for<'c> &'c Pool<DB>: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
{
    let pool = pool.clone();
    Arc::new(move || {
        let pool = pool.clone();
        Box::pin(async move {
            sqlx::query(sql).execute(&pool).await?;
            Ok(())
        })
    })
}

/// The store's own save statement, `sql`, sent on the pool without the store.
fn raw_save<DB>(pool: &Pool<DB>, sql: Arc<str>) -> SaveFn
where
    DB: Database,
    for<'c> &'c Pool<DB>: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'t> &'t str: Encode<'t, DB> + Type<DB>,
    for<'t> i64: Encode<'t, DB> + Type<DB>,
{
    let pool = pool.clone();
    Arc::new(move |args: SaveArgs| {
        let (pool, sql) = (pool.clone(), Arc::clone(&sql));
        Box::pin(async move {
            sqlx::query(AssertSqlSafe(sql))
                .bind(&*args.group)
                .bind(&*args.subscription)
                .bind(i64::from(args.partition))
                .bind(i64::try_from(args.position)?)
                .execute(&pool)
                .await?;
            Ok(())
        })
    })
}

/// The hand-written save of [`hand_written_save`] on the pool.
fn hand_save<DB>(pool: &Pool<DB>, hand: HandWritten) -> SaveFn
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'t> &'t str: Encode<'t, DB> + Type<DB>,
    for<'t> i64: Encode<'t, DB> + Type<DB>,
    (i64,): for<'r> FromRow<'r, DB::Row>,
{
    let (pool, hand) = (pool.clone(), Arc::new(hand));
    Arc::new(move |args: SaveArgs| {
        let (pool, hand) = (pool.clone(), Arc::clone(&hand));
        Box::pin(async move { hand_written_save(&pool, &hand, &args).await })
    })
}

/// What a user writes without the store's upsert: in one transaction, read the stored
/// position, compare in the client, then insert or move it forward (nothing when it is not
/// behind), and commit.
async fn hand_written_save<DB>(
    pool: &Pool<DB>,
    hand: &HandWritten,
    args: &SaveArgs,
) -> Result<(), BenchError>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'t> &'t str: Encode<'t, DB> + Type<DB>,
    for<'t> i64: Encode<'t, DB> + Type<DB>,
    (i64,): for<'r> FromRow<'r, DB::Row>,
{
    let position = i64::try_from(args.position)?;
    let partition = i64::from(args.partition);
    let mut transaction = pool.begin_with(hand.begin).await?;
    let stored: Option<i64> = sqlx::query_scalar(hand.select)
        .bind(&*args.group)
        .bind(&*args.subscription)
        .bind(partition)
        .fetch_optional(&mut *transaction)
        .await?;
    let write = match stored {
        None => Some(hand.insert),
        Some(stored) if stored < position => Some(hand.update),
        Some(_) => None,
    };
    if let Some(sql) = write {
        sqlx::query(sql)
            .bind(&*args.group)
            .bind(&*args.subscription)
            .bind(partition)
            .bind(position)
            .execute(&mut *transaction)
            .await?;
    }
    transaction.commit().await?;
    Ok(())
}

/// The store's own list statement, `sql`, on the pool without the store: the rows it read.
fn raw_list<DB>(pool: Pool<DB>, sql: Arc<str>) -> ListFn
where
    DB: Database,
    for<'c> &'c Pool<DB>: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'t> &'t str: Encode<'t, DB> + Type<DB>,
    (String, i64, i64): for<'r> FromRow<'r, DB::Row>,
{
    Arc::new(move |group: Arc<str>| {
        let (pool, sql) = (pool.clone(), Arc::clone(&sql));
        Box::pin(async move {
            let rows: Vec<(String, i64, i64)> = sqlx::query_as(AssertSqlSafe(sql))
                .bind(&*group)
                .fetch_all(&pool)
                .await?;
            Ok(rows.len())
        })
    })
}
