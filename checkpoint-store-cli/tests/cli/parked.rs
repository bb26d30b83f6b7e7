//! `checkpoint parked` (the listing, `retry`, `drop`) and `checkpoint status` on every
//! backend: entries parked and leases acquired with the library in this process, read and
//! acted on by the command in another, the effects read back through the store.

use std::time::{Duration, UNIX_EPOCH};

use checkpoint_core::parked::{ParkedEntry, ParkedStore};
use checkpoint_core::{CheckpointStore, LeaseStore};
use serde_json::{Value, json};

use crate::support::{Backend, Fixture, fresh_group};

/// Long enough that nothing expires while the test runs.
const HOUR: Duration = Duration::from_secs(3600);

/// 2026-12-03T19:25:26.042Z.
const PARKED_AT_MS: u64 = 1_796_325_926_042;

/// An error of two lines, its first longer than the table shows.
fn long_error() -> String {
    format!("{}\nsecond line", "é".repeat(150))
}

/// A fresh group on `backend` with three parked entries: `a`'s at partition 1, positions 7
/// (the long error, 12 attempts) and 41 (retry requested), and `b`'s at partition 0, position
/// 3; all parked at [`PARKED_AT_MS`].
async fn parked(backend: Backend) -> (Fixture, String) {
    let fixture = Fixture::new(backend).await;
    let group = fresh_group("cli-parked");
    let g = group.as_str();
    for (subscription, position, error, attempts) in [
        ("b", 3, "timeout".to_owned(), 5),
        ("a", 41, "no such customer".to_owned(), 5),
        ("a", 7, long_error(), 12),
    ] {
        let partition = u32::from(subscription == "a");
        let mut entry = ParkedEntry::new(subscription, partition, position, error, attempts);
        entry.parked_at = UNIX_EPOCH + Duration::from_millis(PARKED_AT_MS);
        fixture.store.park(g, &entry).await.expect("park");
    }
    let requested = fixture.store.retry_parked(g, "a", 1, 41).await.unwrap();
    assert!(requested);
    (fixture, group)
}

/// The `(subscription, partition, position, retry requested)` of every entry parked in `group`,
/// read through the store.
async fn stored(fixture: &Fixture, group: &str) -> Vec<(String, u32, u64, bool)> {
    let entries = fixture.store.parked(group).await.expect("parked");
    entries
        .into_iter()
        .map(|e| (e.subscription, e.partition, e.position, e.retry_requested))
        .collect()
}

fn key(subscription: &str, partition: u32, position: u64, retry: bool) -> (String, u32, u64, bool) {
    (subscription.to_owned(), partition, position, retry)
}

async fn listing(backend: Backend) {
    let (fixture, group) = parked(backend).await;
    let g = group.as_str();
    let cut = format!("{}…", "é".repeat(99));
    let at = "2026-12-03T19:25:26.042Z";
    let output = fixture.cli(&["parked", g]);
    let header = "SUBSCRIPTION  PARTITION  POSITION  ATTEMPTS  PARKED AT                 \
                  RETRY REQUESTED  ERROR";
    assert_eq!(
        output.ok(),
        format!(
            "{header}\n\
             a                     1         7        12  {at}  no               {cut}\n\
             a                     1        41         5  {at}  yes              no such customer\n\
             b                     0         3         5  {at}  no               timeout\n"
        ),
        "{output:#?}"
    );
    let value = fixture.cli(&["parked", g, "--json"]).json();
    let entry = |subscription: &str,
                 partition: u32,
                 position: u64,
                 attempts: u32,
                 retry: bool,
                 error: &str| {
        json!({"subscription": subscription, "partition": partition, "position": position,
               "attempts": attempts, "parked_at": at, "parked_at_ms": PARKED_AT_MS,
               "retry_requested": retry, "error": error})
    };
    assert_eq!(
        value,
        json!({"group": g, "parked": [
            entry("a", 1, 7, 12, false, &long_error()),
            entry("a", 1, 41, 5, true, "no such customer"),
            entry("b", 0, 3, 5, false, "timeout"),
        ]})
    );
    let only_b = fixture
        .cli(&["parked", g, "--subscription", "b", "--json"])
        .json();
    assert_eq!(
        only_b["parked"].as_array().map(Vec::len),
        Some(1),
        "{only_b}"
    );
    assert_eq!(only_b["parked"][0]["subscription"], "b", "{only_b}");
}

async fn nothing_parked(backend: Backend) {
    let (fixture, group) = parked(backend).await;
    let g = group.as_str();
    let empty = fresh_group("cli-parked-empty");
    let output = fixture.cli(&["parked", &empty]);
    assert_eq!(
        output.error(3),
        format!("error: no parked entries in group \"{empty}\"")
    );
    assert_eq!(output.stdout, "");
    let output = fixture.cli(&["parked", &empty, "--json"]);
    output.error(3);
    assert_eq!(output.json(), json!({"group": empty, "parked": []}));
    let output = fixture.cli(&["parked", g, "-s", "typo"]);
    assert_eq!(
        output.error(3),
        format!("error: no parked entries for subscription \"typo\" of group \"{g}\"")
    );
    // A name the store refuses is a usage error.
    assert!(fixture.cli(&["parked", ""]).error(2).contains("group"));
}

async fn retry(backend: Backend) {
    let (fixture, group) = parked(backend).await;
    let g = group.as_str();
    assert_eq!(
        fixture.cli(&["parked", "retry", g, "b", "0", "3"]).ok(),
        format!(
            "asked for a retry of the parked entry at position 3 of partition 0 of subscription \
             \"b\" of group \"{g}\": the subscription that holds the partition runs its handler \
             on it again, and removes the record when it succeeds\n"
        )
    );
    assert_eq!(
        stored(&fixture, g).await,
        [
            key("a", 1, 7, false),
            key("a", 1, 41, true),
            key("b", 0, 3, true)
        ]
    );
    // Nothing parked there (another partition): refused, nothing changed.
    assert_eq!(
        fixture.cli(&["parked", "retry", g, "a", "0", "7"]).error(3),
        format!(
            "error: nothing is parked at position 7 of partition 0 of subscription \"a\" of \
             group \"{g}\" (checkpoint parked \"{g}\" lists what is)"
        )
    );
    assert_eq!(stored(&fixture, g).await[0], key("a", 1, 7, false));
    // A position no store keeps is a usage error.
    fixture
        .cli(&["parked", "retry", g, "a", "1", "9223372036854775808"])
        .error(2);
}

async fn drop_entry(backend: Backend) {
    let (fixture, group) = parked(backend).await;
    let g = group.as_str();
    // Off a terminal, drop needs --yes: refused before connecting, nothing removed.
    let refused = fixture.cli(&["parked", "drop", g, "a", "1", "7"]);
    assert!(refused.error(2).contains("--yes"), "{refused:#?}");
    assert_eq!(stored(&fixture, g).await.len(), 3);
    assert_eq!(
        fixture
            .cli(&["parked", "drop", g, "a", "1", "7", "--yes"])
            .ok(),
        format!(
            "dropped the parked entry at position 7 of partition 1 of subscription \"a\" of \
             group \"{g}\"\n"
        )
    );
    assert_eq!(
        stored(&fixture, g).await,
        [key("a", 1, 41, true), key("b", 0, 3, false)]
    );
    // Dropped already: refused, the others untouched.
    let again = fixture.cli(&["parked", "drop", g, "a", "1", "7", "-y"]);
    assert!(
        again
            .error(3)
            .starts_with("error: nothing is parked at position 7 of partition 1"),
        "{again:#?}"
    );
    assert_eq!(stored(&fixture, g).await.len(), 2);
}

/// `a`: checkpoints on 0 and 1, `w1` holds 1 and 2; the three parked entries of [`parked`];
/// `quiet`: only a lease (partition 4, `w3`). Returns the epochs of `a`'s partitions 1 and 2.
async fn statused(backend: Backend) -> (Fixture, String, [u64; 2]) {
    let (fixture, group) = parked(backend).await;
    let g = group.as_str();
    let store = &fixture.store;
    store.save(g, "a", 0, 10).await.expect("seed");
    store
        .save(g, "a", 1, 9_223_372_036_854_775_807)
        .await
        .expect("seed");
    let acquired = store.acquire(g, "a", "w1", &[1, 2], HOUR).await.unwrap();
    assert_eq!(acquired.granted.len(), 2, "{acquired:?}");
    store.acquire(g, "quiet", "w3", &[4], HOUR).await.unwrap();
    let epochs = [acquired.granted[0].epoch, acquired.granted[1].epoch];
    (fixture, group, epochs)
}

async fn status(backend: Backend) {
    let (fixture, group, [e1, e2]) = statused(backend).await;
    let g = group.as_str();
    let output = fixture.cli(&["status", g]);
    let rows: Vec<Vec<&str>> = output
        .ok()
        .lines()
        .map(|line| line.split_whitespace().collect())
        .collect();
    let (e1, e2) = (e1.to_string(), e2.to_string());
    // `b` has only parked entries; `quiet` shows only when named.
    let expected: [&[&str]; 5] = [
        &[
            "SUBSCRIPTION",
            "PARTITION",
            "POSITION",
            "OWNER",
            "EPOCH",
            "PARKED",
        ],
        &["a", "0", "10", "-", "-", "0"],
        &["a", "1", "9223372036854775807", "w1", &e1, "2"],
        &["a", "2", "-", "w1", &e2, "0"],
        &["b", "0", "-", "-", "-", "1"],
    ];
    assert_eq!(rows, expected, "{output:#?}");
    let value = fixture.cli(&["status", g, "--json"]).json();
    let row = |s: &str, p: u32, position: Value, owner: Value, epoch: Value, parked: u32| {
        json!({"subscription": s, "partition": p, "position": position, "owner": owner,
               "epoch": epoch, "parked": parked})
    };
    assert_eq!(
        value,
        json!({"group": g, "partitions": [
            row("a", 0, json!(10), Value::Null, Value::Null, 0),
            row("a", 1, json!(9_223_372_036_854_775_807_u64), json!("w1"), json!(e1.parse::<u64>().unwrap()), 2),
            row("a", 2, Value::Null, json!("w1"), json!(e2.parse::<u64>().unwrap()), 0),
            row("b", 0, Value::Null, Value::Null, Value::Null, 1),
        ]})
    );
    let quiet = fixture.cli(&["status", g, "-s", "quiet", "--json"]).json();
    assert_eq!(
        quiet["partitions"].as_array().map(Vec::len),
        Some(1),
        "{quiet}"
    );
    assert_eq!(quiet["partitions"][0]["partition"], 4, "{quiet}");
    assert_eq!(quiet["partitions"][0]["owner"], "w3", "{quiet}");
    // Once the worker leaves, its partitions show unowned; a drop shows in the count.
    fixture.store.leave(g, "a", "w1").await.unwrap();
    fixture
        .cli(&["parked", "drop", g, "a", "1", "41", "--yes"])
        .ok();
    let a = fixture.cli(&["status", g, "-s", "a"]);
    assert_eq!(
        a.ok(),
        "SUBSCRIPTION  PARTITION             POSITION  OWNER  EPOCH  PARKED\n\
         a                     0                   10  -          -       0\n\
         a                     1  9223372036854775807  -          -       1\n",
        "{a:#?}"
    );
}

async fn status_of_nothing(backend: Backend) {
    let (fixture, group, _) = statused(backend).await;
    let g = group.as_str();
    let empty = fresh_group("cli-status-empty");
    let output = fixture.cli(&["status", &empty]);
    assert!(
        output.error(3).starts_with(&format!(
            "error: no checkpoints, live leases or parked entries in group \"{empty}\" ("
        )),
        "{output:#?}"
    );
    assert_eq!(output.stdout, "");
    let output = fixture.cli(&["status", &empty, "--json"]);
    output.error(3);
    assert_eq!(output.json(), json!({"group": empty, "partitions": []}));
    assert_eq!(
        fixture.cli(&["status", g, "-s", "typo"]).error(3),
        format!(
            "error: no checkpoints, live leases or parked entries for subscription \"typo\" of \
             group \"{g}\""
        )
    );
    assert!(fixture.cli(&["status", ""]).error(2).contains("group"));
}

/// One module per backend, one test per aspect in each.
macro_rules! every_backend {
    ($($backend:ident: $variant:expr),* $(,)?) => {$(
        mod $backend {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn listing() {
                super::listing($variant).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn nothing_parked() {
                super::nothing_parked($variant).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn retry() {
                super::retry($variant).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn drop() {
                super::drop_entry($variant).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn status() {
                super::status($variant).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn status_of_nothing() {
                super::status_of_nothing($variant).await;
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
