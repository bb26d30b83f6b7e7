//! The store's connection, shared by its clones, and given up after a call was abandoned on it
//! (timed out, or dropped by its caller): the next call makes a new one through its [`Renew`],
//! which `connect.rs` builds for a store that connected itself. A store made with `new` keeps
//! the caller's connection.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use checkpoint_core::{Error, Operation};
use redis::RedisError;

use crate::error::backend;

/// Makes a new connection in place of one on which a call was abandoned.
pub(crate) type Renew<C> =
    Box<dyn Fn() -> Pin<Box<dyn Future<Output = Result<C, RedisError>> + Send>> + Send + Sync>;

/// The store's connection, shared by its clones, and, for a store that connected itself, how
/// to replace it after a timeout.
///
/// A call that times out may have met a connection whose peer vanished without closing it
/// (a cut network path, a frozen or replaced host): nothing will ever arrive on it, and the
/// client libraries keep it, since no error says it is gone. So a timeout marks the connection
/// it happened on stale, and the next call makes a new one (once for all the calls that find
/// it stale at the same time) before it sends anything. Calls still running on the old
/// connection finish there; it closes when the last of them lets go of it.
pub(crate) struct Connection<C> {
    shared: Arc<Shared<C>>,
}

struct Shared<C> {
    current: Mutex<Current<C>>,
    /// `None` for the caller's own connection
    /// ([`RedisCheckpointStore::new`](crate::RedisCheckpointStore::new)), which the store
    /// cannot rebuild.
    renew: Option<Renew<C>>,
    /// Held while a new connection is made, so that concurrent calls make one, not one each.
    renewing: tokio::sync::Mutex<()>,
}

struct Current<C> {
    connection: C,
    /// Counts the connections made so far, so that a late timeout on a connection that was
    /// already replaced does not throw the new one away.
    generation: u64,
    /// A call was abandoned on this connection: the next call makes a new one.
    stale: bool,
}

impl<C> Clone for Connection<C> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<C> Connection<C> {
    /// The caller's connection, kept whatever happens on it.
    pub(crate) fn fixed(connection: C) -> Self {
        Self::with(connection, None)
    }

    /// A connection that `renew` replaces after a timeout.
    pub(crate) fn renewable(connection: C, renew: Renew<C>) -> Self {
        Self::with(connection, Some(renew))
    }

    fn with(connection: C, renew: Option<Renew<C>>) -> Self {
        Self {
            shared: Arc::new(Shared {
                current: Mutex::new(Current {
                    connection,
                    generation: 0,
                    stale: false,
                }),
                renew,
                renewing: tokio::sync::Mutex::new(()),
            }),
        }
    }
}

impl<C: Clone> Connection<C> {
    /// The connection in use now (a handle to it).
    pub(crate) fn current(&self) -> C {
        self.shared.current().connection.clone()
    }

    /// The connection for a call, and its generation for [`abandoned`](Self::abandoned): a
    /// new one first when a call was abandoned on the current one.
    ///
    /// # Errors
    ///
    /// The error of making the new connection, as `operation`'s. The connection stays stale,
    /// so the next call tries again.
    pub(crate) async fn checkout(&self, operation: Operation) -> Result<(C, u64), Error> {
        if let Some(ready) = self.shared.ready() {
            return Ok(ready);
        }
        let Some(renew) = &self.shared.renew else {
            // Only a renewable connection is ever marked stale.
            let current = self.shared.current();
            return Ok((current.connection.clone(), current.generation));
        };
        let _renewing = self.shared.renewing.lock().await;
        // Another call may have made the new connection while this one waited.
        if let Some(ready) = self.shared.ready() {
            return Ok(ready);
        }
        tracing::debug!("a call was abandoned on the connection: making a new one");
        let connection = renew().await.map_err(|e| backend(operation, e))?;
        let mut current = self.shared.current();
        current.connection = connection;
        current.generation += 1;
        current.stale = false;
        Ok((current.connection.clone(), current.generation))
    }

    /// A call on the connection of `generation` was abandoned: the next call makes a new one, if
    /// the store can, and if that connection is still the current one.
    pub(crate) fn abandoned(&self, generation: u64) {
        if self.shared.renew.is_none() {
            return;
        }
        let mut current = self.shared.current();
        if current.generation == generation {
            current.stale = true;
        }
    }
}

/// A call in flight on the connection of one generation: dropped before [`finished`]
/// (the call was abandoned in the middle of its request, by the store's timeout or by its
/// caller), it marks that connection stale, so the next call makes a new one: the peer may
/// have vanished without closing it, and no error will ever say so.
///
/// [`finished`]: InFlight::finished
pub(crate) struct InFlight<'a, C: Clone> {
    connection: &'a Connection<C>,
    generation: u64,
    finished: bool,
}

impl<'a, C: Clone> InFlight<'a, C> {
    pub(crate) fn new(connection: &'a Connection<C>, generation: u64) -> Self {
        Self {
            connection,
            generation,
            finished: false,
        }
    }

    /// The request replied (an error included): the connection stays as it is.
    pub(crate) fn finished(mut self) {
        self.finished = true;
    }
}

impl<C: Clone> Drop for InFlight<'_, C> {
    fn drop(&mut self) {
        if !self.finished {
            self.connection.abandoned(self.generation);
        }
    }
}

impl<C> Shared<C> {
    fn current(&self) -> std::sync::MutexGuard<'_, Current<C>> {
        // Nothing that can panic runs under the lock, but a poisoned one still holds a
        // consistent value.
        self.current.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<C: Clone> Shared<C> {
    /// The current connection and its generation, unless it is stale.
    fn ready(&self) -> Option<(C, u64)> {
        let current = self.current();
        (!current.stale).then(|| (current.connection.clone(), current.generation))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    use super::*;

    /// A connection that counts how many were made, each a little slow to make.
    fn counting() -> (Connection<u64>, Arc<AtomicU64>) {
        let made = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&made);
        let renew: Renew<u64> = Box::new(move || {
            let number = counter.fetch_add(1, Ordering::SeqCst) + 1;
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                Ok(number)
            })
        });
        (Connection::renewable(0, renew), made)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn calls_that_find_an_abandoned_connection_together_make_one_new_one() {
        let (connection, made) = counting();
        let (first, generation) = connection.checkout(Operation::Save).await.unwrap();
        assert_eq!((first, generation), (0, 0));
        // Without a timeout, the connection stays.
        assert_eq!(connection.checkout(Operation::Load).await.unwrap(), (0, 0));

        connection.abandoned(generation);
        let mut calls = tokio::task::JoinSet::new();
        for _ in 0..8 {
            let connection = connection.clone();
            calls.spawn(async move { connection.checkout(Operation::Load).await.unwrap() });
        }
        while let Some(checked_out) = calls.join_next().await {
            assert_eq!(checked_out.unwrap(), (1, 1));
        }
        assert_eq!(made.load(Ordering::SeqCst), 1);

        // A late timeout on the connection already replaced leaves the new one alone.
        connection.abandoned(0);
        assert_eq!(connection.checkout(Operation::Save).await.unwrap(), (1, 1));
        assert_eq!(made.load(Ordering::SeqCst), 1);
        assert_eq!(connection.current(), 1);
    }

    #[tokio::test]
    async fn the_callers_own_connection_is_kept_after_a_timeout() {
        let connection = Connection::fixed(7_u64);
        connection.abandoned(0);
        assert_eq!(connection.checkout(Operation::Save).await.unwrap(), (7, 0));
    }

    #[tokio::test]
    async fn a_failed_new_connection_is_tried_again_by_the_next_call() {
        let attempts = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&attempts);
        let renew: Renew<u64> = Box::new(move || {
            let attempt = counter.fetch_add(1, Ordering::SeqCst) + 1;
            Box::pin(async move {
                if attempt == 1 {
                    Err(RedisError::from(std::io::Error::from(
                        std::io::ErrorKind::ConnectionRefused,
                    )))
                } else {
                    Ok(attempt)
                }
            })
        });
        let connection = Connection::renewable(0, renew);
        connection.abandoned(0);
        let error = connection.checkout(Operation::Save).await.unwrap_err();
        assert!(error.is_retryable(), "{error:?}");
        assert_eq!(connection.checkout(Operation::Save).await.unwrap(), (2, 1));
    }
}
