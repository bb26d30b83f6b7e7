//! The `checkpoint` binary end to end: built by cargo (`CARGO_BIN_EXE_checkpoint`), run as a
//! process against the real servers of every backend (see `support` for the variables), its
//! standard output, standard error and exit code checked.
//!
//! | module | holds |
//! | --- | --- |
//! | `support` | running the binary, the stores prepared for it |
//! | `usage` | the command line, bad URLs, unreachable servers, timeouts |
//! | `missing` | a SQLite file, a PostgreSQL, MySQL or DynamoDB table that does not exist yet |
//! | `commands` | every command on every backend |
//! | `leases` | `leases` on every backend, over leases the test acquires |
//! | `lag` | `status --source`: head and lag from SQLite and PostgreSQL logs, bad source URLs |
//! | `kafka` | `status --source kafka://…/TOPIC` (feature `source-kafka`, `KAFKA_URL`) |
//! | `parked` | `parked`, `parked retry`, `parked drop` and `status` on every backend |
//! | `secrets` | no password or secret key printed, whatever happens |
//! | `zombie` | a retire while another process keeps saving under the name |
//! | `monitor` | `check`'s requests per refresh over 1,024 partitions, counted on the wire |

mod commands;
#[cfg(feature = "source-kafka")]
mod kafka;
mod lag;
mod leases;
mod missing;
mod monitor;
mod parked;
mod secrets;
mod serve;
mod support;
mod usage;
mod zombie;
