//! A child process: one `Subscription` over the log, whose handler appends `id pid ms` (ms: when,
//! since the Unix epoch) to the
//! process's own file and fails on poison entries (retried, then parked in the store).
//! SIGTERM (or the supervisor's end: its stdin closes) shuts it down gracefully, then it
//! writes its stats beside its file and exits 0.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use checkpoint_core::source::Entry;
use checkpoint_subscription::{HandlerResult, OnPoison, Retry, Subscription};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::oneshot;

use crate::{BoxError, LEASE, PARTITIONS, SUBSCRIPTION, payload, store};

/// Retries: three runs in all, pauses of 5-20 ms, so that a poison entry is parked quickly.
const RETRY_FIRST: Duration = Duration::from_millis(10);
const RETRY_MAX: Duration = Duration::from_millis(20);
const ATTEMPTS: u32 = 3;

/// What a child is told on its command line.
#[derive(Debug)]
pub struct ChildArgs {
    pub store: String,
    pub source: String,
    pub log: String,
    pub group: String,
    pub id: String,
    /// Its own file of handled entries; its stats go beside it (`.exit`).
    pub handled: PathBuf,
}

/// Runs the subscription until SIGTERM (or the supervisor's end), then shuts it down.
pub async fn run(args: ChildArgs) -> Result<(), BoxError> {
    // Before anything else: a SIGTERM while the store opens must not kill the process the
    // default way, without a handover.
    let mut terminate = signal(SignalKind::terminate())?;
    let orphaned = supervisor_gone();
    let store = store::open(&args.store, false).await?;
    let source = checkpoint_examples::log::open_log(&args.source, &args.log, PARTITIONS).await?;
    let file = Arc::new(Mutex::new(
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(&args.handled)?,
    ));
    let pid = std::process::id();
    let handler = move |entry: Arc<Entry>| handle(entry, Arc::clone(&file), pid);
    let subscription = Subscription::builder(Arc::clone(&store), source, &args.group, SUBSCRIPTION)
        .handler(handler)
        .retry(Retry::exponential(RETRY_FIRST, RETRY_MAX).attempts(ATTEMPTS))
        .on_poison(OnPoison::park(Arc::clone(&store)))
        .worker(|worker| worker.worker_id(&args.id).lease_duration(LEASE))
        .start()?;
    let why = tokio::select! {
        _ = terminate.recv() => "SIGTERM",
        _ = orphaned => "the supervisor is gone",
    };
    println!(
        "      [{}] {why}: shutting down (hands every partition over)",
        args.id
    );
    subscription.shutdown().await?;
    let stats = subscription.stats();
    let exit = format!(
        "handled={}\nretries={}\nparked={}\nlosses={}\nhandovers_out={}\ndrain_timeouts={}\n",
        stats.handled,
        stats.retries,
        stats.parked,
        stats.worker.losses,
        stats.worker.handovers_out,
        stats.worker.drain_timeouts
    );
    std::fs::write(exit_path(&args.handled), &exit)?;
    println!(
        "      [{}] shut down: {}",
        args.id,
        exit.trim_end().replace('\n', ", ")
    );
    Ok(())
}

/// Where a child writes its stats as it exits, beside its file of handled entries.
pub fn exit_path(handled: &Path) -> PathBuf {
    handled.with_extension("exit")
}

/// The handler: a little work (0-3 ms, so that entries finish out of order), then the line;
/// a poison entry fails every time, before any line.
async fn handle(entry: Arc<Entry>, file: Arc<Mutex<File>>, pid: u32) -> HandlerResult {
    let (id, poison) = payload::decode(&entry.payload)
        .ok_or_else(|| format!("a payload of no writer of ours at {}", entry.position))?;
    if poison {
        return Err(format!("entry {id} is poison").into());
    }
    tokio::time::sleep(Duration::from_micros(
        id.wrapping_mul(2_654_435_761) % 3_000,
    ))
    .await;
    // One write per line on an unbuffered file: each line reaches the file as it is handled,
    // so a SIGKILL loses none that counted.
    let mut file = file.lock().unwrap_or_else(PoisonError::into_inner);
    file.write_all(format!("{id} {pid} {}\n", crate::lock::wall_ms()).as_bytes())?;
    Ok(())
}

/// Resolves when the supervisor is gone (the child's stdin closes).
fn supervisor_gone() -> oneshot::Receiver<()> {
    let (gone, receiver) = oneshot::channel();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
        let _ = gone.send(());
    });
    receiver
}
