//! `checkpoint leases` on every backend: leases acquired with the library in this process, read
//! by the command in another; the tables, the JSON, an empty group and a bad name.

use std::time::Duration;

use checkpoint_core::{CheckpointStore, LeaseStore};
use serde_json::{Value, json};

use crate::support::{Backend, Fixture, Output, fresh_group};

/// Long enough that nothing expires while the test runs.
const HOUR: Duration = Duration::from_secs(3600);

/// A fresh group on `backend`: `a` has checkpoints, `w1` holds its partitions 0 and 1, `w2`
/// has joined holding nothing and asked for partition 1; `quiet` has no checkpoint and `w3`
/// holds its partition 4. Returns the epochs of `a`'s partitions 0 and 1.
async fn leased(backend: Backend) -> (Fixture, String, [u64; 2]) {
    let fixture = Fixture::new(backend).await;
    let group = fresh_group("cli-leases");
    let g = group.as_str();
    let store = &fixture.store;
    for (partition, position) in [(0, 10), (1, 20)] {
        store.save(g, "a", partition, position).await.expect("seed");
    }
    let acquired = store.acquire(g, "a", "w1", &[0, 1], HOUR).await.unwrap();
    assert_eq!(acquired.granted.len(), 2, "{acquired:?}");
    store.acquire(g, "a", "w2", &[], HOUR).await.unwrap();
    store.request_handover(g, "a", "w2", &[1]).await.unwrap();
    store.acquire(g, "quiet", "w3", &[4], HOUR).await.unwrap();
    let epochs = [acquired.granted[0].epoch, acquired.granted[1].epoch];
    (fixture, group, epochs)
}

/// A time left as printed: `unknown` on DynamoDB (no clock), else within the hour.
#[track_caller]
fn check_time_left(backend: Backend, printed: &str) {
    if backend == Backend::DynamoDb {
        assert_eq!(printed, "unknown");
        return;
    }
    let seconds: f64 = printed.strip_suffix('s').unwrap().parse().unwrap();
    assert!(seconds > 3000.0 && seconds <= 3600.0, "{printed}");
}

/// The table's lines split into cells; each `TIME LEFT` cell checked, then replaced by `T`.
#[track_caller]
fn cells(backend: Backend, output: &Output) -> Vec<Vec<String>> {
    output
        .ok()
        .lines()
        .map(|line| {
            let mut cells: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
            let time = match cells.first().map(String::as_str) {
                Some("a" | "quiet") if cells.len() == 6 => 4,
                Some("a" | "quiet") if cells.len() == 3 => 2,
                _ => return cells,
            };
            check_time_left(backend, &cells[time]);
            cells[time] = "T".to_owned();
            cells
        })
        .collect()
}

fn rows(rows: &[&[&str]]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|row| row.iter().map(|cell| (*cell).to_owned()).collect())
        .collect()
}

async fn tables(backend: Backend) {
    let (fixture, group, [e0, e1]) = leased(backend).await;
    let g = group.as_str();
    let (e0, e1) = (e0.to_string(), e1.to_string());
    let header = [
        "SUBSCRIPTION",
        "PARTITION",
        "OWNER",
        "EPOCH",
        "TIME",
        "LEFT",
    ];
    let workers = ["SUBSCRIPTION", "WORKER", "TIME", "LEFT"];
    // Without --subscription: `a` (it has checkpoints), not `quiet` (it has none).
    let output = fixture.cli(&["leases", g]);
    let mut lease_header = header.to_vec();
    lease_header.extend(["HANDOVER", "REQUESTED", "BY"]);
    assert_eq!(
        cells(backend, &output),
        rows(&[
            &lease_header,
            &["a", "0", "w1", &e0, "T", "-"],
            &["a", "1", "w1", &e1, "T", "w2"],
            &[],
            &workers,
            &["a", "w1", "T"],
            &["a", "w2", "T"],
        ]),
        "{output:#?}"
    );
    // Named, a subscription without checkpoints shows too.
    let output = fixture.cli(&["leases", g, "-s", "quiet"]);
    let quiet = cells(backend, &output);
    assert_eq!(quiet.len(), 5, "{output:#?}");
    assert_eq!(quiet[1][..3], ["quiet", "4", "w3"], "{output:#?}");
    assert_eq!(quiet[1][4..], ["T", "-"], "{output:#?}");
    assert_eq!(quiet[4], ["quiet", "w3", "T"], "{output:#?}");
}

/// The JSON's times left checked, then set to null.
#[track_caller]
fn without_times(backend: Backend, mut value: Value) -> Value {
    for subscription in value["subscriptions"].as_array_mut().unwrap() {
        for list in ["leases", "owners"] {
            for item in subscription[list].as_array_mut().unwrap() {
                let left = item["time_left_ms"].take();
                match backend {
                    Backend::DynamoDb => assert_eq!(left, Value::Null),
                    _ => {
                        let ms = left.as_u64().unwrap();
                        assert!(ms > 3_000_000 && ms <= 3_600_000, "{ms}");
                    }
                }
            }
        }
    }
    value
}

async fn json(backend: Backend) {
    let (fixture, group, [e0, e1]) = leased(backend).await;
    let g = group.as_str();
    let value = without_times(backend, fixture.cli(&["leases", g, "--json"]).json());
    let no_time = Value::Null;
    assert_eq!(
        value,
        json!({"group": g, "subscriptions": [{
            "subscription": "a",
            "leases": [
                {"partition": 0, "owner": "w1", "epoch": e0, "time_left_ms": no_time,
                 "handover_requested_by": null},
                {"partition": 1, "owner": "w1", "epoch": e1, "time_left_ms": no_time,
                 "handover_requested_by": "w2"},
            ],
            "owners": [
                {"owner": "w1", "time_left_ms": no_time},
                {"owner": "w2", "time_left_ms": no_time},
            ],
        }]})
    );
    let value = fixture
        .cli(&["leases", g, "--subscription", "quiet", "--json"])
        .json();
    assert_eq!(
        value["subscriptions"][0]["leases"][0]["owner"], "w3",
        "{value}"
    );
    assert_eq!(
        value["subscriptions"][0]["owners"][0]["owner"], "w3",
        "{value}"
    );
}

async fn nothing_to_show(backend: Backend) {
    let (fixture, group, _) = leased(backend).await;
    let g = group.as_str();
    // An empty group: nothing on standard output (an empty listing in JSON), exit 3.
    let empty = fresh_group("cli-leases-empty");
    let output = fixture.cli(&["leases", &empty]);
    assert_eq!(
        output.error(3),
        format!(
            "error: no live leases or workers in group \"{empty}\" (in its subscriptions with \
             checkpoints or retired: name another with --subscription)"
        )
    );
    assert_eq!(output.stdout, "");
    let output = fixture.cli(&["leases", &empty, "--json"]);
    output.error(3);
    assert_eq!(output.json(), json!({"group": empty, "subscriptions": []}));
    // Once every worker has left, nothing is live.
    for owner in ["w1", "w2"] {
        fixture.store.leave(g, "a", owner).await.unwrap();
    }
    assert_eq!(
        fixture.cli(&["leases", g, "-s", "a"]).error(3),
        format!("error: no live leases or workers for subscription \"a\" of group \"{g}\"")
    );
    // A name the store refuses is a usage error, before any lease is read.
    assert!(fixture.cli(&["leases", ""]).error(2).contains("group"));
}

/// One module per backend, one test per aspect in each.
macro_rules! every_backend {
    ($($backend:ident: $variant:expr),* $(,)?) => {$(
        mod $backend {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn tables() {
                super::tables($variant).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn json() {
                super::json($variant).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn nothing_to_show() {
                super::nothing_to_show($variant).await;
            }
        }
    )*};
}

every_backend! {
    postgres: Backend::Postgres,
    mysql: Backend::Mysql,
    sqlite: Backend::Sqlite,
    redis: Backend::Redis,
    redis_cluster: Backend::RedisCluster,
    dynamodb: Backend::DynamoDb,
}
