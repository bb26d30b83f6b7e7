//! A connection from the pool for one call (bounded by the store's timeout in the front, see
//! `Door::bound`): handed back to the pool when the request replies, closed when the call is
//! abandoned before (see [`Checkout`]); and the engine's reruns ([`Engine::again`]).

use std::future::Future;
use std::ops::{Deref, DerefMut};

use checkpoint_core::{Error, Operation};
use sqlx::pool::PoolConnection;
use sqlx::{Connection as _, Database};

use crate::engine::{Again, Engine};
use crate::store::SqlStore;

impl<E: Engine> SqlStore<E> {
    /// Runs `request` for one call of `operation` on a connection from the pool, and again as
    /// the engine's [`again`](Engine::again) says when it fails. The request hands the
    /// connection back with its reply (the type makes it: a request cannot forget), and it goes
    /// back to the pool; a call abandoned before the reply closes it instead (see
    /// [`Checkout`]).
    pub(crate) async fn run<T, R>(
        &self,
        operation: Operation,
        request: impl Fn(Checkout<E::Database>) -> R,
    ) -> Result<T, Error>
    where
        R: Future<Output = (Checkout<E::Database>, Result<T, Error>)>,
    {
        let mut connection = self.checkout(operation).await?;
        let mut failures = 0;
        loop {
            let (returned, reply) = request(connection).await;
            returned.release();
            let error = match reply {
                Ok(value) => return Ok(value),
                Err(error) => error,
            };
            connection = match E::again(operation, &error, failures) {
                None => return Err(error),
                Some(Again::AfterPause(pause)) => {
                    tokio::time::sleep(pause).await;
                    self.checkout(operation).await?
                }
                Some(Again::OnLiveConnection) => self.live_connection(operation, error).await?,
            };
            failures += 1;
        }
    }

    /// A connection from the pool, closed unless handed back (see [`Checkout`]).
    async fn checkout(&self, operation: Operation) -> Result<Checkout<E::Database>, Error> {
        let connection = self
            .pool
            .acquire()
            .await
            .map_err(|error| E::error(operation, error))?;
        Ok(Checkout(Some(connection)))
    }

    /// A pooled connection that answers a ping, after `lost` (the error of a call whose
    /// connection had died): every dead idle connection met on the way is closed, so the pool
    /// replaces it. Returns `lost` when no live connection can be had.
    async fn live_connection(
        &self,
        operation: Operation,
        lost: Error,
    ) -> Result<Checkout<E::Database>, Error> {
        tracing::debug!(error = ?lost, "connection lost, trying once more on a live one");
        // Each pass closes one dead connection; the pool never holds more than its size.
        for _ in 0..=self.pool.size() {
            let mut connection = self.checkout(operation).await?;
            if connection.ping().await.is_ok() {
                return Ok(connection);
            }
            connection.close().await;
        }
        Err(lost)
    }
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
/// is free again at once.
pub(crate) struct Checkout<DB: Database>(Option<PoolConnection<DB>>);

impl<DB: Database> Checkout<DB> {
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

impl<DB: Database> Deref for Checkout<DB> {
    type Target = DB::Connection;

    fn deref(&self) -> &DB::Connection {
        match &self.0 {
            Some(connection) => connection,
            None => unreachable!("{RELEASED}"),
        }
    }
}

impl<DB: Database> DerefMut for Checkout<DB> {
    fn deref_mut(&mut self) -> &mut DB::Connection {
        match &mut self.0 {
            Some(connection) => connection,
            None => unreachable!("{RELEASED}"),
        }
    }
}

/// Why a [`Checkout`] always holds its connection while it can be used.
const RELEASED: &str =
    "only `release` and `close`, which consume the checkout, take the connection";

impl<DB: Database> Drop for Checkout<DB> {
    fn drop(&mut self) {
        if let Some(mut abandoned) = self.0.take() {
            tracing::debug!(
                "a call was abandoned in the middle of its request: closing its connection"
            );
            abandoned.close_on_drop();
        }
    }
}
