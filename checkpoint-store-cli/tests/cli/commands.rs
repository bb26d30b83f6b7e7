//! Every command on every backend: output, JSON and exit codes, from seeding a group to
//! purging a retired subscription and starting its name again. One test per command and
//! backend, each in a group of its own, so that one failure does not hide the others.

use checkpoint_core::{Checkpoint, CheckpointAdmin};
use serde_json::json;

use crate::support::{Backend, Fixture, fresh_group};

/// A fixture on `backend` and a fresh group holding `a` (partitions 0 and 1, the second at
/// the highest position) and `b` (partition 0).
async fn seeded(backend: Backend) -> (Fixture, String) {
    let fixture = Fixture::new(backend).await;
    let group = fresh_group("cli");
    fixture
        .store
        .save_all(
            &group,
            &[
                Checkpoint::new("b", 0, 7),
                Checkpoint::new("a", 1, 9_223_372_036_854_775_807),
                Checkpoint::new("a", 0, 100),
            ],
        )
        .await
        .expect("seed");
    (fixture, group)
}

async fn groups_and_list(backend: Backend) {
    let (fixture, group) = seeded(backend).await;
    let g = group.as_str();
    // groups: the group, once; JSON an array of names.
    let groups = fixture.cli(&["groups"]);
    assert_eq!(
        groups.ok().lines().filter(|line| *line == g).count(),
        1,
        "{groups:#?}"
    );
    let names = fixture.cli(&["groups", "--json"]).json();
    assert!(names.as_array().unwrap().contains(&json!(g)), "{names}");

    // list: a table sorted by subscription and partition; JSON; one subscription.
    assert_eq!(
        fixture.cli(&["list", g]).ok(),
        "SUBSCRIPTION  PARTITION             POSITION\n\
         a                     0                  100\n\
         a                     1  9223372036854775807\n\
         b                     0                    7\n"
    );
    assert_eq!(
        fixture.cli(&["list", g, "--json"]).json(),
        json!({"group": g, "retired": [], "checkpoints": [
            {"subscription": "a", "partition": 0, "position": 100},
            {"subscription": "a", "partition": 1, "position": 9_223_372_036_854_775_807_u64},
            {"subscription": "b", "partition": 0, "position": 7},
        ]})
    );
    assert_eq!(
        fixture.cli(&["list", g, "--subscription", "b"]).ok(),
        "SUBSCRIPTION  PARTITION  POSITION\nb                     0         7\n"
    );
}

async fn unknown_names(backend: Backend) {
    let (fixture, group) = seeded(backend).await;
    let g = group.as_str();
    // An unknown group: nothing on standard output, one line, exit 3.
    let unknown = fresh_group("cli-unknown");
    let listed = fixture.cli(&["list", &unknown]);
    assert_eq!(
        listed.error(3),
        format!("error: no checkpoints in group \"{unknown}\"")
    );
    assert_eq!(listed.stdout, "");
    let listed = fixture.cli(&["list", g, "-s", "typo"]);
    assert_eq!(
        listed.error(3),
        format!("error: no checkpoints for subscription \"typo\" of group \"{g}\"")
    );
}

async fn start(backend: Backend) {
    let (fixture, group) = seeded(backend).await;
    let g = group.as_str();
    // start --like copies; a second start of the name is refused.
    assert_eq!(
        fixture.cli(&["start", g, "c", "--like", "a"]).ok(),
        format!(
            "started subscription \"c\" of group \"{g}\" with 2 checkpoints\n\
             SUBSCRIPTION  PARTITION             POSITION\n\
             c                     0                  100\n\
             c                     1  9223372036854775807\n"
        )
    );
    assert_eq!(
        fixture.cli(&["start", g, "c", "--like", "b"]).error(3),
        format!("error: subscription \"c\" of group \"{g}\" already has checkpoints")
    );
    assert_eq!(fixture.store.load(g, "c", 0).await.unwrap(), Some(100));
    // start --at --partitions; --at without partitions is a usage error.
    fixture
        .cli(&["start", g, "d", "--at", "5", "--partitions", "0..3"])
        .ok();
    assert_eq!(fixture.store.load(g, "d", 2).await.unwrap(), Some(5));
    fixture.cli(&["start", g, "e", "--at", "5"]).error(2);
    fixture
        .cli(&[
            "start",
            g,
            "e",
            "--at",
            "9223372036854775808",
            "--partitions",
            "0",
        ])
        .error(2);
}

async fn retire(backend: Backend) {
    let (fixture, group) = seeded(backend).await;
    let g = group.as_str();
    // retire: refused without --yes off a terminal, refused for a typo, then done.
    let refused = fixture.cli(&["retire", g, "a"]);
    assert!(refused.error(2).contains("--yes"), "{refused:#?}");
    assert!(
        fixture
            .cli(&["retire", g, "typo", "--yes"])
            .error(3)
            .contains("--force")
    );
    assert_eq!(fixture.store.load(g, "a", 0).await.unwrap(), Some(100));
    assert_eq!(
        fixture.cli(&["retire", g, "a", "--yes"]).ok(),
        format!(
            "retired subscription \"a\" of group \"{g}\"; purge it once no process can still \
             run under it\n"
        )
    );
    let listing = fixture.cli(&["list", g, "--json"]).json();
    assert_eq!(listing["retired"], json!(["a"]), "{listing}");
    assert!(
        !listing["checkpoints"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["subscription"] == "a"),
        "{listing}"
    );
    assert!(fixture.cli(&["list", g]).ok().ends_with("retired: a\n"));
    assert_eq!(
        fixture.cli(&["retire", g, "a", "--yes"]).ok(),
        format!("subscription \"a\" of group \"{g}\" is already retired\n")
    );
    let listed = fixture.cli(&["list", g, "-s", "a"]);
    assert_eq!(listed.stdout, "retired: a\n");
    listed.error(3);
    assert_eq!(
        fixture.cli(&["start", g, "a", "--like", "b"]).error(3),
        format!(
            "error: subscription \"a\" of group \"{g}\" is retired: purge it before using its \
             name again"
        )
    );
}

async fn purge(backend: Backend) {
    let (fixture, group) = seeded(backend).await;
    let g = group.as_str();
    fixture.store.retire(g, "a").await.expect("retire a");
    // purge: refused on a live name and without --yes; then the name can be started again.
    assert_eq!(
        fixture.cli(&["purge", g, "b", "--yes"]).error(3),
        format!(
            "error: subscription \"b\" of group \"{g}\" is not retired: retire it before purging \
             it"
        )
    );
    assert!(fixture.cli(&["purge", g, "a"]).error(2).contains("--yes"));
    assert_eq!(
        fixture.cli(&["purge", g, "a", "-y"]).ok(),
        format!("purged subscription \"a\" of group \"{g}\"; its name can be used again\n")
    );
    assert_eq!(
        fixture.cli(&["list", g, "--json"]).json()["retired"],
        json!([])
    );
    fixture.cli(&["start", g, "a", "--at", "1=42"]).ok();
    assert_eq!(
        fixture.cli(&["list", g, "-s", "a"]).ok(),
        "SUBSCRIPTION  PARTITION  POSITION\na                     1        42\n"
    );
}

/// One module per backend, one test per command in each.
macro_rules! every_command {
    ($($backend:ident: $variant:expr),* $(,)?) => {$(
        mod $backend {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn groups_and_list() {
                super::groups_and_list($variant).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn unknown_names() {
                super::unknown_names($variant).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn start() {
                super::start($variant).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn retire() {
                super::retire($variant).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn purge() {
                super::purge($variant).await;
            }
        }
    )*};
}

every_command! {
    postgres: Backend::Postgres,
    mysql: Backend::Mysql,
    sqlite: Backend::Sqlite,
    redis: Backend::Redis,
    redis_cluster: Backend::RedisCluster,
    dynamodb: Backend::DynamoDb,
}
