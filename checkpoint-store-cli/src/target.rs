//! Which store a URL names: `checkpoint-connect`'s [`StoreUrl`](checkpoint_connect::StoreUrl),
//! the one URL format per backend that every program of the workspace takes.
//!
//! | URL | store |
//! | --- | --- |
//! | `postgres://…`, `postgresql://…` | PostgreSQL |
//! | `mysql://…`, `mariadb://…` | MySQL or MariaDB |
//! | `redis://…`, `rediss://…` | one Redis server |
//! | several `redis://` URLs (`--url` repeated, or comma-separated) | a Redis Cluster, through any of its nodes |
//! | `dynamodb://TABLE` | DynamoDB, endpoint, region and credentials from the AWS environment |
//! | `sqlite:PATH` (also `sqlite://PATH`) | a SQLite database file, which must exist |

pub use checkpoint_connect::StoreUrl as Target;
pub(crate) use checkpoint_connect::{check_parses, scheme_for_message, sqlite_path};
