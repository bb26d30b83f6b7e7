//! A worker cut off from its server (PostgreSQL, Redis) by the kit's black-hole proxy stops
//! its partitions at its local deadline; the others take them over after the server expired
//! them, never while the cut-off worker still believes it holds them. Real servers, real time:
//! `DATABASE_URL` and `REDIS_URL` name them (`scripts/test.sh` sets both); a test without its
//! server fails.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use checkpoint_conformance::fresh_group;
use checkpoint_conformance::proxy::Proxy;
use checkpoint_postgres::PostgresCheckpointStore;
use checkpoint_redis::RedisCheckpointStore;
use checkpoint_worker::{Assignment, Worker, WorkerStore};
use tokio::time::Instant;

const PARTITIONS: u32 = 8;
const LEASE: Duration = Duration::from_secs(2);
const RENEW: Duration = Duration::from_millis(250);

/// Every live assignment of every worker, by partition: the witness that at most one worker
/// believes it holds a partition at any instant.
#[derive(Default)]
struct Beliefs {
    held: Mutex<BTreeMap<u32, Vec<(String, Assignment)>>>,
    /// Violations seen: a worker was handed a partition another still believed it held.
    overlaps: Mutex<Vec<String>>,
}

impl Beliefs {
    /// Records `assignment` of `worker`, checking first that nobody else believes it holds it.
    fn handed(&self, worker: &str, assignment: Assignment) {
        let mut held = self.held.lock().unwrap();
        let entry = held.entry(assignment.partition()).or_default();
        for (other, theirs) in entry.iter() {
            if theirs.is_held() {
                self.overlaps.lock().unwrap().push(format!(
                    "{worker} was handed partition {} (epoch {}) while {other} still held it (epoch {})",
                    assignment.partition(),
                    assignment.epoch(),
                    theirs.epoch()
                ));
            }
        }
        entry.push((worker.to_owned(), assignment));
    }

    /// Drops every assignment that was told to stop (nothing is in flight: drained at once),
    /// and returns the partitions each worker holds now.
    fn settle(&self) -> BTreeMap<String, Vec<u32>> {
        let mut held = self.held.lock().unwrap();
        let mut by_worker: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for (partition, assignments) in held.iter_mut() {
            assignments.retain(|(_, assignment)| assignment.stop().is_none());
            for (worker, _) in assignments.iter() {
                by_worker
                    .entry(worker.clone())
                    .or_default()
                    .push(*partition);
            }
        }
        by_worker
    }
}

fn start(store: Arc<dyn WorkerStore>, group: &str, id: &str, beliefs: &Arc<Beliefs>) -> Worker {
    let (worker, mut assignments) = Worker::builder(store, group, "orders", PARTITIONS)
        .worker_id(id)
        .lease_duration(LEASE)
        .renew_interval(RENEW)
        .start()
        .expect("valid settings");
    let beliefs = Arc::clone(beliefs);
    let id = id.to_owned();
    tokio::spawn(async move {
        while let Some(assignment) = assignments.next().await {
            beliefs.handed(&id, assignment);
        }
    });
    worker
}

/// Waits until `done` holds for what the workers hold, or panics after `within`.
async fn until(
    beliefs: &Beliefs,
    within: Duration,
    what: &str,
    done: impl Fn(&BTreeMap<String, Vec<u32>>) -> bool,
) -> Duration {
    let started = Instant::now();
    loop {
        let held = beliefs.settle();
        if done(&held) {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < within,
            "{what} within {within:?}: holders {held:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The scenario: `cut` (reaching the server through `proxy`) and two direct workers balance
/// 8 partitions; the proxy turns into a black hole; `cut`'s assignments are lost at its
/// deadline and the others own all 8 within the lease plus a renew interval (and a second of
/// allowance for a loaded machine); the network comes back and `cut` rejoins.
async fn cut_off_worker_stops_and_the_others_take_over(
    direct: Arc<dyn WorkerStore>,
    through_proxy: Arc<dyn WorkerStore>,
    proxy: &Proxy,
) {
    let group = fresh_group("worker-black-hole");
    let beliefs = Arc::new(Beliefs::default());
    let cut = start(through_proxy, &group, "cut", &beliefs);
    let b = start(Arc::clone(&direct), &group, "b", &beliefs);
    let c = start(direct, &group, "c", &beliefs);
    let balanced = |held: &BTreeMap<String, Vec<u32>>| {
        held.len() == 3 && held.values().all(|p| (2..=3).contains(&p.len()))
    };
    until(&beliefs, Duration::from_secs(10), "balanced", balanced).await;
    let cut_held = beliefs.settle().remove("cut").unwrap_or_default();

    proxy.black_hole();
    let took_over = until(
        &beliefs,
        LEASE + RENEW + Duration::from_secs(1),
        "taken over",
        |held| !held.contains_key("cut") && held.values().map(Vec::len).sum::<usize>() == 8,
    )
    .await;
    let stats = cut.stats();
    assert_eq!(stats.losses as usize, cut_held.len(), "{stats:?}");
    assert!(stats.held.is_empty(), "{stats:?}");
    eprintln!(
        "cut-off worker held {cut_held:?}; all 8 owned by the others {took_over:?} after the black hole"
    );

    proxy.forward();
    until(
        &beliefs,
        Duration::from_secs(10),
        "rebalanced after the network came back",
        balanced,
    )
    .await;
    let overlaps = beliefs.overlaps.lock().unwrap().clone();
    assert!(overlaps.is_empty(), "{overlaps:#?}");
    for worker in [&b, &c, &cut] {
        worker.shutdown().await.expect("a graceful shutdown");
    }
}

fn url(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} must name a server (scripts/test.sh sets it): this test needs a real one")
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_cut_off_worker_stops_and_the_others_take_over() {
    let url = url("DATABASE_URL");
    let direct = PostgresCheckpointStore::connect(&url)
        .await
        .expect("connecting");
    direct.migrate().await.expect("migrating");
    let options: sqlx::postgres::PgConnectOptions = url.parse().expect("a PostgreSQL URL");
    let proxy = Proxy::start((options.get_host().to_owned(), options.get_port()))
        .await
        .expect("starting a proxy");
    let through_proxy = options
        .host(&proxy.local_addr().ip().to_string())
        .port(proxy.local_addr().port());
    let cut = PostgresCheckpointStore::connect_with(through_proxy)
        .await
        .expect("connecting through the proxy")
        .with_timeout(Duration::from_millis(500))
        .expect("a valid timeout");
    cut_off_worker_stops_and_the_others_take_over(Arc::new(direct), Arc::new(cut), &proxy).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_a_cut_off_worker_stops_and_the_others_take_over() {
    let url = url("REDIS_URL");
    let direct = RedisCheckpointStore::connect(&url)
        .await
        .expect("connecting");
    let address = url
        .trim_start_matches("redis://")
        .trim_end_matches('/')
        .to_owned();
    let proxy = Proxy::start(address).await.expect("starting a proxy");
    let cut = RedisCheckpointStore::connect(&format!("redis://{}", proxy.local_addr()))
        .await
        .expect("connecting through the proxy")
        .with_timeout(Duration::from_millis(200))
        .expect("a valid timeout");
    cut_off_worker_stops_and_the_others_take_over(Arc::new(direct), Arc::new(cut), &proxy).await;
}
