//! One function per backend, each behind its feature: the backend crate's own constructors,
//! the options applied, the schema created when asked.

use crate::error::ConnectError;
use crate::options::Options;
use crate::store::Store;
use crate::store_url::StoreUrl;

/// Opens `url` (whose feature this build has: [`crate::open`] checked) with `options`.
#[cfg_attr(
    not(any(
        feature = "postgres",
        feature = "mysql",
        feature = "sqlite",
        feature = "redis",
        feature = "dynamodb"
    )),
    allow(unused_variables)
)]
pub(crate) async fn open(
    url: &StoreUrl,
    options: &Options,
) -> Result<Box<dyn Store>, ConnectError> {
    match url {
        #[cfg(feature = "postgres")]
        StoreUrl::Postgres(url) => postgres(url, options).await,
        #[cfg(feature = "mysql")]
        StoreUrl::Mysql(url) => mysql(url, options).await,
        #[cfg(feature = "sqlite")]
        StoreUrl::Sqlite(path) => sqlite(path, options).await,
        #[cfg(feature = "redis")]
        StoreUrl::Redis(url) => redis(std::slice::from_ref(url), options).await,
        #[cfg(feature = "redis")]
        StoreUrl::RedisCluster(urls) => redis(urls, options).await,
        #[cfg(feature = "dynamodb")]
        StoreUrl::DynamoDb(table) => dynamodb(table, options).await,
        #[allow(unreachable_patterns)]
        _ => Err(ConnectError::NotBuilt {
            scheme: url.scheme(),
            feature: url.backend(),
        }),
    }
}

#[cfg(feature = "postgres")]
async fn postgres(url: &str, options: &Options) -> Result<Box<dyn Store>, ConnectError> {
    use std::str::FromStr;

    use checkpoint_postgres::PostgresCheckpointStore;
    use sqlx::postgres::PgConnectOptions;

    let connect_options = PgConnectOptions::from_str(url).map_err(|error| {
        checkpoint_core::Error::backend(
            checkpoint_postgres::BACKEND,
            checkpoint_core::Operation::Connect,
            false,
            error,
        )
    })?;
    crate::postgres::probe(&connect_options).await?;
    let mut store = PostgresCheckpointStore::connect_with(connect_options)
        .await?
        .with_timeout(options.timeout)?;
    if let Some(table) = &options.table {
        store = store.with_table(table)?;
    }
    if options.create {
        store.migrate().await?;
    }
    Ok(Box::new(store))
}

/// MySQL or MariaDB: sqlx's URL (`mysql://` or `mariadb://`, `ssl-mode`, ...), probed first
/// as PostgreSQL is, so that a refused connection says why.
#[cfg(feature = "mysql")]
async fn mysql(url: &str, options: &Options) -> Result<Box<dyn Store>, ConnectError> {
    use std::str::FromStr;

    use checkpoint_mysql::MysqlCheckpointStore;
    use sqlx::mysql::MySqlConnectOptions;

    let connect_options = MySqlConnectOptions::from_str(url).map_err(|error| {
        checkpoint_core::Error::backend(
            checkpoint_mysql::BACKEND,
            checkpoint_core::Operation::Connect,
            false,
            error,
        )
    })?;
    crate::mysql::probe(&connect_options).await?;
    let mut store = MysqlCheckpointStore::connect_with(connect_options)
        .await?
        .with_timeout(options.timeout)?;
    if let Some(table) = &options.table {
        store = store.with_table(table)?;
    }
    if options.create {
        store.migrate().await?;
    }
    Ok(Box::new(store))
}

#[cfg(feature = "sqlite")]
async fn sqlite(path: &std::path::Path, options: &Options) -> Result<Box<dyn Store>, ConnectError> {
    use checkpoint_sqlite::SqliteCheckpointStore;

    let connect_options =
        SqliteCheckpointStore::connect_options(path).create_if_missing(options.create);
    let mut store = SqliteCheckpointStore::open_with(connect_options)
        .await?
        .with_timeout(options.timeout)?;
    if let Some(table) = &options.table {
        store = store.with_table(table)?;
    }
    if options.create {
        store.migrate().await?;
    }
    Ok(Box::new(store))
}

/// One Redis server for one URL, a Redis Cluster through its nodes for several. Redis has no
/// schema to create.
#[cfg(feature = "redis")]
async fn redis(urls: &[String], options: &Options) -> Result<Box<dyn Store>, ConnectError> {
    use checkpoint_redis::RedisCheckpointStore;

    match urls {
        [url] => redis_settings(RedisCheckpointStore::connect(url).await?, options),
        nodes => redis_settings(RedisCheckpointStore::connect_cluster(nodes).await?, options),
    }
}

/// The timeout and key prefix, on a single server's store or a cluster's alike.
#[cfg(feature = "redis")]
fn redis_settings<C>(
    store: checkpoint_redis::RedisCheckpointStore<C>,
    options: &Options,
) -> Result<Box<dyn Store>, ConnectError>
where
    checkpoint_redis::RedisCheckpointStore<C>: Store + 'static,
{
    let mut store = store.with_timeout(options.timeout)?;
    if let Some(prefix) = &options.key_prefix {
        store = store.with_key_prefix(prefix.as_str())?;
    }
    Ok(Box::new(store))
}

#[cfg(feature = "dynamodb")]
async fn dynamodb(table: &str, options: &Options) -> Result<Box<dyn Store>, ConnectError> {
    use checkpoint_dynamodb::DynamoDbCheckpointStore;

    let client = crate::aws::client().await?;
    let store = DynamoDbCheckpointStore::new(client)
        .with_table(table)?
        .with_timeout(options.timeout)?;
    if options.create {
        store.create_table().await?;
    }
    Ok(Box::new(store))
}
