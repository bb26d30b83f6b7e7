//! Connecting: the constructors that take a URL or a client, the connection manager's
//! reconnect and timeout settings, TLS's crypto provider, and the endpoint a store shows in
//! `Debug` without credentials: everything that handles a URL, and so a password, is here.

use checkpoint_core::{Error, Operation};
use redis::IntoConnectionInfo;
use redis::aio::ConnectionManager;
use redis::cluster_async::ClusterConnection;

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
            .get_connection_manager_with_config(config)
            .await
            .map_err(|e| backend(Operation::Connect, e))?;
        Ok(Self::new(connection).with_endpoint(endpoint))
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
        fields(backend = BACKEND, endpoints)
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
        tracing::Span::current().record("endpoints", endpoint.as_str());
        #[cfg(feature = "tls-rustls")]
        ensure_crypto_provider();
        let client = redis::cluster::ClusterClient::new(urls.iter().map(String::as_str))
            .map_err(|e| backend(Operation::Connect, e))?;
        let connection = client
            .get_async_connection()
            .await
            .map_err(|e| backend(Operation::Connect, e))?;
        Ok(Self::new(connection).with_endpoint(endpoint))
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
