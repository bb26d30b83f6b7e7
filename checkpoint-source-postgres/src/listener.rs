//! Waking readers: one LISTEN connection per source, in a task of its own.
//!
//! The trigger that [`migrate`](crate::PostgresSource::migrate) creates sends `NOTIFY` with the
//! partition of every insert; PostgreSQL delivers it when the writer commits. Each partition
//! has a counter that the task bumps per notification; a waiter takes the counter before it
//! checks the table and waits for a change after, so a commit between the check and the wait
//! is never missed.
//!
//! A notification can be lost only while the connection is down. Whenever the task has
//! (re)connected and issued `LISTEN`, it bumps every partition, so every waiter checks the
//! table again by reading: a commit sent while the connection was down is found that way.
//! While it is down, waiters poll at the source's interval.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use checkpoint_core::backoff::{Backoff, Jitter};
use sqlx::PgPool;
use sqlx::postgres::{PgListener, PgPoolOptions};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The application name of the notification connection, so an operator (or a test) can find it
/// in `pg_stat_activity`.
pub const LISTENER_APPLICATION_NAME: &str = "checkpoint-source-postgres listener";

/// The longest pause between two attempts to reconnect.
const MAX_RECONNECT_DELAY: Duration = Duration::from_secs(2);

/// The pauses between two attempts to reconnect: from 50 ms doubling to
/// [`MAX_RECONNECT_DELAY`], with full jitter. A server restart drops the notification
/// connections of every process at once; drawn anywhere under the ceiling, their reconnects
/// spread out instead of arriving together at each step. Readers poll meanwhile, so a pause
/// shorter than the schedule costs nothing but an early attempt.
fn reconnect_backoff() -> Backoff {
    Backoff::new(Duration::from_millis(50), MAX_RECONNECT_DELAY).with_jitter(Jitter::Full)
}

/// The counters the task bumps, and whether it is listening now.
#[derive(Debug)]
struct Signals {
    /// One counter per partition a waiter subscribed to, made at its first subscription: the
    /// partitions may grow while the source runs. A notification of a partition nobody waits
    /// on bumps nothing.
    partitions: Mutex<BTreeMap<u32, watch::Sender<u64>>>,
    /// Bumped at every notification, whatever its partition: a transaction ended, so the
    /// horizon may have moved for a waiter whose entries wait behind an older transaction.
    any: watch::Sender<u64>,
    listening: watch::Sender<bool>,
}

impl Signals {
    fn partitions(&self) -> MutexGuard<'_, BTreeMap<u32, watch::Sender<u64>>> {
        // Every change is one insert or one counter bump: a poisoned lock holds valid counters.
        self.partitions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn bump(&self, partition: u32) {
        self.any.send_modify(|count| *count = count.wrapping_add(1));
        if let Some(sender) = self.partitions().get(&partition) {
            sender.send_modify(|count| *count = count.wrapping_add(1));
        }
    }

    fn bump_all(&self) {
        self.any.send_modify(|count| *count = count.wrapping_add(1));
        for sender in self.partitions().values() {
            sender.send_modify(|count| *count = count.wrapping_add(1));
        }
    }
}

/// The wake-ups of one source; dropping it stops the task.
#[derive(Debug)]
pub(crate) struct Wakeups {
    signals: Arc<Signals>,
    task: JoinHandle<()>,
}

impl Drop for Wakeups {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Wakeups {
    /// Starts the task on its own connection (the pool's options with its own application
    /// name, outside the pool, so it never holds one of the application's connections) and
    /// waits until its first attempt to listen has succeeded or failed, at most `first`.
    pub(crate) async fn start(pool: &PgPool, channel: String, first: Duration) -> Self {
        let signals = Arc::new(Signals {
            partitions: Mutex::new(BTreeMap::new()),
            any: watch::channel(0).0,
            listening: watch::channel(false).0,
        });
        let options = (*pool.connect_options())
            .clone()
            .application_name(LISTENER_APPLICATION_NAME);
        let attempted = watch::channel(false);
        let task = tokio::spawn(listen(options, channel, Arc::clone(&signals), attempted.0));
        let mut attempted = attempted.1;
        let _ = tokio::time::timeout(first, attempted.wait_for(|done| *done)).await;
        Self { signals, task }
    }

    /// A receiver of `partition`'s counter (made now if it is the first), with its current
    /// value seen. The caller checked the partition against the source's count.
    pub(crate) fn subscribe(&self, partition: u32) -> watch::Receiver<u64> {
        let mut receiver = self
            .signals
            .partitions()
            .entry(partition)
            .or_insert_with(|| watch::channel(0).0)
            .subscribe();
        receiver.borrow_and_update();
        receiver
    }

    /// A receiver of the counter of every notification, with its current value seen.
    pub(crate) fn subscribe_any(&self) -> watch::Receiver<u64> {
        let mut receiver = self.signals.any.subscribe();
        receiver.borrow_and_update();
        receiver
    }

    /// Whether the task is listening now (else waiters poll).
    pub(crate) fn listening(&self) -> bool {
        *self.signals.listening.borrow()
    }
}

/// The task: listen, bump counters, reconnect after a failure with a growing random pause
/// ([`reconnect_backoff`]).
async fn listen(
    options: sqlx::postgres::PgConnectOptions,
    channel: String,
    signals: Arc<Signals>,
    attempted: watch::Sender<bool>,
) {
    let backoff = reconnect_backoff();
    // Failed attempts since the last time the task listened.
    let mut failures = 0;
    loop {
        // A pool of one connection: PgListener reconnects through it after a lost connection.
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_lazy_with(options.clone());
        match PgListener::connect_with(&pool).await {
            Ok(mut listener) => match listener.listen(&channel).await {
                Ok(()) => {
                    failures = 0;
                    signals.listening.send_replace(true);
                    // Anything committed while nobody listened is found by reading again.
                    signals.bump_all();
                    attempted.send_replace(true);
                    receive(&mut listener, &signals).await;
                }
                Err(error) => tracing::warn!(%error, "LISTEN failed; readers poll meanwhile"),
            },
            Err(error) => {
                tracing::warn!(%error, "cannot connect to listen; readers poll meanwhile")
            }
        }
        signals.listening.send_replace(false);
        signals.bump_all();
        attempted.send_replace(true);
        pool.close().await;
        tokio::time::sleep(backoff.delay(failures)).await;
        failures += 1;
    }
}

/// Bumps counters until the connection fails for good.
async fn receive(listener: &mut PgListener, signals: &Signals) {
    loop {
        match listener.try_recv().await {
            Ok(Some(notification)) => match notification.payload().parse::<u32>() {
                Ok(partition) => signals.bump(partition),
                Err(_) => signals.bump_all(),
            },
            // The connection was lost and sqlx listens again on a new one: what was sent in
            // between is lost, so every waiter reads again.
            Ok(None) => signals.bump_all(),
            Err(error) => {
                tracing::warn!(%error, "the notification connection failed; readers poll meanwhile");
                return;
            }
        }
    }
}
