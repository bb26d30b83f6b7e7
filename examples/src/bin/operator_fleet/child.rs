//! A child process: one subscription of the fleet, its handler chosen by its name (see the
//! crate doc's table). It runs until it is killed or its supervisor is gone.

use std::sync::Arc;
use std::time::Duration;

use checkpoint_core::source::Entry;
use checkpoint_subscription::{HandlerResult, Subscription};

use crate::{BoxError, LEASE, PARTITIONS, STUCK_AT, STUCK_PARTITION, writer};

/// What `backlog`'s handler takes per entry: 10 a second, half of what each partition gets.
const BACKLOG_HANDLING: Duration = Duration::from_millis(100);

/// What a child is told on its command line.
#[derive(Debug)]
pub struct ChildArgs {
    pub name: String,
    pub store: String,
    pub source: String,
    pub log: String,
    pub group: String,
}

/// Runs the subscription `args.name` until the supervisor is gone (or the process is killed).
pub async fn run(args: ChildArgs) -> Result<(), BoxError> {
    let orphaned = supervisor_gone();
    let store: Arc<dyn checkpoint_connect::Store> =
        Arc::from(checkpoint_examples::open_url(&args.store, false).await?);
    let source = checkpoint_examples::log::open_log(&args.source, &args.log, PARTITIONS).await?;
    let builder = Subscription::builder(store, source, &args.group, &args.name);
    let builder = match args.name.as_str() {
        "steady" | "killed" => builder.handler(|_: Arc<Entry>| async { HandlerResult::Ok(()) }),
        // One entry at a time: with more in flight the sleeps would overlap and keep up.
        "backlog" => builder.max_in_flight(1).handler(|_: Arc<Entry>| async {
            tokio::time::sleep(BACKLOG_HANDLING).await;
            HandlerResult::Ok(())
        }),
        "stuck" => builder.handler(|entry: Arc<Entry>| async move {
            // An entry does not say its partition: the writer put it in the payload.
            if writer::number_of(&entry.payload, STUCK_PARTITION).is_some_and(|n| n >= STUCK_AT) {
                // A call that never answers, as a handler waiting on a hung peer: the lease
                // stays renewed (the process is alive), the checkpoint stays put.
                std::future::pending::<()>().await;
            }
            HandlerResult::Ok(())
        }),
        other => return Err(format!("no subscription {other} in the fleet").into()),
    };
    // Worker ids short enough for the view's owner column (9 characters).
    let worker_id = format!("w-{}", std::process::id());
    let subscription = builder
        .worker(|worker| worker.worker_id(&worker_id).lease_duration(LEASE))
        .start()?;
    println!(
        "   {}: pid {}, worker {worker_id}",
        args.name,
        std::process::id()
    );
    let _ = orphaned.await;
    // No graceful shutdown: `stuck` could never drain, and the supervisor is gone anyway.
    // Exited at once: nothing to wait for, and a runtime's shutdown would wait on the store's
    // and the log's worker threads.
    drop(subscription);
    std::process::exit(0)
}

/// Resolves when the supervisor is gone (the child's stdin closes).
fn supervisor_gone() -> tokio::sync::oneshot::Receiver<()> {
    let (gone, receiver) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
        let _ = gone.send(());
    });
    receiver
}
