//! [`PostgresSource`]: its construction, options and the [`Source`] operations.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use checkpoint_core::backoff::Backoff;
use checkpoint_core::source::{Entry, Page, Source, SourceError};
use sqlx::{PgPool, Row};
use tokio::sync::OnceCell;

use crate::error::{backend, within};
use crate::layout::Layout;
use crate::listener::Wakeups;
use crate::position;
use crate::schema::{self, Verified};
use crate::statements::{Statements, planned_each_time, sql};

/// How long an operation may take unless [`PostgresSource::with_timeout`] says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How often [`Source::wait`] reads again when it cannot be woken (no notification connection
/// or no trigger), unless [`PostgresSource::with_poll_interval`] says otherwise.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(500);

/// The longest pause of [`Source::wait`] between two reads while committed entries wait for an
/// older transaction to end (no notification says when that happens).
const MAX_HORIZON_PAUSE: Duration = Duration::from_millis(50);

/// How many of [`Source::wait`]'s pauses behind an older transaction a notification of any
/// partition may cut short (after that, only this partition's notifications and the pauses
/// wake it): enough for the transactions of concurrent writers, which end within a commit's
/// time (the first four pauses add up to at most 15 ms), and a bound on the reads a long
/// transaction causes while others write.
const HORIZON_ANY_WAKES: u32 = 4;

/// The pauses of [`Source::wait`] between two reads while committed entries wait for an older
/// transaction to end: from 1 ms doubling to [`MAX_HORIZON_PAUSE`], with equal jitter. The
/// waiters behind one long transaction (every partition's, every process's) poll together; the
/// jitter keeps their reads from landing on the server at the same instants, and equal jitter
/// (at least half the ceiling) keeps their rate close to the schedule rather than adding reads.
/// No pause exceeds its ceiling, so a wait ends no later than it did without jitter.
fn horizon_backoff() -> Backoff {
    Backoff::new(Duration::from_millis(1), MAX_HORIZON_PAUSE)
}

/// A [`Source`] over an event table of the application's, read in the writing transactions'
/// order (see the crate doc for the design and why it never skips a committed entry).
///
/// Cloning is cheap and shares the pool, the setup check and the notification connection.
#[derive(Debug, Clone)]
pub struct PostgresSource {
    pool: PgPool,
    /// The partition count as last known: the count given, raised to the stored one by the
    /// setup check, `discover_partitions` and `grow_to`; shared by clones, never lowered.
    partitions: Arc<AtomicU32>,
    layout: Layout,
    statements: Statements,
    timeout: Option<Duration>,
    poll_interval: Duration,
    verified: Arc<OnceCell<Verified>>,
    wakeups: Arc<OnceCell<Wakeups>>,
    cursors: Arc<Mutex<Cursors>>,
}

/// Where recent reads stopped: (partition, `next`) → the sequence value of the last entry
/// returned, when `next` points into that entry's transaction. A read from such a `next` (what
/// a reader that goes on does) seeks past that entry instead of skipping the transaction's
/// first entries one by one, which would make reading a large transaction quadratic. Positions
/// are stable, so an entry is never stale; the map is only emptied when it grows large.
type Cursors = HashMap<(u32, u64), i64>;

/// How many cursors a source keeps before it forgets them all.
const MAX_CURSORS: usize = 4096;

impl PostgresSource {
    /// A source of `partitions` partitions over the table [`DEFAULT_TABLE`](crate::DEFAULT_TABLE)
    /// of `pool`'s database. Nothing is sent until the first operation, which checks the table
    /// once (see [`verify`](Self::verify)).
    pub fn new(pool: PgPool, partitions: u32) -> Self {
        let layout = Layout::default();
        Self {
            pool,
            partitions: Arc::new(AtomicU32::new(partitions)),
            statements: Statements::for_layout(&layout),
            layout,
            timeout: Some(DEFAULT_TIMEOUT),
            poll_interval: DEFAULT_POLL_INTERVAL,
            verified: Arc::default(),
            wakeups: Arc::default(),
            cursors: Arc::default(),
        }
    }

    fn with_layout(mut self, layout: Layout) -> Self {
        self.statements = Statements::for_layout(&layout);
        self.layout = layout;
        self.verified = Arc::default();
        self.wakeups = Arc::default();
        self.cursors = Arc::default();
        self
    }

    /// Uses the table `name` (`table` or `schema.table`). Each part must match
    /// `[A-Za-z_][A-Za-z0-9_]*`; the table part has at most 56 bytes, so that the names beside
    /// it (`{table}_source`, `{table}_notify`, `{table}_limit`) fit PostgreSQL's 63.
    ///
    /// # Errors
    ///
    /// [`SourceError::InvalidInput`] for any other name.
    pub fn with_table(self, name: &str) -> Result<Self, SourceError> {
        let layout = self.layout.clone().with_table(name)?;
        Ok(self.with_layout(layout))
    }

    /// Uses the integer column `name` as the partition, instead of `partition`.
    ///
    /// # Errors
    ///
    /// [`SourceError::InvalidInput`] for a name that is not a plain identifier.
    pub fn with_partition_column(self, name: &str) -> Result<Self, SourceError> {
        let layout = self.layout.clone().with_partition_column(name)?;
        Ok(self.with_layout(layout))
    }

    /// Uses the integer column `name`, filled from a sequence at insert, as the order of the
    /// entries within one transaction, instead of `seq` (for example an existing `id bigserial`).
    ///
    /// # Errors
    ///
    /// [`SourceError::InvalidInput`] for a name that is not a plain identifier.
    pub fn with_sequence_column(self, name: &str) -> Result<Self, SourceError> {
        let layout = self.layout.clone().with_sequence_column(name)?;
        Ok(self.with_layout(layout))
    }

    /// Fails an operation that takes longer than `timeout` (a pooled connection's wait
    /// included) with [`SourceError::Timeout`]; `None` lets it take as long as the pool and the
    /// server make it. [`Source::wait`] bounds each of its reads, not the wait itself.
    pub fn with_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self
    }

    /// How often [`Source::wait`] reads again when no notification can wake it (the
    /// notification connection is down, or the table has no trigger). At least 1 ms.
    pub fn with_poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval.max(Duration::from_millis(1));
        self
    }

    /// The pool the source reads through.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Creates the table, its read index, the `{table}_source` table with the partition count,
    /// the notification trigger and the trigger that refuses a transaction of more than 2^20
    /// entries in a partition, whichever are missing (see the crate doc's schema), then checks
    /// them as [`verify`](Self::verify) does. Idempotent, safe from many processes.
    ///
    /// # Errors
    ///
    /// [`SourceError::Setup`] when a table of that name exists but does not fit (another
    /// partition count, a column missing or of another type; without `tx`, naming
    /// [`existing_table_statements`](Self::existing_table_statements)), and then nothing is
    /// created; [`SourceError::Backend`] when the server refuses (for example for lack of
    /// privileges).
    pub async fn migrate(&self) -> Result<(), SourceError> {
        let verified = within(
            "migrate",
            self.timeout,
            schema::migrate(&self.pool, &self.layout, self.count()),
        )
        .await?;
        self.raise_count(verified.partitions);
        let _ = self.verified.set(verified);
        Ok(())
    }

    /// The statements that prepare an existing event table of this source's name for it, to
    /// run in one transaction before [`migrate`](Self::migrate) (which then adds the index,
    /// the partition count and the triggers): the `tx` column, filled for the rows already
    /// there so that they keep their sequence order and come before every later entry, then
    /// given its default; `key` and `appended_at` when missing. The crate doc shows them.
    pub fn existing_table_statements(&self) -> Vec<String> {
        schema::existing_table(&self.layout)
    }

    /// Checks that the table exists with the columns a read needs, of the right types, that
    /// `tx` defaults to `pg_current_xact_id()`, and that the stored partition count is this
    /// source's. Every operation runs it once before its first query; a failed check is run
    /// again by the next operation.
    ///
    /// # Errors
    ///
    /// [`SourceError::Setup`] naming what is wrong and what to do; nothing is read.
    pub async fn verify(&self) -> Result<(), SourceError> {
        self.ready().await.map(|_| ())
    }

    pub(crate) async fn ready(&self) -> Result<Verified, SourceError> {
        let verified = self
            .verified
            .get_or_try_init(|| {
                within(
                    "verify",
                    self.timeout,
                    schema::verify(&self.pool, &self.layout, self.count()),
                )
            })
            .await
            .copied()?;
        self.raise_count(verified.partitions);
        Ok(verified)
    }

    /// The partition count as last known.
    pub(crate) fn count(&self) -> u32 {
        self.partitions.load(Ordering::Acquire)
    }

    /// Raises the partition count known to `count` (never lowers it).
    pub(crate) fn raise_count(&self, count: u32) {
        self.partitions.fetch_max(count, Ordering::AcqRel);
    }

    pub(crate) fn layout(&self) -> &Layout {
        &self.layout
    }

    pub(crate) fn statements(&self) -> &Statements {
        &self.statements
    }

    pub(crate) fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    async fn fetch_page(&self, partition: u32, from: u64, max: usize) -> Result<Page, SourceError> {
        let (xid, skip) = position::decode(from);
        let limit = i64::try_from(max).unwrap_or(i64::MAX);
        let cursor = self.cursor(partition, from);
        // From a transaction's first entry, or from where a read of this source stopped: one
        // seek. Only a read from inside a transaction that this source did not stop at (a
        // checkpoint stored by another process) skips the transaction's first entries.
        let (statement, third) = match (skip, cursor) {
            (0, _) => (Ok(&self.statements.read_after), i64::MIN),
            (_, Some(seq)) => (Ok(&self.statements.read_after), seq),
            (_, None) => (Err(&self.statements.read), as_i64(skip)),
        };
        let rows = query(statement)
            .bind(i64::from(partition))
            .bind(as_i64(xid))
            .bind(third)
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .map_err(|error| backend("read", error))?;
        let mut entries = Vec::with_capacity(rows.len());
        // (transaction, index of its next entry, sequence value): rows of the transaction
        // `from` points into start at `skip`, every later one at its first entry.
        let mut current: Option<(u64, u64, i64)> = None;
        for row in rows {
            let tx = as_u64(row.try_get::<i64, _>(0).map_err(|e| backend("read", e))?);
            let seq: i64 = row.try_get(1).map_err(|e| backend("read", e))?;
            let index = match current {
                Some((last, next, _)) if last == tx => next,
                _ if tx == xid => skip,
                _ => 0,
            };
            if index >= position::MAX_ENTRIES_PER_TRANSACTION {
                return Err(schema::too_many_entries(&self.layout, partition, tx));
            }
            current = Some((tx, index + 1, seq));
            let at: Option<i64> = row.try_get(4).map_err(|e| backend("read", e))?;
            entries.push(Entry {
                position: position::encode(tx, index)?,
                key: row.try_get(2).map_err(|e| backend("read", e))?,
                payload: row.try_get(3).map_err(|e| backend("read", e))?,
                appended_at: at.and_then(micros_to_time),
            });
        }
        let next = entries.last().map_or(from, |last| last.position + 1);
        if let Some((tx, after, seq)) = current {
            // A page that ends at the last entry a position can number in a transaction goes on
            // from the next transaction: were there more, they would be skipped for good. So
            // such a page fails as a read that reaches the next entry does (only such a
            // transaction's last page pays for this seek).
            if after == position::MAX_ENTRIES_PER_TRANSACTION
                && self.more_in_transaction(partition, tx, seq).await?
            {
                return Err(schema::too_many_entries(&self.layout, partition, tx));
            }
            self.remember(partition, next, tx, seq);
        }
        Ok(Page { entries, next })
    }

    /// Whether transaction `tx`, which has ended, wrote another entry to `partition` after the
    /// one with sequence value `seq`.
    async fn more_in_transaction(
        &self,
        partition: u32,
        tx: u64,
        seq: i64,
    ) -> Result<bool, SourceError> {
        sqlx::query_scalar(sql(&self.statements.more_in_transaction))
            .bind(i64::from(partition))
            .bind(as_i64(tx))
            .bind(seq)
            .fetch_one(&self.pool)
            .await
            .map_err(|error| backend("read", error))
    }

    fn cursor(&self, partition: u32, from: u64) -> Option<i64> {
        let cursors = self.cursors.lock().unwrap_or_else(PoisonError::into_inner);
        cursors.get(&(partition, from)).copied()
    }

    /// Remembers that `next` follows the entry of transaction `tx` with sequence value `seq`,
    /// when `next` is in that transaction (else a read from it starts at a transaction's first
    /// entry and needs no cursor).
    fn remember(&self, partition: u32, next: u64, tx: u64, seq: i64) {
        if position::decode(next).0 != tx {
            return;
        }
        let mut cursors = self.cursors.lock().unwrap_or_else(PoisonError::into_inner);
        if cursors.len() >= MAX_CURSORS {
            cursors.clear();
        }
        cursors.insert((partition, next), seq);
    }

    async fn probe(&self, partition: u32, from: u64) -> Result<(bool, bool), SourceError> {
        let (xid, skip) = position::decode(from);
        let (statement, third) = match (skip, self.cursor(partition, from)) {
            (0, _) => (Ok(&self.statements.probe_after), i64::MIN),
            (_, Some(seq)) => (Ok(&self.statements.probe_after), seq),
            (_, None) => (Err(&self.statements.probe), as_i64(skip)),
        };
        let request = async {
            let row = query(statement)
                .bind(i64::from(partition))
                .bind(as_i64(xid))
                .bind(third)
                .fetch_one(&self.pool)
                .await
                .map_err(|error| backend("wait", error))?;
            let readable = row.try_get(0).map_err(|error| backend("wait", error))?;
            let pending = row.try_get(1).map_err(|error| backend("wait", error))?;
            Ok((readable, pending))
        };
        within("wait", self.timeout, request).await
    }

    async fn wakeups(&self) -> &Wakeups {
        self.wakeups
            .get_or_init(|| {
                Wakeups::start(
                    &self.pool,
                    self.layout.channel(),
                    self.timeout.unwrap_or(DEFAULT_TIMEOUT),
                )
            })
            .await
    }
}

/// `Ok`: a statement prepared once per connection; `Err`: one planned for its parameters at
/// each run (see [`planned_each_time`]).
fn query(
    statement: Result<&Arc<str>, &Arc<str>>,
) -> sqlx::query::Query<'static, sqlx::Postgres, sqlx::postgres::PgArguments> {
    match statement {
        Ok(statement) => sqlx::query(sql(statement)),
        Err(statement) => planned_each_time(statement),
    }
}

/// Transaction ids and indexes are below 2^63 (xid8 values are), so they fit an `int8`.
fn as_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

pub(crate) fn as_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn micros_to_time(micros: i64) -> Option<SystemTime> {
    let micros = u64::try_from(micros).ok()?;
    UNIX_EPOCH.checked_add(Duration::from_micros(micros))
}

#[async_trait]
impl Source for PostgresSource {
    fn partitions(&self) -> u32 {
        self.count()
    }

    /// One read of `{table}_source`'s count (see [`PostgresSource::grow_to`]).
    async fn discover_partitions(&self) -> Result<u32, SourceError> {
        self.refresh_partitions().await
    }

    async fn read(&self, partition: u32, from: u64, max: usize) -> Result<Page, SourceError> {
        SourceError::check_read(partition, self.count(), from, max)?;
        self.ready().await?;
        within("read", self.timeout, self.fetch_page(partition, from, max)).await
    }

    async fn wait(&self, partition: u32, from: u64) -> Result<(), SourceError> {
        SourceError::check_partition(partition, self.count())?;
        SourceError::check_from(from)?;
        let verified = self.ready().await?;
        let wakeups = self.wakeups().await;
        let mut woken = wakeups.subscribe(partition);
        let mut any = wakeups.subscribe_any();
        let horizon_backoff = horizon_backoff();
        let mut horizon_pauses = 0;
        loop {
            woken.borrow_and_update();
            any.borrow_and_update();
            let (readable, waiting_for_horizon) = self.probe(partition, from).await?;
            if readable {
                return Ok(());
            }
            // Committed entries behind an older transaction: no notification of this
            // partition tells when it ends (it may write elsewhere, or nothing), so read again
            // soon, or at the table's next notification of any partition, whose transaction
            // has ended (often the very one the entries wait for, under concurrent writers);
            // the latter only for the first pauses, so that behind a long transaction busy
            // writers of other partitions do not make every waiter read at each commit.
            if waiting_for_horizon {
                let pause = horizon_backoff.delay(horizon_pauses);
                horizon_pauses += 1;
                let any_wakes = horizon_pauses <= HORIZON_ANY_WAKES;
                tokio::select! {
                    _ = woken.changed() => {}
                    _ = any.changed(), if any_wakes => {}
                    () = tokio::time::sleep(pause) => {}
                }
                continue;
            }
            let pause = if verified.notifies && wakeups.listening() {
                // A safety net only: the notification wakes the waiter first.
                self.poll_interval * 20
            } else {
                self.poll_interval
            };
            tokio::select! {
                _ = woken.changed() => {}
                () = tokio::time::sleep(pause) => {}
            }
        }
    }

    async fn head(&self, partition: u32) -> Result<Option<u64>, SourceError> {
        self.read_head(partition).await
    }

    /// One statement for every partition asked that the source has, however many (one round
    /// trip once the statement is prepared on the connection), within the source's timeout:
    /// each answer is exactly what [`head`](Source::head) returns, and all come from one
    /// snapshot, so under one horizon: **atomic across partitions** (a transaction that wrote
    /// to several partitions is in all of their heads or in none). The count is checked
    /// against the stored one first, as every operation does, so partitions a growth added are
    /// asked too.
    async fn heads(&self, partitions: &[u32]) -> Result<Vec<Option<u64>>, SourceError> {
        self.read_heads(partitions).await
    }
}
