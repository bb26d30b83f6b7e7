//! Leases under contention: 24 clients, each a store with a pool of its own (`support::store`),
//! fight over the 32 partitions of one subscription for a few seconds with short leases. Each
//! client loops over acquire (a random few partitions), renew, release, now and then leave,
//! request a handover, or pause for longer than its lease (so that leases expire and change
//! hands); a 25th client reads `leases` all along.
//!
//! Asserted: no call fails with an error that is not retryable (InnoDB's deadlocks among the
//! lease transactions are run again by the store, up to 5 runs; one that outlasts them is a
//! retryable error, counted and printed, not a failure of the test); the kit's lease checker
//! (`check_lease_history`) finds no two owners believing they held a partition at once, no
//! epoch granted to two owners and no grant with a lower epoch after a higher one; every grant
//! and every `leases` snapshot agrees on which owner has which epoch, the snapshots' epochs never
//! go down and list a partition at most once; after every client has left, no lease and no owner
//! is live; and the whole run ends (bounded by a timeout: no hang). The figures are printed (run
//! with `--nocapture`): calls per operation, retryable failures, renews refused with `NotHeld`,
//! grants, and the server's deadlock counter over the run (server-wide: it counts the other
//! tests' deadlocks too; each of the clients' is one rerun by the store).
//!
//! A second test makes the race the stress run can meet happen every time: a renew held up
//! (by a row lock, as contention does) until its lease has expired and another owner has been
//! granted it must not report the lease as its owner's.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use checkpoint_conformance::history::leases::HISTORY_LEASE;
use checkpoint_conformance::history::{LeaseEvent, LeaseOutcome, check_lease_history};
use checkpoint_conformance::{error_chain, fresh_group};
use checkpoint_core::{Error, LeaseStore};
use checkpoint_mysql::MysqlCheckpointStore;
use tokio::task::JoinSet;

use crate::support;

const CLIENTS: usize = 24;
const PARTITIONS: u32 = 32;
/// How long the clients run.
const RUN: Duration = Duration::from_secs(6);
/// The bound of the whole test: past it, something hangs.
const BOUND: Duration = Duration::from_secs(60);
/// The lease of every call: the kit's checker judges holders' beliefs by this duration. At
/// 300 ms, a client that pauses for longer loses its leases to others by expiry.
const LEASE: Duration = HISTORY_LEASE;
const SUBSCRIPTION: &str = "orders";

/// A small generator (xorshift64*), seeded per client: the test needs no other crate.
struct Rng(u64);

impl Rng {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % bound
    }

    /// `1..=most` distinct partitions, sorted.
    fn partitions(&mut self, most: u64) -> Vec<u32> {
        let count = 1 + self.below(most);
        let mut chosen: Vec<u32> = (0..count)
            .map(|_| self.below(u64::from(PARTITIONS)) as u32)
            .collect();
        chosen.sort_unstable();
        chosen.dedup();
        chosen
    }
}

/// The operations a client calls, for the figures.
const OPERATIONS: [&str; 5] = ["acquire", "renew", "release", "leave", "request_handover"];

/// One client's figures.
#[derive(Debug, Default)]
struct Tally {
    /// Calls per operation.
    calls: BTreeMap<&'static str, u64>,
    /// Retryable failures per operation.
    retryable: BTreeMap<&'static str, u64>,
    /// Of those, InnoDB deadlocks (1213) that outlasted the store's runs of the call.
    deadlocked: BTreeMap<&'static str, u64>,
    /// Renews refused with `NotHeld` (the owner's heartbeat had expired): an answer, not a
    /// failure.
    not_held: u64,
    /// Errors that are not retryable: each one fails the test.
    wrong: Vec<String>,
    /// Retryable failures' texts (a few).
    samples: Vec<String>,
}

impl Tally {
    fn failed(&mut self, operation: &'static str, error: &Error) {
        if error.is_retryable() {
            *self.retryable.entry(operation).or_default() += 1;
            let chain = error_chain(error);
            if chain.contains("1213 (40001)") {
                *self.deadlocked.entry(operation).or_default() += 1;
            }
            if self.samples.len() < 3 {
                self.samples.push(chain);
            }
        } else {
            self.wrong
                .push(format!("{operation}: {}", error_chain(error)));
        }
    }

    /// Adds a client's figures to these.
    fn add(&mut self, tally: Tally) {
        for (operation, calls) in tally.calls {
            *self.calls.entry(operation).or_default() += calls;
        }
        for (operation, failures) in tally.retryable {
            *self.retryable.entry(operation).or_default() += failures;
        }
        for (operation, failures) in tally.deadlocked {
            *self.deadlocked.entry(operation).or_default() += failures;
        }
        self.not_held += tally.not_held;
        self.wrong.extend(tally.wrong);
        self.samples.extend(tally.samples);
    }
}

/// Every epoch seen, by grants and by snapshots: `(partition, epoch) -> owner`, and the
/// conflicts found.
#[derive(Debug, Default)]
struct Epochs {
    owners: HashMap<(u32, u64), String>,
    conflicts: Vec<String>,
}

impl Epochs {
    fn saw(&mut self, partition: u32, epoch: u64, owner: &str, by: &str) {
        let known = self
            .owners
            .entry((partition, epoch))
            .or_insert_with(|| owner.to_owned());
        if known != owner && self.conflicts.len() < 10 {
            self.conflicts.push(format!(
                "partition {partition}: epoch {epoch} of {known}, and of {owner} in {by}"
            ));
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One client of the stress run: its store and name, and what it believes, saw and counted.
struct Client {
    store: MysqlCheckpointStore,
    group: String,
    owner: String,
    rng: Rng,
    events: Vec<LeaseEvent>,
    tally: Tally,
    /// The partitions it believes it holds.
    held: Vec<u32>,
    all: Vec<u32>,
}

/// One client's loop until `until`: its events and figures.
async fn client(
    store: MysqlCheckpointStore,
    group: String,
    index: usize,
    until: Instant,
    epochs: Arc<Mutex<Epochs>>,
) -> (Vec<LeaseEvent>, Tally) {
    let owner = format!("w{index:02}");
    let mut client = Client {
        store,
        group,
        owner,
        rng: Rng(0x9e37_79b9_7f4a_7c15 ^ ((index as u64 + 1) << 17) ^ fastish_seed()),
        events: Vec::new(),
        tally: Tally::default(),
        held: Vec::new(),
        all: (0..PARTITIONS).collect(),
    };
    while Instant::now() < until {
        let Some(operation) = client.pick_operation() else {
            // Longer than the lease: the others may take what this client held.
            tokio::time::sleep(LEASE + Duration::from_millis(50)).await;
            continue;
        };
        *client.tally.calls.entry(operation).or_default() += 1;
        let sent = Instant::now();
        let Some(outcome) = client.call(operation).await else {
            continue;
        };
        let received = Instant::now();
        client.believe(operation, &outcome, &epochs);
        client.events.push(LeaseEvent {
            owner: client.owner.clone(),
            sent,
            received,
            outcome,
        });
        tokio::time::sleep(Duration::from_millis(client.rng.below(15))).await;
    }
    client.leave_until_acknowledged().await;
    (client.events, client.tally)
}

impl Client {
    /// The next operation, at random; `None` for a pause longer than the lease.
    fn pick_operation(&mut self) -> Option<&'static str> {
        let roll = self.rng.below(100);
        match roll {
            0..35 => Some("acquire"),
            35..65 => Some("renew"),
            65..85 => Some("release"),
            85..90 => Some("leave"),
            90..95 => Some("request_handover"),
            _ => None,
        }
    }

    /// One call of `operation` and what the client believes of its answer; `None` when there
    /// was nothing to release (the call is not counted then).
    async fn call(&mut self, operation: &'static str) -> Option<LeaseOutcome> {
        match operation {
            "acquire" => Some(self.acquire(operation).await),
            "renew" => Some(self.renew(operation).await),
            "release" => self.release(operation).await,
            "leave" => {
                if let Err(error) = self
                    .store
                    .leave(&self.group, SUBSCRIPTION, &self.owner)
                    .await
                {
                    self.tally.failed(operation, &error);
                }
                Some(LeaseOutcome::Released(self.all.clone()))
            }
            _ => {
                let wanted = self.rng.partitions(2);
                if let Err(error) = self
                    .store
                    .request_handover(&self.group, SUBSCRIPTION, &self.owner, &wanted)
                    .await
                {
                    self.tally.failed(operation, &error);
                }
                Some(LeaseOutcome::Nothing)
            }
        }
    }

    async fn acquire(&mut self, operation: &'static str) -> LeaseOutcome {
        let wanted = self.rng.partitions(6);
        match self
            .store
            .acquire(&self.group, SUBSCRIPTION, &self.owner, &wanted, LEASE)
            .await
        {
            Ok(acquired) => {
                for refused in &acquired.refused {
                    assert!(wanted.contains(refused), "refused {refused} not asked for");
                }
                LeaseOutcome::Held(acquired.granted)
            }
            Err(error) => {
                self.tally.failed(operation, &error);
                LeaseOutcome::Nothing
            }
        }
    }

    async fn renew(&mut self, operation: &'static str) -> LeaseOutcome {
        match self
            .store
            .renew(&self.group, SUBSCRIPTION, &self.owner, LEASE)
            .await
        {
            Ok(leases) => LeaseOutcome::Held(leases),
            Err(Error::NotHeld { .. }) => {
                self.tally.not_held += 1;
                LeaseOutcome::Nothing
            }
            Err(error) => {
                self.tally.failed(operation, &error);
                LeaseOutcome::Nothing
            }
        }
    }

    async fn release(&mut self, operation: &'static str) -> Option<LeaseOutcome> {
        let rng = &mut self.rng;
        // Mostly what it holds, sometimes anything.
        let chosen: Vec<u32> = if self.held.is_empty() || rng.below(4) == 0 {
            rng.partitions(4)
        } else {
            self.held
                .iter()
                .copied()
                .filter(|_| rng.below(2) == 0)
                .collect()
        };
        if chosen.is_empty() {
            *self.tally.calls.entry(operation).or_default() -= 1;
            return None;
        }
        if let Err(error) = self
            .store
            .release(&self.group, SUBSCRIPTION, &self.owner, &chosen)
            .await
        {
            self.tally.failed(operation, &error);
        }
        // Whatever its reply, the client stops believing once it has sent it.
        Some(LeaseOutcome::Released(chosen))
    }

    /// What the client holds after `outcome`; the epochs it was granted go into `epochs`.
    fn believe(&mut self, operation: &str, outcome: &LeaseOutcome, epochs: &Mutex<Epochs>) {
        match outcome {
            LeaseOutcome::Held(leases) => {
                self.held = leases.iter().map(|lease| lease.partition).collect();
                let mut epochs = lock(epochs);
                for lease in leases {
                    epochs.saw(lease.partition, lease.epoch, &self.owner, operation);
                }
            }
            LeaseOutcome::Released(partitions) => self.held.retain(|p| !partitions.contains(p)),
            LeaseOutcome::Nothing => {}
        }
    }

    /// The end: leave, until it is acknowledged (at most 10 attempts, and none after an error
    /// that is not retryable).
    async fn leave_until_acknowledged(&mut self) {
        let mut attempts = 0;
        loop {
            *self.tally.calls.entry("leave").or_default() += 1;
            let sent = Instant::now();
            match self
                .store
                .leave(&self.group, SUBSCRIPTION, &self.owner)
                .await
            {
                Ok(_) => {
                    self.events.push(LeaseEvent {
                        owner: self.owner.clone(),
                        sent,
                        received: Instant::now(),
                        outcome: LeaseOutcome::Released(self.all.clone()),
                    });
                    break;
                }
                Err(error) => {
                    self.tally.failed("leave", &error);
                    attempts += 1;
                    if !error.is_retryable() || attempts >= 10 {
                        break;
                    }
                }
            }
        }
    }
}

/// Some bits that differ between runs.
fn fastish_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_nanos() as u64)
        .unwrap_or(0)
}

/// The monitor: `leases` every 20 ms until `until`. Per partition, the epochs of successive
/// snapshots never go down, and a partition is listed at most once in a snapshot. Returns how
/// many snapshots it read, their retryable failures, and what went wrong.
async fn monitor(
    store: MysqlCheckpointStore,
    group: String,
    until: Instant,
    epochs: Arc<Mutex<Epochs>>,
) -> (u64, u64, Vec<String>) {
    let mut last: BTreeMap<u32, (u64, String)> = BTreeMap::new();
    let (mut snapshots, mut retryable, mut wrong) = (0, 0, Vec::new());
    while Instant::now() < until {
        match store.leases(&group, SUBSCRIPTION).await {
            Ok(table) => {
                snapshots += 1;
                let partitions: Vec<u32> = table.leases.iter().map(|l| l.partition).collect();
                if partitions.windows(2).any(|pair| pair[0] >= pair[1]) {
                    wrong.push(format!(
                        "a snapshot lists a partition twice: {partitions:?}"
                    ));
                }
                let mut epochs = lock(&epochs);
                for lease in &table.leases {
                    epochs.saw(lease.partition, lease.epoch, &lease.owner, "leases");
                    if let Some((epoch, owner)) = last.get(&lease.partition)
                        && (*epoch > lease.epoch
                            || (*epoch == lease.epoch && owner != &lease.owner))
                    {
                        wrong.push(format!(
                            "partition {}: a snapshot showed epoch {epoch} of {owner}, a later \
                             one epoch {} of {}",
                            lease.partition, lease.epoch, lease.owner
                        ));
                    }
                    last.insert(lease.partition, (lease.epoch, lease.owner.clone()));
                }
            }
            Err(error) if error.is_retryable() => retryable += 1,
            Err(error) => wrong.push(format!("leases: {}", error_chain(&error))),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (snapshots, retryable, wrong)
}

/// The server's deadlock counter (server-wide).
async fn deadlocks() -> u64 {
    let mut admin = support::admin_connection().await;
    let (_, value): (String, String) = sqlx::query_as("SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'")
        .fetch_one(&mut admin)
        .await
        .unwrap();
    value.parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_under_24_contending_clients() {
    let started = Instant::now();
    let outcome = tokio::time::timeout(BOUND, run()).await;
    assert!(
        outcome.is_ok(),
        "the stress run did not end within {BOUND:?}: something hangs"
    );
    eprintln!("lease stress: {:?} in all", started.elapsed());
}

async fn run() {
    let group = fresh_group("stress");
    let mut contention = contend(&group).await;
    let epochs = print_figures(&mut contention);
    let Contention {
        events,
        total,
        snapshots,
        snapshot_wrong,
        ..
    } = contention;
    assert!(
        total.wrong.is_empty(),
        "calls failed with errors that are not retryable: {:#?}",
        total.wrong
    );
    assert!(snapshot_wrong.is_empty(), "{snapshot_wrong:#?}");
    assert!(epochs.conflicts.is_empty(), "{:#?}", epochs.conflicts);
    assert!(snapshots > 0, "no leases snapshot succeeded");
    assert!(
        epochs.owners.len() > PARTITIONS as usize,
        "the partitions should have changed hands: only {} epochs granted",
        epochs.owners.len()
    );
    let checking = Instant::now();
    check_lease_history(&events).unwrap_or_else(|failure| panic!("{failure}"));
    eprintln!("the kit's lease checker took {:?}", checking.elapsed());

    // Everyone has left: nothing is live.
    let store = support::store().await;
    let table = store.leases(&group, SUBSCRIPTION).await.unwrap();
    assert!(
        table.leases.is_empty() && table.owners.is_empty(),
        "after every client left: {table:?}"
    );
}

/// What a run of the clients and the monitor left: the clients' events and figures summed, how
/// long they ran, the monitor's figures, the server's deadlocks meanwhile and every epoch seen.
struct Contention {
    events: Vec<LeaseEvent>,
    total: Tally,
    ran: Duration,
    snapshots: u64,
    snapshot_failures: u64,
    snapshot_wrong: Vec<String>,
    deadlocks: u64,
    epochs: Arc<Mutex<Epochs>>,
}

/// The clients and the monitor on `group`, each with a store of its own, until `RUN` is over.
async fn contend(group: &str) -> Contention {
    let mut opening = JoinSet::new();
    for _ in 0..=CLIENTS {
        opening.spawn(support::store());
    }
    let stores = opening.join_all().await;
    let deadlocks_before = deadlocks().await;
    let epochs = Arc::new(Mutex::new(Epochs::default()));
    let began = Instant::now();
    let until = began + RUN;
    let mut clients = JoinSet::new();
    let mut stores = stores.into_iter();
    let watcher = tokio::spawn(monitor(
        stores.next().unwrap(),
        group.to_owned(),
        until,
        Arc::clone(&epochs),
    ));
    for (index, store) in stores.enumerate() {
        clients.spawn(client(
            store,
            group.to_owned(),
            index,
            until,
            Arc::clone(&epochs),
        ));
    }
    let mut events = Vec::new();
    let mut total = Tally::default();
    for (client_events, tally) in clients.join_all().await {
        events.extend(client_events);
        total.add(tally);
    }
    let ran = began.elapsed();
    let (snapshots, snapshot_failures, snapshot_wrong) = watcher.await.unwrap();
    let deadlocks = deadlocks().await - deadlocks_before;
    Contention {
        events,
        total,
        ran,
        snapshots,
        snapshot_failures,
        snapshot_wrong,
        deadlocks,
        epochs,
    }
}

/// Prints the run's figures; answers every epoch seen, taken out of `contention`.
fn print_figures(contention: &mut Contention) -> Epochs {
    let Contention {
        events,
        total,
        ran,
        snapshots,
        snapshot_failures,
        deadlocks,
        ..
    } = contention;
    let grants = events
        .iter()
        .filter_map(|event| match &event.outcome {
            LeaseOutcome::Held(leases) => Some(leases.len()),
            _ => None,
        })
        .sum::<usize>();
    let epochs = std::mem::take(&mut *lock(&contention.epochs));
    let highest = epochs
        .owners
        .keys()
        .map(|(_, epoch)| *epoch)
        .max()
        .unwrap_or(0);
    let calls: u64 = total.calls.values().sum();
    for operation in OPERATIONS {
        total.calls.entry(operation).or_default();
    }
    eprintln!(
        "{CLIENTS} clients, {PARTITIONS} partitions, {LEASE:?} leases, {ran:?}: {calls} calls \
         {:?} ({:.0}/s); retryable failures {:?} (of them deadlocks that outlasted the store's 5 runs {:?}), e.g. \
         {:?}; renews refused NotHeld {}; {} \
         leases reported held over {} replies, {} distinct (partition, epoch), highest epoch \
         {highest}; {snapshots} leases snapshots ({snapshot_failures} failed retryably); \
         Innodb_deadlocks +{deadlocks} on the server meanwhile (server-wide)",
        total.calls,
        calls as f64 / ran.as_secs_f64(),
        total.retryable,
        total.deadlocked,
        total.samples.first(),
        total.not_held,
        grants,
        events.len(),
        epochs.owners.len(),
    );
    epochs
}

/// The race the stress test can meet, made to happen every time: owner `a` sends a renew while
/// its lease is live, and the renew is held up (here by a row lock on `a`'s heartbeat, as
/// contention does) until the lease has expired on the server and `b` has been granted it
/// under a new epoch. The renew must not then report the lease as `a`'s: `a` would believe it
/// holds the partition until `holder_deadline(sent, duration)`, while `b` holds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renew_overtaken_by_a_grant_does_not_report_the_lease() {
    const LEASE: Duration = Duration::from_millis(300);
    let a = support::store().await;
    let b = support::store().await;
    let group = fresh_group("overtaken");
    let acquired_at = Instant::now();
    let first = a
        .acquire(&group, SUBSCRIPTION, "a", &[18], LEASE)
        .await
        .unwrap();
    // The server read its clock between the send and the reply: the lease expires within
    // LEASE of the reply, and not before LEASE after the send.
    let answered = Instant::now();
    assert_eq!(first.granted.len(), 1);

    let mut holder = support::admin_connection().await;
    sqlx::raw_sql("BEGIN").execute(&mut holder).await.unwrap();
    let owner: Vec<u8> = sqlx::query_scalar(
        "SELECT owner FROM checkpoints_lease_owners WHERE group_name = ? AND subscription = ? \
         AND owner = 'a' FOR UPDATE",
    )
    .bind(&group)
    .bind(SUBSCRIPTION)
    .fetch_one(&mut holder)
    .await
    .unwrap();
    assert_eq!(owner, b"a");

    // Sent while the lease is live.
    tokio::time::sleep_until((answered + Duration::from_millis(120)).into()).await;
    let renewing = {
        let (a, group) = (a.clone(), group.clone());
        tokio::spawn(async move {
            let sent = Instant::now();
            let renewed = a.renew(&group, SUBSCRIPTION, "a", LEASE).await;
            (sent, renewed, Instant::now())
        })
    };
    // Expired on the server: `b` is granted it.
    tokio::time::sleep_until((answered + LEASE + Duration::from_millis(30)).into()).await;
    let taken = b
        .acquire(&group, SUBSCRIPTION, "b", &[18], LEASE)
        .await
        .unwrap();
    assert_eq!(
        taken.granted.len(),
        1,
        "b should be granted the expired lease: {taken:?}"
    );
    assert!(taken.granted[0].epoch > first.granted[0].epoch);
    sqlx::raw_sql("ROLLBACK")
        .execute(&mut holder)
        .await
        .unwrap();

    let (sent, renewed, received) = renewing.await.unwrap();
    let table = b.leases(&group, SUBSCRIPTION).await.unwrap();
    eprintln!(
        "a's renew sent {:?} after its acquire, answered {:?} later: {renewed:?}; b was granted \
         {:?}; leases() now: {:?}",
        sent - acquired_at,
        received - sent,
        taken.granted,
        table.leases
    );
    if let Ok(leases) = &renewed {
        let believed = checkpoint_core::lease::holder_deadline(sent, LEASE);
        assert!(
            leases.iter().all(|lease| lease.partition != 18),
            "a's renew reports partition 18 held under epoch {}, so a would believe it holds it \
             for {:?} after the reply, but b was granted it under epoch {} before the renew \
             extended anything, and leases() shows {:?}",
            leases[0].epoch,
            believed.saturating_duration_since(received),
            taken.granted[0].epoch,
            table.leases
        );
    }
}
