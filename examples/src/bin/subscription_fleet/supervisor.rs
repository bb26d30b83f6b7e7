//! The supervisor: creates the log, runs the writers and the steps, lets one last child catch
//! up, and judges what the children left behind.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use checkpoint_examples::log::{check_source, display_source, open_log, remove_log};
use checkpoint_examples::{check_store, display_store};

use crate::fleet::{Fleet, Setup};
use crate::leases::{Leases, shared_by};
use crate::steps::{self, EXIT_TIMEOUT};
use crate::store::{self, FleetStore};
use crate::verdict::{self, Evidence, Verdict};
use crate::writers::{self, Committed, Log};
use crate::{BoxError, ENTRIES, PARTITIONS, SUBSCRIPTION, WRITE_FOR, evidence, lock, readback};

/// How long the last child may take to handle what is left.
const CATCH_UP_TIMEOUT: Duration = Duration::from_secs(30);

/// What the supervisor is told on its command line.
#[derive(Debug)]
pub struct Options {
    pub store: Option<String>,
    pub source: Option<String>,
    pub summary: Option<PathBuf>,
    /// Freeze a process holding the store file's write lock this long, instead of the kill
    /// and the child's freeze (SQLite only).
    pub freeze_in_write: Option<Duration>,
}

pub async fn run(options: Options) -> Result<(), BoxError> {
    let setup = setup(options.store, options.source)?;
    let shown = (
        display_store(&setup.store).unwrap_or_else(|| "<store>".into()),
        display_source(&setup.source),
    );
    println!(
        "store: {}\nsource: {} (log {}), {PARTITIONS} partitions\ngroup: {}, subscription: {SUBSCRIPTION}\nfiles: {}",
        shown.0,
        shown.1,
        setup.log,
        setup.group,
        setup.dir.display()
    );
    let store = store::open(&setup.store, true).await?;
    let plan = plan(&setup, options.freeze_in_write).await?;
    let started = Instant::now();
    let kept = |error: BoxError| format!("{error}\n(files kept in {})", setup.dir.display());
    let verdict = scenario(&setup, &*store, plan).await.map_err(kept)?;
    let seconds = started.elapsed().as_secs_f64();
    println!("\n── the verdict, after {seconds:.1} s");
    verdict.print();
    if let Some(path) = &options.summary {
        std::fs::write(path, verdict.summary(&shown.0, &shown.1, seconds))?;
    }
    if !verdict.violations.is_empty() {
        return Err(format!(
            "the run broke its promises (files kept in {}):\n  - {}",
            setup.dir.display(),
            verdict.violations.join("\n  - ")
        )
        .into());
    }
    println!(
        "\nevery committed entry handled, none skipped; poison ones parked, never handled; redone only where a kill or a freeze hit{}.",
        if verdict.frozen_in_write {
            ", or behind a process frozen inside a write (it held the file's write lock)"
        } else {
            ""
        }
    );
    if let Some(removed) = remove_log(&setup.source, &setup.log).await? {
        println!("({removed})");
    }
    let _ = std::fs::remove_dir_all(&setup.dir);
    Ok(())
}

/// The run's names and files: the store and the log default to one SQLite file.
fn setup(store: Option<String>, source: Option<String>) -> Result<Setup, BoxError> {
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let dir = std::env::temp_dir().join(format!(
        "checkpoint-subscription-fleet-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir)?;
    let file = format!("sqlite:{}", dir.join("fleet.sqlite3").display());
    let setup = Setup {
        store: store.unwrap_or_else(|| file.clone()),
        source: source.unwrap_or(file),
        log: format!("fleet_{stamp}"),
        group: format!("subscription-fleet-{stamp}"),
        dir,
    };
    // A backend this build left out is named before anything runs, with the flag that adds it.
    check_store(&setup.store)?;
    check_source(&setup.source)?;
    Ok(setup)
}

/// The probe of the store's write lock (SQLite stores only: the file exists, migrated), and
/// the freeze inside a write if asked.
async fn plan(setup: &Setup, freeze_in_write: Option<Duration>) -> Result<steps::Plan, BoxError> {
    let probe = match lock::sqlite_file(&setup.store) {
        Some(file) => Some((file.clone(), lock::Probe::open(&file).await?)),
        None if freeze_in_write.is_some() => {
            return Err("--freeze-in-write-ms needs an SQLite store (sqlite:PATH)".into());
        }
        None => None,
    };
    Ok(steps::Plan {
        probe,
        freeze_in_write,
    })
}

/// Writers and steps at once, then the end of every child, the last child's catch-up, and
/// the verdict on what they left.
async fn scenario(
    setup: &Setup,
    store: &dyn FleetStore,
    mut plan: steps::Plan,
) -> Result<Verdict, BoxError> {
    let log = Arc::new(Log::create(&setup.source, &setup.log).await?);
    println!(
        "{} writers append {ENTRIES} entries over {WRITE_FOR:?}",
        log.writers()
    );
    let writing = tokio::spawn(writers::write(log, ENTRIES, WRITE_FOR));
    let mut fleet = Fleet::new(setup.clone());
    let leases = Leases {
        store,
        group: &setup.group,
    };
    let faults = steps::run(&leases, &mut fleet, &mut plan).await?;
    let steps_while_writing = !writing.is_finished();
    let committed = writing.await??;
    println!(
        "\n── the writers are done: {} entries committed",
        committed.len()
    );
    stop_all(&mut fleet).await?;
    last_child(&leases, &mut fleet, &committed).await?;
    let source = open_log(&setup.source, &setup.log, PARTITIONS).await?;
    let logged = readback::read_all(&*source).await?;
    let mut parked = store.parked(&setup.group).await?;
    parked.retain(|entry| entry.subscription == SUBSCRIPTION);
    let exits = evidence::exits(setup, &fleet.started);
    Ok(verdict::judge(&Evidence {
        logged: &logged,
        committed: &committed,
        handled: &evidence::handled(setup, &fleet.started)?,
        parked: &parked,
        faults: &faults,
        started: fleet.started.len(),
        steps_while_writing,
        exits: &exits,
    }))
}

/// SIGTERM to every child at once, then each must exit 0.
async fn stop_all(fleet: &mut Fleet) -> Result<(), BoxError> {
    println!("\n── SIGTERM every child");
    for id in fleet.running() {
        fleet.signal(&id, "TERM").await?;
    }
    for id in fleet.running() {
        let status = fleet.exited(&id, EXIT_TIMEOUT).await?;
        if !status.success() {
            return Err(format!("{id} exited with {status} after SIGTERM").into());
        }
    }
    Ok(())
}

/// One last child: once it holds every partition (so it is up, its SIGTERM handler in
/// place), until every partition's checkpoint is past its last committed entry (or the
/// deadline: then the verdict names what is missing), then SIGTERM.
async fn last_child(
    leases: &Leases<'_>,
    fleet: &mut Fleet,
    committed: &[Committed],
) -> Result<(), BoxError> {
    println!("\n── one last child, until every committed entry is handled");
    let mut last: BTreeMap<u32, u64> = BTreeMap::new();
    for entry in committed {
        let position = last.entry(entry.partition).or_default();
        *position = (*position).max(entry.position);
    }
    let id = "child-7";
    fleet.start(id)?;
    let children = [id.to_owned()];
    let (_, took) = leases
        .wait_until(fleet, "the last child to hold every partition", |table| {
            shared_by(table, &children)
        })
        .await?;
    println!("   it holds every partition after {took:.1?}");
    let start = Instant::now();
    loop {
        fleet.check_running()?;
        let mut behind = Vec::new();
        for (&partition, &position) in &last {
            let checkpoint = leases
                .store
                .load(leases.group, SUBSCRIPTION, partition)
                .await?;
            if checkpoint.is_none_or(|checkpoint| checkpoint <= position) {
                behind.push(partition);
            }
        }
        if behind.is_empty() {
            println!(
                "   every checkpoint past its last entry after {:.1?}",
                start.elapsed()
            );
            break;
        }
        if start.elapsed() > CATCH_UP_TIMEOUT {
            println!("   still behind after {CATCH_UP_TIMEOUT:?}: partitions {behind:?}");
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    fleet.stop(id, EXIT_TIMEOUT).await
}
