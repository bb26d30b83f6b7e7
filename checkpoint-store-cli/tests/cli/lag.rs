//! `checkpoint status --source`: the log's head and the lag of each partition, read by the
//! command from a log this process wrote through the source crates (SQLite beside the SQLite
//! store, PostgreSQL beside the PostgreSQL store), and the bad source URLs and unreachable
//! logs refused.

use std::time::Duration;

use checkpoint_core::source::Source;
use checkpoint_core::{CheckpointStore, LeaseStore};
use checkpoint_source_postgres::PostgresSource;
use checkpoint_source_sqlite::SqliteSource;
use serde_json::{Value, json};
use sqlx::postgres::PgPoolOptions;

use crate::support::{Backend, Fixture, TempDir, fresh_group, required};

/// Long enough that nothing expires while the test runs.
const HOUR: Duration = Duration::from_secs(3600);

/// The rows of a table, each split on whitespace.
fn rows(table: &str) -> Vec<Vec<&str>> {
    table
        .lines()
        .map(|line| line.split_whitespace().collect())
        .collect()
}

/// A SQLite log of 4 partitions in a file of its own, in table `table`: 5 entries in
/// partition 0, 2 in partition 1, none in 2, 1 in 3 (positions count from 1).
pub(crate) async fn sqlite_log(dir: &TempDir, table: &str) -> String {
    let path = dir.0.join("log.db");
    let source = SqliteSource::open(&path, 4)
        .await
        .expect("open")
        .with_table(table)
        .expect("table name");
    source.migrate().await.expect("migrate");
    for (partition, count) in [(0, 5), (1, 2), (3, 1)] {
        for n in 0..count {
            source
                .append(partition, Some("k"), format!("{n}").as_bytes())
                .await
                .expect("append");
        }
    }
    source.pool().close().await;
    format!("sqlite:{}", path.display())
}

/// `a`: checkpoints 3 on partition 0 (behind), 3 on 1 (caught up), 1 on 2 (an empty
/// partition) and 0 on 7 (not in the log); a lease on 3 with no checkpoint. `b`: 6 on 0.
async fn checkpoints(fixture: &Fixture) -> String {
    let group = fresh_group("cli-lag");
    let g = group.as_str();
    let store = &fixture.store;
    for (subscription, partition, position) in [
        ("a", 0, 3),
        ("a", 1, 3),
        ("a", 2, 1),
        ("a", 7, 0),
        ("b", 0, 6),
    ] {
        store
            .save(g, subscription, partition, position)
            .await
            .expect("save");
    }
    store
        .acquire(g, "a", "w1", &[3], HOUR)
        .await
        .expect("acquire");
    group
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_head_and_lag_in_text_and_json() {
    let fixture = Fixture::new(Backend::Sqlite).await;
    let dir = TempDir::new();
    let source = sqlite_log(&dir, "events").await;
    let group = checkpoints(&fixture).await;
    let g = group.as_str();

    let output = fixture.cli(&["status", g, "--source", &source]);
    let table = output.ok();
    // Partition 7 is beyond the 4 the log stores (the fallback would have been 8, which the
    // source refuses): no head there.
    let expected: [&[&str]; 7] = [
        &[
            "SUBSCRIPTION",
            "PARTITION",
            "POSITION",
            "HEAD",
            "LAG",
            "OWNER",
            "EPOCH",
            "PARKED",
        ],
        &["a", "0", "3", "5", "3", "-", "-", "0"],
        &["a", "1", "3", "2", "0", "-", "-", "0"],
        &["a", "2", "1", "-", "-", "-", "-", "0"],
        &["a", "3", "-", "1", "-", "w1", "1", "0"],
        &["a", "7", "0", "-", "-", "-", "-", "0"],
        &["b", "0", "6", "5", "0", "-", "-", "0"],
    ];
    let found = rows(table);
    assert_eq!(found.len(), expected.len(), "{output:#?}");
    for (row, expected) in found.iter().zip(expected) {
        if row[5] == "w1" {
            // The epoch is the store's.
            assert_eq!(row[..6], expected[..6], "{output:#?}");
            assert_eq!(row[7], expected[7], "{output:#?}");
        } else {
            assert_eq!(row, expected, "{output:#?}");
        }
    }

    let value = fixture
        .cli(&["status", g, "-s", "a", "--source", &source, "--json"])
        .json();
    let partitions = value["partitions"].as_array().expect("partitions");
    let found: Vec<(Value, Value, Value)> = partitions
        .iter()
        .map(|p| (p["partition"].clone(), p["head"].clone(), p["lag"].clone()))
        .collect();
    assert_eq!(
        found,
        [
            (json!(0), json!(5), json!(3)),
            (json!(1), json!(2), json!(0)),
            (json!(2), Value::Null, Value::Null),
            (json!(3), json!(1), Value::Null),
            (json!(7), Value::Null, Value::Null),
        ],
        "{value}"
    );
    assert_eq!(partitions[0]["position"], 3, "{value}");

    // Without --source, nothing of the log.
    let plain = fixture.cli(&["status", g, "--json"]).json();
    assert!(plain["partitions"][0].get("head").is_none(), "{plain}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_source_table_and_a_log_not_there() {
    let fixture = Fixture::new(Backend::Sqlite).await;
    let dir = TempDir::new();
    let source = sqlite_log(&dir, "orders_log").await;
    let group = checkpoints(&fixture).await;
    let g = group.as_str();

    let value = fixture
        .cli(&[
            "status",
            g,
            "-s",
            "b",
            "--source",
            &source,
            "--source-table",
            "orders_log",
            "--json",
        ])
        .json();
    assert_eq!(value["partitions"][0]["head"], 5, "{value}");
    assert_eq!(value["partitions"][0]["lag"], 0, "{value}");

    // The default table is not in that file: the source says so (exit 1), nothing printed.
    let output = fixture.cli(&["status", g, "--source", &source]);
    let line = output.error(1);
    assert!(
        line.starts_with(&format!("error: cannot read the source {source}: ")),
        "{output:#?}"
    );
    assert!(line.contains("migrate"), "{output:#?}");
    assert_eq!(output.stdout, "");

    // A file that does not exist is not created.
    let missing = dir.0.join("missing.db");
    let output = fixture.cli(&[
        "status",
        g,
        "--source",
        &format!("sqlite:{}", missing.display()),
    ]);
    assert!(
        output.error(1).contains("the file does not exist"),
        "{output:#?}"
    );
    assert!(!missing.exists());
}

/// A PostgreSQL log of 3 partitions in a table of its own: two transactions of entries in
/// partition 0, one in partition 1, none in 2. Returns the table and the positions of
/// partition 0's entries.
async fn postgres_log(url: &str) -> (String, Vec<u64>) {
    let table = fresh_group("lag").replace('-', "_");
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .connect(url)
        .await
        .expect("DATABASE_URL reachable");
    let source = PostgresSource::new(pool.clone(), 3)
        .with_table(&table)
        .expect("table name");
    source.migrate().await.expect("migrate");
    let mut positions = Vec::new();
    for payload in [b"one", b"two"] {
        positions.push(source.append(0, Some("k"), payload).await.expect("append"));
    }
    let mut transaction = pool.begin().await.expect("begin");
    for payload in [b"three", b"four!"] {
        let position = source
            .append_in(&mut transaction, 0, Some("k"), payload)
            .await
            .expect("append");
        positions.push(position);
    }
    transaction.commit().await.expect("commit");
    let one = source.append(1, None, b"x").await.expect("append");
    settled(&source, 0, positions[3]).await;
    settled(&source, 1, one).await;
    pool.close().await;
    (table, positions)
}

/// Waits until `head` is `partition`'s head: a committed entry becomes readable once every
/// older transaction of the server has ended (other tests may be writing), and stays so.
async fn settled(source: &PostgresSource, partition: u32, head: u64) {
    for _ in 0..300 {
        if source.head(partition).await.expect("head") == Some(head) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("partition {partition}'s head never reached {head}");
}

/// Drops what `migrate` made for `table`, so that runs do not pile up.
pub(crate) async fn drop_postgres_log(url: &str, table: &str) {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect(url)
        .await
        .expect("DATABASE_URL reachable");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        r#"DROP TABLE IF EXISTS "{table}", "{table}_source"; DROP FUNCTION IF EXISTS "{table}_notify"()"#
    )))
    .execute(&pool)
    .await
    .expect("drop the log");
    pool.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_head_and_lag_with_the_postgres_store() {
    let url = required("DATABASE_URL");
    let fixture = Fixture::new(Backend::Postgres).await;
    let (table, positions) = postgres_log(&url).await;
    let head = positions[3];
    let group = fresh_group("cli-lag-pg");
    let g = group.as_str();
    // Partition 0 stands at its third entry (inside the second transaction), partition 1
    // after its only entry, partition 2 (no entry) at 0.
    let store = &fixture.store;
    store.save(g, "a", 0, positions[2]).await.expect("save");

    let value = fixture
        .cli(&[
            "status",
            g,
            "--source",
            &url,
            "--source-table",
            &table,
            "--json",
        ])
        .json();
    assert_eq!(
        value["partitions"][0],
        json!({"subscription": "a", "partition": 0, "position": positions[2], "head": head,
               "lag": head + 1 - positions[2], "owner": null, "epoch": null, "parked": 0}),
        "{value}"
    );
    // Positions are dense within a transaction: two entries behind.
    assert_eq!(head + 1 - positions[2], 2);

    // Caught up on partition 0; partition 1's head beside a checkpoint past it; 2 is empty.
    store.save(g, "a", 0, head + 1).await.expect("save");
    let one_head = {
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .connect(&url)
            .await
            .expect("DATABASE_URL reachable");
        let source = PostgresSource::new(pool, 3)
            .with_table(&table)
            .expect("table name");
        source.head(1).await.expect("head").expect("an entry")
    };
    store.save(g, "a", 1, one_head + 1).await.expect("save");
    store.save(g, "a", 2, 0).await.expect("save");
    let output = fixture.cli(&["status", g, "--source", &url, "--source-table", &table]);
    let (h0, h1, p1) = (
        head.to_string(),
        one_head.to_string(),
        (one_head + 1).to_string(),
    );
    let p0 = (head + 1).to_string();
    let expected: [&[&str]; 4] = [
        &[
            "SUBSCRIPTION",
            "PARTITION",
            "POSITION",
            "HEAD",
            "LAG",
            "OWNER",
            "EPOCH",
            "PARKED",
        ],
        &["a", "0", &p0, &h0, "0", "-", "-", "0"],
        &["a", "1", &p1, &h1, "0", "-", "-", "0"],
        &["a", "2", "0", "-", "-", "-", "-", "0"],
    ];
    assert_eq!(rows(output.ok()), expected, "{output:#?}");

    // The table not there: the source says what to do (exit 1).
    let output = fixture.cli(&[
        "status",
        g,
        "--source",
        &url,
        "--source-table",
        "no_such_log",
    ]);
    let line = output.error(1);
    assert!(line.contains("no_such_log does not exist"), "{output:#?}");
    drop_postgres_log(&url, &table).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_source_urls_and_settings_exit_2_before_any_request() {
    // An unreachable store: a usage error comes first, without connecting.
    let store = "postgres://u@127.0.0.1:1/db";
    let run = |args: &[&str]| {
        let mut all = vec!["--url", store, "status", "g"];
        all.extend_from_slice(args);
        crate::support::cli(&all, &[])
    };
    let output = run(&["--source", "mysql://root:hunter2@h/db"]);
    assert_eq!(
        output.error(2),
        "error: unsupported source URL mysql://: expected sqlite:PATH, postgres://…, \
         postgresql://…, nats://… or kafka://…"
    );
    let output = run(&["--source", "postgres://u:hunter2@h:notaport/db"]);
    assert!(
        output.error(2).contains("malformed postgres:// URL"),
        "{output:#?}"
    );
    assert!(!output.printed("hunter2"), "{output:#?}");
    assert!(
        run(&["--source", "sqlite:"])
            .error(2)
            .contains("sqlite:PATH")
    );
    let output = run(&["--source", "nats://s3cret@127.0.0.1:4222"]);
    if cfg!(feature = "source-nats") {
        assert!(output.error(2).contains("--source-stream"), "{output:#?}");
    } else {
        assert!(
            output.error(2).contains("`source-nats` feature"),
            "{output:#?}"
        );
    }
    assert!(!output.printed("s3cret"), "{output:#?}");
    let output = run(&["--source", "sqlite:/tmp/x.db", "--source-table", "a-b"]);
    assert!(output.error(2).contains("invalid table"), "{output:#?}");
    let output = run(&["--source", "sqlite:/tmp/x.db", "--source-stream", "S"]);
    assert!(
        output.error(2).contains("--source-stream is for nats://"),
        "{output:#?}"
    );
    let output = run(&["--source-table", "events"]);
    assert!(output.error(2).contains("--source"), "{output:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_source_exits_1_without_its_password() {
    let fixture = Fixture::new(Backend::Sqlite).await;
    let group = checkpoints(&fixture).await;
    let output = fixture.cli(&[
        "--timeout",
        "3",
        "status",
        &group,
        "--source",
        "postgres://app:hunter2@127.0.0.1:1/db",
    ]);
    let line = output.error(1);
    assert!(
        line.starts_with("error: cannot read the source postgres://app@127.0.0.1:1/db: "),
        "{output:#?}"
    );
    assert!(!output.printed("hunter2"), "{output:#?}");
    assert_eq!(output.stdout, "");
    // A user name is not a secret: the messages stay whole.
    let output = fixture.cli(&[
        "status",
        &group,
        "--source",
        "postgres://postgres@127.0.0.1:1/db",
    ]);
    assert!(
        output.error(1).starts_with(
            "error: cannot read the source postgres://postgres@127.0.0.1:1/db: postgres connect \
             failed"
        ),
        "{output:#?}"
    );
}

/// With `--features source-nats` (and `NATS_URL`): a NATS stream's head and lag, with the
/// partition count its description records.
#[cfg(feature = "source-nats")]
mod nats {
    use checkpoint_source_nats::{NatsSource, NatsSourceConfig};

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn nats_head_and_lag_with_the_recorded_partition_count() {
        let url = required("NATS_URL");
        let fixture = Fixture::new(Backend::Sqlite).await;
        let stream = fresh_group("lag").replace('-', "_").to_uppercase();
        let client = async_nats::connect(&url).await.expect("NATS_URL reachable");
        let jetstream = async_nats::jetstream::new(client);
        let config = NatsSourceConfig::new(&stream, 3).expect("stream name");
        NatsSource::create_stream(&jetstream, &config)
            .await
            .expect("create the stream");
        let source = NatsSource::new_with_config(jetstream.clone(), config)
            .await
            .expect("open");
        // Partition 0's entries with one of partition 1's between: sequences are shared.
        let mut zero = Vec::new();
        for (partition, payload) in [(0, "a"), (0, "b"), (1, "x"), (0, "c")] {
            let position = source
                .append(partition, Some("k"), payload.as_bytes().to_vec())
                .await
                .expect("append");
            if partition == 0 {
                zero.push(position);
            }
        }
        let one = source.head(1).await.expect("head").expect("an entry");
        let group = fresh_group("cli-lag-nats");
        let g = group.as_str();
        // Checkpoints on 0 and 1 only (a fallback count of 2): partition 2, held by a lease,
        // is read only because the stream records 3.
        fixture.store.save(g, "a", 0, zero[1]).await.expect("save");
        fixture.store.save(g, "a", 1, one + 1).await.expect("save");
        fixture
            .store
            .acquire(g, "a", "w1", &[2], HOUR)
            .await
            .expect("acquire");

        let output = fixture.cli(&[
            "status",
            g,
            "--source",
            &url,
            "--source-stream",
            &stream,
            "--json",
        ]);
        let value = output.json();
        let found: Vec<(Value, Value)> = value["partitions"]
            .as_array()
            .expect("partitions")
            .iter()
            .map(|p| (p["head"].clone(), p["lag"].clone()))
            .collect();
        // Partition 0: b and c behind, and x's sequence between them counted.
        assert_eq!(
            found,
            [
                (json!(zero[2]), json!(zero[2] + 1 - zero[1])),
                (json!(one), json!(0)),
                (Value::Null, Value::Null),
            ],
            "{output:#?}"
        );
        assert_eq!(zero[2] + 1 - zero[1], 3);

        // A stream that does not exist: the source's words, exit 1.
        let output = fixture.cli(&["status", g, "--source", &url, "--source-stream", "NO_SUCH"]);
        assert!(output.error(1).contains("does not exist"), "{output:#?}");
        jetstream
            .delete_stream(&stream)
            .await
            .expect("delete the stream");
    }
}
