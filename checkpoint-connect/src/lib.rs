//! Open any checkpoint store of the workspace from one URL: the way the `checkpoint` command,
//! the examples and the bench open theirs, so a program that takes a store as configuration
//! writes none of it.
//!
//! | URL | store | feature |
//! | --- | --- | --- |
//! | `sqlite:PATH` (also `sqlite://PATH`) | a SQLite database file | `sqlite` |
//! | `postgres://…`, `postgresql://…` | PostgreSQL (sqlx's URL: `sslmode`, `options`, ...) | `postgres` |
//! | `mysql://…`, `mariadb://…` | MySQL or MariaDB (sqlx's URL: `ssl-mode`, `socket`, ...) | `mysql` |
//! | `redis://…`, `rediss://…` | one Redis server (`rediss://` with `tls`) | `redis` |
//! | several `redis://` URLs, or one value with them comma-separated | a Redis Cluster, through any of its nodes | `redis` |
//! | `dynamodb://TABLE` | DynamoDB; endpoint, region and credentials from the AWS environment | `dynamodb` |
//!
//! One format per backend. DynamoDB takes the table only: the rest is what every AWS tool
//! reads (`AWS_REGION`, `AWS_ENDPOINT_URL_DYNAMODB` for an emulator, the credential chain), so
//! no key is ever written in a URL. The PostgreSQL, MySQL and Redis URLs are their client's own
//! (`mariadb://` is the same URL as `mysql://`, for MariaDB; TLS, `sslmode=require` or
//! `ssl-mode=required`, needs the `tls` feature).
//!
//! No backend is built by default: a program turns on the features of the stores it opens
//! and compiles no other client. A URL of a backend left out still parses, and [`open`]
//! refuses it with [`ConnectError::NotBuilt`] naming the feature.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use checkpoint_connect::{Options, StoreUrl};
//!
//! let path = std::env::temp_dir().join(format!("connect-doc-{}.db", std::process::id()));
//! let url: StoreUrl = format!("sqlite:{}", path.display()).parse()?;
//! let store = checkpoint_connect::open(&url, &Options::new().create(true)).await?;
//! store.save("billing", "invoices", 0, 42).await?;
//! assert_eq!(store.load("billing", "invoices", 0).await?, Some(42));
//! println!("saved in {}", url.display()); // never shows a password
//! # drop(store);
//! # let _ = std::fs::remove_file(&path);
//! # Ok(())
//! # }
//! ```
//!
//! What is opened is exactly what the backend crate's constructors give (`connect`,
//! `connect_with`, `open_with`, `with_timeout`, `with_table`, `with_key_prefix`); nothing is
//! created unless [`Options::create`] asks for it (`migrate`, `create_table`, a new SQLite
//! file).
//!
//! # Secrets
//!
//! A URL is shown only through [`StoreUrl::display`] (and [`redact::display_url`]), without
//! its password or a query parameter that carries one; `Debug` shows the same; no error of
//! this crate holds any part of a URL but its scheme. [`redact`] also has what a program needs
//! to scrub its own output.

mod backends;
mod error;
#[cfg(feature = "mysql")]
pub mod mysql;
mod open;
mod options;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod redact;
mod store;
mod store_url;

#[cfg(feature = "dynamodb")]
pub mod aws;

pub use error::{ACCEPTED_URLS, ConnectError, UrlError};
pub use open::{connect, open};
pub use options::Options;
pub use store::Store;
pub use store_url::{StoreUrl, check_parses, scheme_for_message, sqlite_path};
