//! The supervisor: starts the worker processes, stops them in every way a worker stops, prints
//! who owns what after each step, and judges the result.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use checkpoint_core::CheckpointStore;
use checkpoint_examples::sqlite_lock::{Probe, sqlite_file};
use checkpoint_examples::{check_store, display_store, open_store};

use crate::completions::{self, unix_micros};
use crate::fleet::Fleet;
use crate::ownership::{Owners, balanced, describe, held_by, taken_from};
use crate::synthetic::{self, PARTITIONS};
use crate::verdict::{self, Stops};
use crate::{BoxError, SUBSCRIPTION, renew_interval};

/// How long the workers may take to finish the log once the last step is done.
const FINISH_TIMEOUT: Duration = Duration::from_secs(60);
/// A graceful shutdown drains and hands over: a few renew intervals, far below this.
const EXIT_TIMEOUT: Duration = Duration::from_secs(15);

/// What the supervisor is told on its command line.
#[derive(Debug)]
pub struct Options {
    pub store: Option<String>,
    pub summary: Option<PathBuf>,
    /// Passed on to every worker process (`--write-delay-ms`).
    pub write_delay: Duration,
    /// Passed on to every worker process (`--lease-ms`).
    pub lease: Duration,
}

/// A run's place on disk: the SQLite store when none was given, and the completion log.
struct Scratch {
    dir: PathBuf,
    store: String,
    completions: PathBuf,
}

/// Timings the summary reports, in milliseconds.
type Timings = Vec<(&'static str, u128)>;

pub async fn run(options: Options) -> Result<(), BoxError> {
    check_store_option(options.store.as_deref())?;
    let scratch = scratch(options.store.as_deref())?;
    let shown = display_store(&scratch.store).unwrap_or_else(|| "<store>".into());
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let group = format!("lease-handover-{stamp}");
    println!(
        "store: {shown}\ngroup: {group}, subscription: {SUBSCRIPTION}, {PARTITIONS} partitions of {} sparse entries",
        synthetic::ENTRIES_PER_PARTITION
    );
    println!(
        "leases of {:?}, renewed every {:?}; completion log: {}",
        options.lease,
        renew_interval(options.lease),
        scratch.completions.display()
    );
    if !options.write_delay.is_zero() {
        println!(
            "every checkpoint write of the workers slowed by {:?}",
            options.write_delay
        );
    }
    println!();
    let store = open_store(&scratch.store).await?;
    let owners = Owners {
        store: &*store,
        group: &group,
    };
    let mut fleet = Fleet::new(
        &scratch.store,
        &group,
        &scratch.completions,
        options.write_delay,
        options.lease,
    );
    let started = Instant::now();
    let kept = |error: BoxError| format!("{error}\n(files kept in {})", scratch.dir.display());
    let (stops, timings) = scenario(&owners, &mut fleet, &scratch.store)
        .await
        .map_err(kept)?;
    let checkpoints = stored(&*store, &group).await?;
    let verdict = verdict::judge(
        &completions::read(&scratch.completions)?,
        &stops,
        &checkpoints,
    );
    let seconds = started.elapsed().as_secs_f64();
    println!("\n── the verdict, after {seconds:.1} s");
    verdict.print();
    if let Some(path) = &options.summary {
        let mut summary = verdict.summary(&shown, seconds);
        summary.push_str(&format!(
            "write_delay_ms={}\n",
            options.write_delay.as_millis()
        ));
        for (key, millis) in &timings {
            summary.push_str(&format!("{key}_ms={millis}\n"));
        }
        std::fs::write(path, summary)?;
    }
    let violations = verdict.violations();
    if !violations.is_empty() {
        return Err(format!(
            "the run broke its promises (files kept in {}):\n  - {}",
            scratch.dir.display(),
            violations.join("\n  - ")
        )
        .into());
    }
    println!(
        "\nevery entry completed, none skipped; only the killed and the frozen worker's entries were redone; no other lease was lost."
    );
    let _ = std::fs::remove_dir_all(&scratch.dir);
    Ok(())
}

/// Refuses, before anything runs, a store the workers cannot share: a backend this build left
/// out (named with the flag that adds it) or the in-memory store.
fn check_store_option(store: Option<&str>) -> Result<(), BoxError> {
    let Some(store) = store else {
        return Ok(());
    };
    check_store(store)?;
    if store == "memory" {
        return Err("the workers are processes: they cannot share an in-memory store".into());
    }
    Ok(())
}

/// On an SQLite store, a probe of the file's write lock, asked when a worker is frozen.
async fn lock_probe(store: &str) -> Result<Option<Probe>, BoxError> {
    match sqlite_file(store) {
        Some(file) => Ok(Some(Probe::open(&file).await?)),
        None => Ok(None),
    }
}

fn scratch(store: Option<&str>) -> Result<Scratch, BoxError> {
    let dir =
        std::env::temp_dir().join(format!("checkpoint-lease-handover-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let store = match store {
        Some(store) => store.to_owned(),
        None => format!("sqlite:{}", dir.join("checkpoints.sqlite3").display()),
    };
    let completions = dir.join("completions.log");
    Ok(Scratch {
        dir,
        store,
        completions,
    })
}

/// The steps, each printed with the lease table it ends on.
async fn scenario(
    owners: &Owners<'_>,
    fleet: &mut Fleet,
    store: &str,
) -> Result<(Stops, Timings), BoxError> {
    let mut probe = lock_probe(store).await?;
    let mut stops = Stops {
        started_at: unix_micros(),
        ..Stops::default()
    };
    let mut timings = Timings::new();
    start_four(owners, fleet).await?;
    timings.push((
        "takeover_after_kill",
        kill_one(owners, fleet, &mut stops).await?,
    ));
    timings.push((
        "takeover_after_freeze",
        freeze_one(owners, fleet, &mut stops, probe.as_mut()).await?,
    ));
    timings.push((
        "graceful_shutdown",
        stop_one_gracefully(owners, fleet).await?,
    ));
    start_two_more(owners, fleet).await?;
    finish(owners, fleet).await?;
    Ok((stops, timings))
}

fn step(title: &str) {
    println!("\n── {title}");
}

async fn start_four(owners: &Owners<'_>, fleet: &mut Fleet) -> Result<(), BoxError> {
    step("start 4 workers");
    for id in ["worker-1", "worker-2", "worker-3", "worker-4"] {
        let pid = fleet.start(id)?;
        println!("   {id}: pid {pid}");
    }
    let workers = ["worker-1", "worker-2", "worker-3", "worker-4"];
    let (table, took) = owners
        .wait_until(fleet, "4 workers with 2 partitions each", |t| {
            balanced(t, &workers)
        })
        .await?;
    println!("   balanced after {took:.1?}:\n{}", describe(&table));
    Ok(())
}

/// SIGKILL: no handover, no goodbye. Its leases expire; the others take them.
async fn kill_one(
    owners: &Owners<'_>,
    fleet: &mut Fleet,
    stops: &mut Stops,
) -> Result<u128, BoxError> {
    let id = "worker-1";
    step(&format!("SIGKILL {id}"));
    let killed_at = Instant::now();
    fleet.signal(id, "KILL").await?;
    stops.faulted.insert(id.to_owned());
    fleet.exited(id, EXIT_TIMEOUT).await?;
    // Dead: what it held now is exactly what the kill ended.
    let held = held_by(&owners.read().await?, id);
    stops
        .killed
        .extend(held.iter().map(|&(p, e)| (id.to_owned(), p, e)));
    println!(
        "   it held {}; they expire with its lease",
        partitions(&held)
    );
    let workers = ["worker-2", "worker-3", "worker-4"];
    let (table, _) = owners
        .wait_until(fleet, "the others to take its partitions", |t| {
            taken_from(t, id, &held) && balanced(t, &workers)
        })
        .await?;
    let took = killed_at.elapsed();
    println!(
        "   taken over and balanced {took:.1?} after the kill (lease {:?}):\n{}",
        fleet.lease(),
        describe(&table)
    );
    Ok(took.as_millis())
}

/// How many times a freeze is tried again when the worker froze inside a write.
const FREEZE_ATTEMPTS: u32 = 5;
/// Probes of the write lock that must all find it held to say the worker froze inside a write
/// (a live worker's transaction holds it a few milliseconds), and the pause between them.
const LOCK_PROBES: u32 = 3;
const LOCK_PROBE_EVERY: Duration = Duration::from_millis(50);

/// SIGSTOP `id` and let a request it sent just before land (then what it holds is what it holds
/// while frozen); returns when the freeze began. On an SQLite store, a worker frozen inside a
/// write transaction keeps the file's one write lock, and nobody can take its partitions until
/// it wakes (`checkpoint-sqlite`'s crate doc, "Many processes on one file"; the
/// `subscription_fleet` example's `--freeze-in-write-ms` shows that case on purpose): this
/// scenario is about a zombie past its lease, so such a freeze is ended at once (well within
/// the lease's slack: it costs nothing) and tried again.
async fn freeze_outside_a_write(
    fleet: &mut Fleet,
    id: &str,
    mut probe: Option<&mut Probe>,
) -> Result<Instant, BoxError> {
    for attempt in 1..=FREEZE_ATTEMPTS {
        let frozen_at = Instant::now();
        fleet.signal(id, "STOP").await?;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let Some(probe) = probe.as_deref_mut() else {
            return Ok(frozen_at);
        };
        if !holds_the_write_lock(probe).await? {
            return Ok(frozen_at);
        }
        println!(
            "   froze inside a write (the file's write lock held through {LOCK_PROBES} probes): SIGCONT, then freeze again ({attempt} of {FREEZE_ATTEMPTS})"
        );
        fleet.signal(id, "CONT").await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    Err(format!("{id} froze inside a write {FREEZE_ATTEMPTS} times in a row").into())
}

/// Whether every one of [`LOCK_PROBES`] probes finds the write lock held.
async fn holds_the_write_lock(probe: &mut Probe) -> Result<bool, BoxError> {
    for probed in 0..LOCK_PROBES {
        if probed > 0 {
            tokio::time::sleep(LOCK_PROBE_EVERY).await;
        }
        if !probe.locked().await? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// SIGSTOP until the others have taken its partitions (so past its lease's deadline), then
/// SIGCONT: a zombie that must find out before it acts, then rejoins.
async fn freeze_one(
    owners: &Owners<'_>,
    fleet: &mut Fleet,
    stops: &mut Stops,
    probe: Option<&mut Probe>,
) -> Result<u128, BoxError> {
    let id = "worker-2";
    step(&format!("SIGSTOP {id}, past its lease, then SIGCONT"));
    stops.faulted.insert(id.to_owned());
    let frozen_at = freeze_outside_a_write(fleet, id, probe).await?;
    let held = held_by(&owners.read().await?, id);
    stops
        .frozen
        .extend(held.iter().map(|&(p, e)| (id.to_owned(), p, e)));
    println!("   frozen, holding {}", partitions(&held));
    let (table, _) = owners
        .wait_until(
            fleet,
            "the others to take the frozen worker's partitions",
            |t| taken_from(t, id, &held),
        )
        .await?;
    let took = frozen_at.elapsed();
    println!(
        "   taken over {took:.1?} after the freeze:\n{}",
        describe(&table)
    );
    stops.woken_at = unix_micros();
    fleet.signal(id, "CONT").await?;
    println!("   SIGCONT {id}: a zombie now, which must find its leases gone before it acts");
    let workers = ["worker-2", "worker-3", "worker-4"];
    let (table, rejoined) = owners
        .wait_until(fleet, "the zombie to rejoin", |t| balanced(t, &workers))
        .await?;
    println!(
        "   rejoined and balanced {rejoined:.1?} after waking:\n{}",
        describe(&table)
    );
    Ok(took.as_millis())
}

/// SIGTERM: the worker hands every partition over (drained, final checkpoint, release), leaves,
/// and exits.
async fn stop_one_gracefully(owners: &Owners<'_>, fleet: &mut Fleet) -> Result<u128, BoxError> {
    let id = "worker-3";
    step(&format!("SIGTERM {id} (graceful: worker.shutdown())"));
    let sent = Instant::now();
    fleet.signal(id, "TERM").await?;
    let status = fleet.exited(id, EXIT_TIMEOUT).await?;
    let took = sent.elapsed();
    if !status.success() {
        return Err(format!("{id} failed its graceful shutdown: {status}").into());
    }
    let workers = ["worker-2", "worker-4"];
    let (table, balanced_after) = owners
        .wait_until(fleet, "the two left to share everything", |t| {
            balanced(t, &workers)
        })
        .await?;
    println!(
        "   exited {took:.1?} after SIGTERM; balanced {balanced_after:.1?} later:\n{}",
        describe(&table)
    );
    Ok(took.as_millis())
}

async fn start_two_more(owners: &Owners<'_>, fleet: &mut Fleet) -> Result<(), BoxError> {
    step("start 2 more workers");
    for id in ["worker-5", "worker-6"] {
        let pid = fleet.start(id)?;
        println!("   {id}: pid {pid}");
    }
    let workers = ["worker-2", "worker-4", "worker-5", "worker-6"];
    let (table, took) = owners
        .wait_until(fleet, "4 workers with 2 partitions each", |t| {
            balanced(t, &workers)
        })
        .await?;
    println!(
        "   handed over and balanced after {took:.1?}:\n{}",
        describe(&table)
    );
    Ok(())
}

/// Waits until every partition's checkpoint is at the end of its log, then shuts every worker
/// down gracefully.
async fn finish(owners: &Owners<'_>, fleet: &mut Fleet) -> Result<(), BoxError> {
    step("wait for the end of the log, then SIGTERM everyone");
    let start = Instant::now();
    loop {
        fleet.check_running()?;
        let checkpoints = stored(owners.store, owners.group).await?;
        if (0..PARTITIONS)
            .all(|p| checkpoints.get(&p).copied().flatten() == Some(synthetic::end(p)))
        {
            break;
        }
        if start.elapsed() > FINISH_TIMEOUT {
            return Err(format!(
                "the log was not finished within {FINISH_TIMEOUT:?}: checkpoints {checkpoints:?}"
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!(
        "   every checkpoint at the end of its log {:.1?} later",
        start.elapsed()
    );
    for id in fleet.running() {
        fleet.signal(&id, "TERM").await?;
    }
    for id in fleet.running() {
        let status = fleet.exited(&id, EXIT_TIMEOUT).await?;
        if !status.success() {
            return Err(format!("{id} failed its graceful shutdown: {status}").into());
        }
    }
    Ok(())
}

async fn stored(
    store: &dyn CheckpointStore,
    group: &str,
) -> Result<BTreeMap<u32, Option<u64>>, BoxError> {
    let mut stored = BTreeMap::new();
    for partition in 0..PARTITIONS {
        stored.insert(partition, store.load(group, SUBSCRIPTION, partition).await?);
    }
    Ok(stored)
}

fn partitions(held: &[(u32, u64)]) -> String {
    if held.is_empty() {
        return "nothing".to_owned();
    }
    held.iter()
        .map(|(p, e)| format!("p{p} (epoch {e})"))
        .collect::<Vec<_>>()
        .join(", ")
}
