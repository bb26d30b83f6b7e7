//! Exactly once from a Kafka topic into SQL, through SIGKILLs: subscription processes with a
//! transactional handler write one row per record into a read model in the checkpoint store's
//! own database, in the transaction that advances the partition's checkpoint (the record's
//! next offset), and are killed at random while a producer appends. At the end the read model
//! holds every record of the topic exactly once: none missing, none extra, none applied twice.
//!
//! ```text
//! eval "$(bash scripts/services/kafka.sh up)"      # a local broker (tansu): KAFKA_URL
//! cargo run -p checkpoint-examples --features source-kafka --bin kafka_exactly_once -- \
//!     --store sqlite:/tmp/kafka-exactly-once.sqlite3 --source kafka://127.0.0.1:9092
//! cargo run -p checkpoint-examples --features source-kafka,postgres --bin kafka_exactly_once -- \
//!     --store postgres://postgres@127.0.0.1:5432/test --source kafka://127.0.0.1:9092
//! cargo run -p checkpoint-examples --features source-kafka,mysql --bin kafka_exactly_once -- \
//!     --store mysql://root@127.0.0.1:3306/test --source kafka://127.0.0.1:9092
//! ```
//!
//! `--store` takes `sqlite:PATH`, `postgres://…` or `mysql://…` (`mariadb://…`): the
//! transactional handler writes through the store's own sqlx transaction, so it is written
//! once per engine (`postgres.rs`, `mysql.rs`, `sqlite.rs`). `--source` names the brokers
//! only (default: `KAFKA_URL`, else `kafka://127.0.0.1:9092`); the example creates a topic of
//! its own per run. `--records N` (default 3,000) and `--seconds S` (default 10) set what the
//! producer appends and over how long; `--summary PATH` also writes the verdict as
//! `key=value` lines (what `examples/tests/processes.rs` reads).
//!
//! One binary, two modes. The supervisor (the default) creates a topic of 4 partitions,
//! starts 3 children (`--child`, this executable again) and a producer that appends records
//! whose payloads name them (`RUN p2 #17`). Each child runs a `Subscription` with a
//! transactional handler: per batch, one transaction inserts a row per record (partition,
//! offset, payload, `n = 1`; a second application of a record would make it `n = 2`, the
//! insert adds 1 on conflict) and advances the checkpoint. Every 1-1.5 s the supervisor
//! SIGKILLs a random child (one that has committed rows, when there is one: it holds
//! partitions and is projecting) and starts a replacement, at least 5 times. When the producer
//! is done, the children left run until the read model reaches the topic's end, then stop
//! gracefully, and the supervisor reads the topic back in full through the source and
//! compares: every record once with its payload, nothing else, every checkpoint at its
//! partition's end. It prints one summary line and exits non-zero on any mismatch.
//!
//! Why this holds: a killed child's open transaction dies with its connection, rows and
//! checkpoint together, and the next owner of the partition resumes at the last committed
//! checkpoint; a child whose lease expired cannot commit, because the checkpoint advance in
//! the same transaction is a compare-and-set on the position it read from.

mod child;
mod children;
mod engine;
#[cfg(feature = "mysql")]
mod mysql;
#[cfg(feature = "postgres")]
mod postgres;
mod producer;
mod record;
mod sqlite;
mod supervisor;
mod topic;
mod verdict;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The subscription's name in the checkpoint store (its group is the run).
const SUBSCRIPTION: &str = "kafka-rows";
/// The topic's partitions.
const PARTITIONS: u32 = 4;
/// Children running at once.
const CHILDREN: usize = 3;
/// Short, so that a killed child's partitions are taken over within about a second.
const LEASE: Duration = Duration::from_secs(1);
/// Records per transaction at most.
const BATCH: usize = 20;

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value_of = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let result = if args.iter().any(|a| a == "--child") {
        match ["--store", "--source", "--run", "--id"].map(value_of) {
            [Some(store), Some(source), Some(run), Some(id)] => {
                child::run(child::ChildArgs {
                    store,
                    source,
                    run,
                    id,
                })
                .await
            }
            _ => Err("--child needs --store, --source, --run and --id".into()),
        }
    } else {
        match options(value_of) {
            Ok(options) => supervisor::run(options).await,
            Err(error) => Err(error),
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // With its causes: "create topic failed" alone does not say that nothing answered.
            let mut message = error.to_string();
            let mut cause = error.source();
            while let Some(inner) = cause {
                message.push_str(&format!(": {inner}"));
                cause = inner.source();
            }
            eprintln!("kafka_exactly_once failed: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The supervisor's options, from its flags.
fn options(value_of: impl Fn(&str) -> Option<String>) -> Result<supervisor::Options, BoxError> {
    let number = |flag: &str, default: u64| -> Result<u64, BoxError> {
        value_of(flag).map_or(Ok(default), |value| {
            value
                .parse()
                .map_err(|error| format!("{flag} {value}: {error}").into())
        })
    };
    let store = value_of("--store").unwrap_or_else(|| {
        let file = std::env::temp_dir().join("kafka-exactly-once.sqlite3");
        format!("sqlite:{}", file.display())
    });
    let source = value_of("--source")
        .or_else(|| std::env::var("KAFKA_URL").ok())
        .unwrap_or_else(|| "kafka://127.0.0.1:9092".to_owned());
    Ok(supervisor::Options {
        store,
        source,
        records: number("--records", 3_000)?,
        produce_for: Duration::from_secs(number("--seconds", 10)?),
        summary: value_of("--summary").map(PathBuf::from),
    })
}
