//! Connecting: the constructors that take a URL or a client, the connection manager's
//! reconnect and timeout settings, how a new connection is made in place of one on which a
//! call timed out ([`Renew`]), TLS's crypto provider, and the endpoint a store shows in
//! `Debug` without credentials: everything that handles a URL, and so a password, is here.

use std::time::Duration;

use checkpoint_core::{Error, Operation};
use redis::aio::ConnectionManager;
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{IntoConnectionInfo, RedisError};

use crate::connection::{Connection, Renew};
use crate::error::backend;
use crate::{BACKEND, CONNECTION_TIMEOUT, RedisCheckpointStore};

/// How many times [`connect`](RedisCheckpointStore::connect)'s connection retries a failed
/// connection attempt (100 ms, then 200 ms later) before the call that needed it fails.
const CONNECTION_RETRIES: usize = 2;

/// Host and port of every URL, without user name, password or database.
fn redacted_endpoints<'a>(
    urls: impl IntoIterator<Item = &'a str>,
) -> Result<String, redis::RedisError> {
    let mut endpoints = Vec::new();
    for url in urls {
        endpoints.push(url.into_connection_info()?.addr().to_string());
    }
    Ok(endpoints.join(","))
}

impl RedisCheckpointStore<ConnectionManager> {
    /// Connects to the server at `url` (`redis://[user:password@]host:port[/db]`, or
    /// `rediss://` with the `tls-rustls` feature) through a [`ConnectionManager`], which
    /// reconnects by itself after a dropped connection or a server restart.
    ///
    /// The connection has no per-command timeout of its own, so that one timeout, the store's
    /// ([`DEFAULT_TIMEOUT`](checkpoint_core::DEFAULT_TIMEOUT) unless
    /// [`with_timeout`](Self::with_timeout) says otherwise), bounds each operation with its
    /// reconnects, `EVAL` fallback and `WAIT` included. Each connection attempt is bounded by
    /// [`CONNECTION_TIMEOUT`], and a failed one is retried twice, 100 ms and 200 ms later, so
    /// that `connect` fails within about 3.5 s when the server cannot be reached, and at once
    /// (after the retries) when it refuses the certificate or the password.
    ///
    /// The URL's password never appears in this store's `Debug` output, spans or errors.
    #[tracing::instrument(
        name = "checkpoint.connect",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, endpoint)
    )]
    pub async fn connect(url: &str) -> Result<Self, Error> {
        let endpoint = redacted_endpoints([url]).map_err(|e| backend(Operation::Connect, e))?;
        tracing::Span::current().record("endpoint", endpoint.as_str());
        #[cfg(feature = "tls-rustls")]
        ensure_crypto_provider();
        let client = redis::Client::open(url).map_err(|e| backend(Operation::Connect, e))?;
        Self::manage(client, endpoint).await
    }

    /// Connects through a [`redis::Client`] you built, for what a URL cannot say: a private
    /// certificate authority or a client certificate (`redis::Client::build_with_tls`).
    /// Otherwise the same as [`connect`](Self::connect).
    #[tracing::instrument(
        name = "checkpoint.connect",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, endpoint)
    )]
    pub async fn connect_client(client: redis::Client) -> Result<Self, Error> {
        let endpoint = client.get_connection_info().addr().to_string();
        tracing::Span::current().record("endpoint", endpoint.as_str());
        #[cfg(feature = "tls-rustls")]
        ensure_crypto_provider();
        Self::manage(client, endpoint).await
    }

    async fn manage(client: redis::Client, endpoint: String) -> Result<Self, Error> {
        // No response timeout in the client: the store's own timeout is the one that bounds an
        // operation, and returns `Error::Timeout` rather than an I/O error.
        // Few connection retries: a refused certificate or password fails `connect` in about a
        // second rather than after redis-rs's six (6.3 s of backoff), and while a restarting
        // server is down, calls fail fast with a retryable error instead of queueing behind a
        // long backoff; the next call starts a new reconnect.
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_response_timeout(None)
            .set_connection_timeout(Some(CONNECTION_TIMEOUT))
            .set_number_of_retries(CONNECTION_RETRIES);
        let connection = client
            .get_connection_manager_with_config(config.clone())
            .await
            .map_err(|e| backend(Operation::Connect, e))?;
        // After a timeout, a manager of the same client and settings that connects on its first
        // call: the old one may sit on a connection whose peer vanished without closing it,
        // which the manager never notices (it reconnects only after an error that says the
        // connection is gone, and a timeout is not one).
        let renew: Renew<ConnectionManager> = Box::new(move || {
            let connection = client.get_connection_manager_lazy(config.clone());
            Box::pin(async move { connection })
        });
        Ok(Self::with_connection(Connection::renewable(connection, renew)).with_endpoint(endpoint))
    }
}

impl RedisCheckpointStore<ClusterConnection> {
    /// Connects to a Redis Cluster through any of its nodes (`redis://host:port` URLs, or
    /// `rediss://` with the `tls-rustls` feature); the client discovers the others and follows
    /// slot moves and failovers. The store's timeout is
    /// [`DEFAULT_TIMEOUT`](checkpoint_core::DEFAULT_TIMEOUT), as for every store; the cluster
    /// client keeps redis-rs's own connection settings.
    #[tracing::instrument(
        name = "checkpoint.connect",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, endpoint)
    )]
    pub async fn connect_cluster<I, S>(node_urls: I) -> Result<Self, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let urls: Vec<String> = node_urls
            .into_iter()
            .map(|url| url.as_ref().to_owned())
            .collect();
        let endpoint = redacted_endpoints(urls.iter().map(String::as_str))
            .map_err(|e| backend(Operation::Connect, e))?;
        tracing::Span::current().record("endpoint", endpoint.as_str());
        #[cfg(feature = "tls-rustls")]
        ensure_crypto_provider();
        let client = ClusterClient::new(urls.iter().map(String::as_str))
            .map_err(|e| backend(Operation::Connect, e))?;
        Self::cluster(client, endpoint).await
    }

    /// Connects to a Redis Cluster through a [`ClusterClient`] you built
    /// (`redis::cluster::ClusterClientBuilder`), for what node URLs cannot say: a private
    /// certificate authority, a node address map for nodes that announce addresses the
    /// application cannot reach, a password for every node. Otherwise the same as
    /// [`connect_cluster`](Self::connect_cluster).
    ///
    /// The client's own settings apply to its connections; the store's timeout still bounds
    /// each operation (see the crate's timeouts section for a response timeout of the
    /// client's).
    #[tracing::instrument(
        name = "checkpoint.connect",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, endpoint)
    )]
    pub async fn connect_cluster_client(client: ClusterClient) -> Result<Self, Error> {
        // The initial nodes are not public: `Debug` shows that the client was the caller's.
        let endpoint = "<caller's cluster client>".to_owned();
        tracing::Span::current().record("endpoint", endpoint.as_str());
        #[cfg(feature = "tls-rustls")]
        ensure_crypto_provider();
        Self::cluster(client, endpoint).await
    }

    async fn cluster(client: ClusterClient, endpoint: String) -> Result<Self, Error> {
        let connection = client
            .get_async_connection()
            .await
            .map_err(|e| backend(Operation::Connect, e))?;
        // After a timeout, a new cluster connection from the same client: the old one may sit
        // on node connections whose peer vanished without closing them, which it never
        // notices (it reconnects to a node only after an error that says the connection is
        // gone, and a timeout is not one).
        let renew: Renew<ClusterConnection> = Box::new(move || {
            let client = client.clone();
            Box::pin(async move { connect_cluster_with_retries(&client).await })
        });
        Ok(Self::with_connection(Connection::renewable(connection, renew)).with_endpoint(endpoint))
    }
}

/// A new cluster connection, each attempt retried like the single server's connection manager
/// retries its own: [`CONNECTION_RETRIES`] times, 100 ms and 200 ms later.
async fn connect_cluster_with_retries(
    client: &ClusterClient,
) -> Result<ClusterConnection, RedisError> {
    let mut pause = Duration::from_millis(100);
    let mut retries = 0;
    loop {
        match client.get_async_connection().await {
            Err(error) if retries < CONNECTION_RETRIES => {
                tracing::debug!(%error, "a new cluster connection failed, retrying");
                tokio::time::sleep(pause).await;
                pause *= 2;
                retries += 1;
            }
            result => return result,
        }
    }
}

/// Makes sure rustls has a process-wide crypto provider before redis-rs builds a TLS
/// configuration (the `tls-rustls` feature).
///
/// rustls picks its provider from its own cargo features, and panics when it finds none or
/// several (another crate of the application may enable a second one). This installs
/// aws-lc-rs's provider, which this feature enables, only when the application has installed
/// none; one the application installed is kept.
#[cfg(feature = "tls-rustls")]
fn ensure_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // An error means another thread installed one in the meantime: that one is used.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    }
}
