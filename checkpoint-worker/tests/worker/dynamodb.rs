//! Workers on DynamoDB, the store without a clock: a crashed worker's partitions are taken over
//! once the survivors' store instances have watched its heartbeat stand still for the lease
//! duration. On dynalite (`DYNALITE_ENDPOINT`, which `scripts/test.sh` sets; the test fails
//! without it), each worker with a store instance of its own, as the lease contract requires.

use std::time::Duration;

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use checkpoint_conformance::fresh_group;
use checkpoint_core::LeaseStore;
use checkpoint_dynamodb::DynamoDbCheckpointStore;
use checkpoint_worker::Worker;
use tokio::time::Instant;

const PARTITIONS: u32 = 8;
const LEASE: Duration = Duration::from_secs(2);
const RENEW: Duration = Duration::from_millis(250);

/// A store instance of its own on `table` (one per worker).
fn instance(endpoint: &str, table: &str) -> DynamoDbCheckpointStore {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "static"))
        .build();
    DynamoDbCheckpointStore::new(aws_sdk_dynamodb::Client::from_conf(config))
        .with_table(table)
        .expect("a valid table name")
}

fn start(store: DynamoDbCheckpointStore, id: &str) -> Worker {
    let (worker, mut assignments) = Worker::builder(store, "g", "orders", PARTITIONS)
        .worker_id(id)
        .lease_duration(LEASE)
        .renew_interval(RENEW)
        .start()
        .expect("valid settings");
    // Nothing to process: each assignment is held until it is told to stop.
    tokio::spawn(async move {
        while let Some(assignment) = assignments.next().await {
            tokio::spawn(async move {
                assignment.stopped().await;
            });
        }
    });
    worker
}

/// Polls the table until `done` holds of the owners per partition, or panics after `within`.
async fn until(
    store: &DynamoDbCheckpointStore,
    within: Duration,
    what: &str,
    done: impl Fn(&[String]) -> bool,
) -> Duration {
    let started = Instant::now();
    loop {
        let table = store
            .leases("g", "orders")
            .await
            .expect("reading the leases");
        let owners: Vec<String> = table.leases.iter().map(|l| l.owner.clone()).collect();
        if table.leases.len() == PARTITIONS as usize && done(&owners) {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < within,
            "{what} within {within:?}: {table:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_a_crashed_workers_partitions_are_taken_over() {
    let endpoint = std::env::var("DYNALITE_ENDPOINT").unwrap_or_else(|_| {
        panic!("DYNALITE_ENDPOINT must name dynalite (`eval \"$(scripts/services/dynalite.sh up)\"`; scripts/test.sh sets it)")
    });
    let table = fresh_group("workers");
    let observer = instance(&endpoint, &table);
    observer.create_table().await.expect("creating the table");
    let a = start(instance(&endpoint, &table), "a");
    let b = start(instance(&endpoint, &table), "b");
    let c = start(instance(&endpoint, &table), "c");
    let count = |owners: &[String], who: &str| owners.iter().filter(|o| *o == who).count();
    until(&observer, Duration::from_secs(15), "balanced", |owners| {
        ["a", "b", "c"]
            .iter()
            .all(|w| (2..=3).contains(&count(owners, w)))
    })
    .await;

    c.crash();
    // The survivors first see c's heartbeat at their next round, then must watch it stand
    // still for the lease duration on their own clocks before acquiring: the lease, two renew
    // intervals, and a second of allowance for the emulator.
    let bound = LEASE + 2 * RENEW + Duration::from_secs(1);
    let took = until(&observer, bound, "taken over", |owners| {
        count(owners, "c") == 0 && count(owners, "a") == 4
    })
    .await;
    eprintln!("dynamodb: c's partitions taken over {took:?} after the crash");
    for worker in [&a, &b] {
        worker.shutdown().await.expect("a graceful shutdown");
    }
    let left = observer
        .leases("g", "orders")
        .await
        .expect("reading the leases");
    assert!(
        left.leases.iter().all(|lease| lease.owner == "c"),
        "{left:?}"
    );
}
