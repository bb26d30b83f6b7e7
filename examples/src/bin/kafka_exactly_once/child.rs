//! A child process: one subscription of the run over the topic, with its engine's
//! transactional handler, until SIGTERM or the supervisor's end (its stdin closes); then a
//! graceful shutdown (its partitions handed over) and exit 0. A SIGKILL gives it no chance to
//! do anything: what it had not committed is lost with its connection, as it should be.

use std::sync::Arc;

use checkpoint_core::source::Source;
use checkpoint_source_kafka::{KafkaSource, KafkaSourceConfig};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::oneshot;

use crate::BoxError;
use crate::engine::Db;

/// What a child is told on its command line.
#[derive(Debug)]
pub struct ChildArgs {
    pub store: String,
    /// The topic: `kafka://HOST:PORT/TOPIC?partitions=N`.
    pub source: String,
    /// The run: the subscription's group and the read model rows' `run`.
    pub run: String,
    pub id: String,
}

/// Runs the subscription until told to stop, then shuts it down.
pub async fn run(args: ChildArgs) -> Result<(), BoxError> {
    // First: a SIGTERM while the store opens must not end the process without a handover.
    let mut terminate = signal(SignalKind::terminate())?;
    let orphaned = supervisor_gone();
    let db = Db::open(&args.store).await?;
    let config = KafkaSourceConfig::from_url(&args.source)?;
    let source: Arc<dyn Source> = Arc::new(KafkaSource::connect(config).await?);
    let subscription = db.subscribe(source, &args.run, &args.id)?;
    let why = tokio::select! {
        _ = terminate.recv() => "SIGTERM",
        _ = orphaned => "stdin closed",
    };
    subscription.shutdown().await?;
    let stats = subscription.stats();
    println!(
        "      [{}] {why}: shut down; handled {}, retries {}",
        args.id, stats.handled, stats.retries
    );
    Ok(())
}

/// Resolves when the supervisor closes the child's stdin (or is gone).
fn supervisor_gone() -> oneshot::Receiver<()> {
    let (gone, receiver) = oneshot::channel();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
        let _ = gone.send(());
    });
    receiver
}
