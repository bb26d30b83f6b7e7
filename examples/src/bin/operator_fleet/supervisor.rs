//! The supervisor: creates the log and the store, runs the writers and the children, kills
//! `killed`, says `ready` once the scenario stands, and stops everything on SIGTERM, Ctrl-C or
//! `--seconds`.

use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use checkpoint_connect::Store;
use checkpoint_examples::display_store;
use checkpoint_examples::log::display_source;
use tokio::process::{Child, Command};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::writer::{self, Log};
use crate::{BoxError, PARTITIONS, STUCK_PARTITION, SUBSCRIPTIONS};

/// How long `killed` runs before its SIGKILL: time to write a checkpoint on every partition.
const KILL_AFTER: Duration = Duration::from_secs(4);
/// How long `ready` waits once the scenario stands, so that a monitor started then sees it
/// hold, not its first second.
const SETTLE: Duration = Duration::from_secs(3);
/// How long the scenario may take to stand before the run fails.
const ESTABLISH_TIMEOUT: Duration = Duration::from_secs(30);
/// The PostgreSQL log's table (SQLite's log has a file of its own, and the default table).
#[cfg(feature = "source-postgres")]
const SERVER_LOG: &str = "operator_fleet_events";

/// What the supervisor is told on its command line.
#[derive(Debug)]
pub struct Options {
    pub dir: Option<PathBuf>,
    pub store: Option<String>,
    pub source: Option<String>,
    pub group: String,
    pub run_for: Option<Duration>,
}

/// Where the fleet's store and log are.
struct Setup {
    store: String,
    source: String,
    log: String,
    group: String,
    dir: PathBuf,
}

pub async fn run(options: Options) -> Result<(), BoxError> {
    // Before anything else: a SIGTERM while the store opens must still kill the children.
    let stop = stop_signal()?;
    let setup = setup(&options)?;
    introduce(&setup);
    let store: Arc<dyn Store> = Arc::from(checkpoint_examples::open_url(&setup.store, true).await?);
    // A server keeps the group of an earlier run: its checkpoints would be ahead of the new log.
    for name in SUBSCRIPTIONS {
        store.retire(&setup.group, name).await?;
        store.purge(&setup.group, name).await?;
    }
    let log = Arc::new(Log::create(&setup.source, &setup.log).await?);
    let stuck_at = Arc::new(OnceLock::new());
    let mut fleet = Fleet {
        writers: writer::start(log, Arc::clone(&stuck_at)),
        children: Vec::new(),
    };
    for name in SUBSCRIPTIONS {
        fleet.start(&setup, name)?;
    }
    let forever = Duration::from_secs(u64::from(u32::MAX));
    let outcome = tokio::select! {
        outcome = scenario(&mut fleet, &*store, &setup.group, &stuck_at) => outcome,
        () = stop => Ok("stopped by a signal"),
        () = tokio::time::sleep(options.run_for.unwrap_or(forever)) => Ok("--seconds passed"),
    };
    // SIGKILL: `stuck` could never drain its partition 2 for a graceful stop.
    for (_, child) in &mut fleet.children {
        let _ = child.kill().await;
    }
    drop(fleet);
    println!("{}: children killed", outcome?);
    if options.dir.is_none() && setup.store.starts_with("sqlite:") {
        let _ = std::fs::remove_dir_all(&setup.dir);
    }
    Ok(())
}

/// The store and the log: two SQLite files in `--dir` (made anew) unless given.
fn setup(options: &Options) -> Result<Setup, BoxError> {
    let dir = options.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("checkpoint-operator-fleet-{}", std::process::id()))
    });
    std::fs::create_dir_all(&dir)?;
    let file = |name: &str| {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(dir.join(format!("{name}{suffix}")));
        }
        format!("sqlite:{}", dir.join(name).display())
    };
    let store = options
        .store
        .clone()
        .unwrap_or_else(|| file("store.sqlite3"));
    let source = options
        .source
        .clone()
        .unwrap_or_else(|| file("log.sqlite3"));
    checkpoint_examples::check_store(&store)?;
    checkpoint_examples::log::check_source(&source)?;
    let log = match source.starts_with("sqlite:") {
        true => checkpoint_source_sqlite::DEFAULT_TABLE.to_owned(),
        #[cfg(feature = "source-postgres")]
        false => SERVER_LOG.to_owned(),
        #[cfg(not(feature = "source-postgres"))]
        false => return Err("the operator fleet's log is sqlite: or postgres://".into()),
    };
    Ok(Setup {
        store,
        source,
        log,
        group: options.group.clone(),
        dir,
    })
}

/// What runs, and the commands to watch it with.
fn introduce(setup: &Setup) {
    let store = display_store(&setup.store).unwrap_or_else(|| "<store>".into());
    // As the store's URL is shown, with its user (which display_source leaves out, as it may be
    // a NATS token): the command must reach the log as the same user.
    let source = match setup.source.starts_with("sqlite:") {
        true => setup.source.clone(),
        false => display_store(&setup.source).unwrap_or_else(|| display_source(&setup.source)),
    };
    let note = match (store == setup.store, source == setup.source) {
        (true, true) => "",
        _ => "   # with the passwords put back in the URLs",
    };
    let table = match setup.log == checkpoint_source_sqlite::DEFAULT_TABLE {
        true => String::new(),
        false => format!(" --source-table {}", setup.log),
    };
    let group = &setup.group;
    println!(
        "operator fleet: group {group}, subscriptions {} (a process each), a log of {PARTITIONS} partitions, 20 entries/s each\nstore:  {store}\nsource: {source} (table {})\n\nwatch it from another terminal (cargo run -p checkpoint-store-cli -- … without an installed `checkpoint`):\n  checkpoint --url '{store}' status {group} --source '{source}'{table} --watch{note}\n  checkpoint --url '{store}' check {group} --source '{source}'{table}{note}\n  checkpoint --url '{store}' serve {group} --source '{source}'{table}{note}   # http://127.0.0.1:9460/\n",
        SUBSCRIPTIONS.join(", "),
        setup.log,
    );
}

/// The writers and the children, watched: a writer that fails or a child that exits unasked
/// fails the run.
struct Fleet {
    writers: JoinSet<Result<(), BoxError>>,
    children: Vec<(String, Child)>,
}

impl Fleet {
    fn start(&mut self, setup: &Setup, name: &str) -> Result<(), BoxError> {
        // Linux's /proc/self/exe is this very binary even after a build replaced the file on
        // disk (current_exe then names a deleted file, which cannot be started).
        let proc_exe = std::path::Path::new("/proc/self/exe");
        let exe = match proc_exe.exists() {
            true => proc_exe.to_owned(),
            false => std::env::current_exe()?,
        };
        let child = Command::new(exe)
            .args([
                "--child",
                name,
                "--store",
                &setup.store,
                "--source",
                &setup.source,
            ])
            .args(["--log", &setup.log, "--group", &setup.group])
            // Open while the supervisor lives: a child exits when it closes.
            .stdin(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        self.children.push((name.to_owned(), child));
        Ok(())
    }

    fn check(&mut self) -> Result<(), BoxError> {
        for (name, child) in &mut self.children {
            if let Some(status) = child.try_wait()? {
                return Err(format!("{name} exited on its own ({status})").into());
            }
        }
        if let Some(ended) = self.writers.try_join_next() {
            ended??;
            return Err("a writer ended".into());
        }
        Ok(())
    }

    /// Sleeps `duration`, checking the fleet every 250 ms.
    async fn sleep(&mut self, duration: Duration) -> Result<(), BoxError> {
        let until = Instant::now() + duration;
        while Instant::now() < until {
            self.check()?;
            tokio::time::sleep_until(until.min(Instant::now() + Duration::from_millis(250))).await;
        }
        self.check()
    }
}

/// Kills `killed` once it has checkpoints, waits for the scenario to stand, says `ready`, and
/// runs until stopped (the caller's signal or `--seconds`).
async fn scenario(
    fleet: &mut Fleet,
    store: &dyn Store,
    group: &str,
    stuck_at: &OnceLock<u64>,
) -> Result<&'static str, BoxError> {
    fleet.sleep(KILL_AFTER).await?;
    let index = fleet.children.iter().position(|(name, _)| name == "killed");
    let (_, mut killed) = fleet.children.remove(index.ok_or("no killed child")?);
    killed.kill().await?;
    println!("killed: SIGKILLed; its leases expire within 2 s, its partitions then stopped");
    let deadline = Instant::now() + ESTABLISH_TIMEOUT;
    while !established(store, group, stuck_at.get().copied()).await? {
        if Instant::now() > deadline {
            return Err(format!("the scenario did not stand within {ESTABLISH_TIMEOUT:?}").into());
        }
        fleet.sleep(Duration::from_millis(250)).await?;
    }
    fleet.sleep(SETTLE).await?;
    println!("ready");
    std::io::stdout().flush()?;
    loop {
        fleet.sleep(Duration::from_secs(1)).await?;
    }
}

/// Whether the scenario stands: `killed` holds no lease any more, every other subscription
/// holds all its partitions, and `stuck`'s checkpoint on its stuck partition is at the entry
/// its handler never returns from.
async fn established(
    store: &dyn Store,
    group: &str,
    stuck_at: Option<u64>,
) -> Result<bool, BoxError> {
    for name in SUBSCRIPTIONS {
        let held = store.leases(group, name).await?.leases.len();
        let expected = if name == "killed" {
            0
        } else {
            PARTITIONS as usize
        };
        if held != expected {
            return Ok(false);
        }
    }
    let stuck = store.load(group, "stuck", STUCK_PARTITION).await?;
    Ok(stuck.is_some() && stuck == stuck_at)
}

/// Resolves at Ctrl-C (SIGINT) or SIGTERM; both handlers installed when called.
fn stop_signal() -> Result<impl Future<Output = ()>, BoxError> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
        }
    })
}
