//! `checkpoint serve`'s server: the monitor's latest [`Report`](crate::monitor::Report) as a
//! page, as JSON and as Prometheus metrics, over HTTP/1.
//!
//! | route | answers |
//! | --- | --- |
//! | `GET /` | the page ([`page`]): the partitions, their verdicts and each subscription's lag over time, refreshed from `/api/fleet` every interval |
//! | `GET /api/fleet` | the report as JSON (its fields in [`crate::monitor::report`]) |
//! | `GET /metrics` | the report as Prometheus text ([`prometheus`]) |
//! | `GET /healthz` | `ok` |
//!
//! `HEAD` of each too; any other path is 404, any other method 405. Read-only by design: no
//! route changes anything, and no request reads the store or the log. One refresh loop reads
//! them every interval and publishes the report ([`Latest`]), rendered once; every request
//! answers from what was published last, so the store's load is the same whether nobody or a
//! hundred browsers look.

pub mod http;
pub mod latest;
pub mod page;
pub mod prometheus;

pub use latest::{Latest, Rendered};
