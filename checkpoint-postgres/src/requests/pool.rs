//! A connection from the pool for one call (bounded by the store's timeout in the front, see
//! `Door::bound`): handed back to the pool when the request replies, closed when the call is abandoned before (see [`Checkout`]), and
//! a second attempt on a live connection for the idempotent requests whose first connection
//! had died.

use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::time::Duration;

use checkpoint_core::{Error, Operation};
use sqlx::Connection;
use sqlx::pool::{PoolConnection, PoolConnectionMetadata};
use sqlx::postgres::{PgConnection, PgPool, Postgres};

use crate::error::{Chain, backend, connection_lost};

/// A pooled connection idle for longer than this is pinged before use by a pool that
/// [`PostgresCheckpointStore::connect`](crate::PostgresCheckpointStore::connect) creates.
const IDLE_CHECK_AFTER: Duration = Duration::from_secs(5);

/// One call of `operation` on the store's pool (the front bounds it by the store's timeout).
pub(crate) struct Pooled<'a> {
    pub(crate) pool: &'a PgPool,
    pub(crate) operation: Operation,
}

impl Pooled<'_> {
    /// Runs `request` on a connection from the pool. The request hands the connection back with its reply (the type
    /// makes it: a request cannot forget), and it goes back to the pool; a call abandoned
    /// before the reply closes it instead (see [`Checkout`]).
    pub(crate) async fn run<T, R>(&self, request: impl Fn(Checkout) -> R) -> Result<T, Error>
    where
        R: Future<Output = (Checkout, Result<T, Error>)>,
    {
        let connection = self.checkout().await?;
        run_on(connection, &request).await
    }

    /// [`run`](Self::run), and when `request` fails because its pooled connection had died
    /// (the server restarted, or cut the connection while it sat idle), once more on a
    /// connection checked to be alive, so the first call after a restart does not fail for
    /// connections that were already gone. The store's timeout bounds both attempts together.
    ///
    /// Only for idempotent requests. `advance` is not retried: if the connection died after
    /// the server had committed it, a second attempt would report `Moved` for the caller's own
    /// advance.
    pub(crate) async fn run_once_more_if_lost<T, R>(
        &self,
        request: impl Fn(Checkout) -> R,
    ) -> Result<T, Error>
    where
        R: Future<Output = (Checkout, Result<T, Error>)>,
    {
        match self.run(&request).await {
            Err(error) if connection_lost(&error) => {
                let connection = self.live_connection(error).await?;
                run_on(connection, &request).await
            }
            result => result,
        }
    }

    /// A connection from the pool, closed unless handed back (see [`Checkout`]).
    async fn checkout(&self) -> Result<Checkout, Error> {
        let connection = self
            .pool
            .acquire()
            .await
            .map_err(|error| backend(self.operation, error))?;
        Ok(Checkout(Some(connection)))
    }

    /// A pooled connection that answers a ping, after `lost` (the error of a call whose
    /// connection had died): every dead idle connection met on the way is closed, so the pool
    /// replaces it. Returns `lost` when no live connection can be had.
    async fn live_connection(&self, lost: Error) -> Result<Checkout, Error> {
        tracing::debug!(error = %Chain(&lost), "connection lost, trying once more on a live one");
        // Each pass closes one dead connection; the pool never holds more than its size.
        for _ in 0..=self.pool.size() {
            let mut connection = self.checkout().await?;
            if connection.ping().await.is_ok() {
                return Ok(connection);
            }
            connection.close().await;
        }
        Err(lost)
    }
}

/// Runs `request` on `connection` and hands the connection back to the pool when the request
/// has replied.
async fn run_on<T, R>(connection: Checkout, request: impl Fn(Checkout) -> R) -> Result<T, Error>
where
    R: Future<Output = (Checkout, Result<T, Error>)>,
{
    let (connection, reply) = request(connection).await;
    connection.release();
    reply
}

/// A pooled connection while a request runs on it, lent to the request, which hands it back
/// with its reply.
///
/// When the call is abandoned before the request ends (its timeout), the connection is closed
/// rather than returned to the pool: it is in the middle of a statement, and may wait for ever
/// for the answer (a server that vanished without closing it, behind a cut network path or a
/// frozen host). sqlx pings a returned connection before it takes it back, and that ping
/// would wait with it, holding the connection's place in the pool for good: a long enough
/// outage would leave the pool with no place to open a new connection in. Closed, its place
/// is free again at once (sqlx sends `Terminate` and shuts the socket down, within 5 s).
pub(crate) struct Checkout(Option<PoolConnection<Postgres>>);

impl Checkout {
    /// The request on the connection has replied (an error included: sqlx checks the
    /// connection on its way back): the connection goes back to the pool.
    fn release(mut self) {
        drop(self.0.take());
    }

    /// Closes the connection now, so that the pool opens a new one in its place.
    async fn close(mut self) {
        if let Some(connection) = self.0.take() {
            connection.close().await.ok();
        }
    }
}

impl Deref for Checkout {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        match &self.0 {
            Some(connection) => connection,
            None => unreachable!("{RELEASED}"),
        }
    }
}

impl DerefMut for Checkout {
    fn deref_mut(&mut self) -> &mut PgConnection {
        match &mut self.0 {
            Some(connection) => connection,
            None => unreachable!("{RELEASED}"),
        }
    }
}

/// Why a [`Checkout`] always holds its connection while it can be used.
const RELEASED: &str =
    "only `release` and `close`, which consume the checkout, take the connection";

impl Drop for Checkout {
    fn drop(&mut self) {
        if let Some(mut abandoned) = self.0.take() {
            tracing::debug!(
                "a call was abandoned in the middle of its request: closing its connection"
            );
            abandoned.close_on_drop();
        }
    }
}

/// `before_acquire` hook of the pools
/// [`PostgresCheckpointStore::connect`](crate::PostgresCheckpointStore::connect) creates: pings
/// only a connection that has been idle for a while (see there).
pub(crate) fn ping_if_idle<'c>(
    connection: &'c mut PgConnection,
    metadata: PoolConnectionMetadata,
) -> Pin<Box<dyn Future<Output = Result<bool, sqlx::Error>> + Send + 'c>> {
    Box::pin(async move {
        if metadata.idle_for >= IDLE_CHECK_AFTER {
            connection.ping().await?;
        }
        Ok(true)
    })
}
