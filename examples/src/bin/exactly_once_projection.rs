//! An exactly-once projection on PostgreSQL with a transactional handler: each batch of events
//! is projected and its checkpoint advanced in one transaction, so a crash, a handover or a
//! second process under the same name never projects an event twice; a process started with a
//! changed query is refused. (Crashes at random points are the subject of
//! `checkpoint-subscription`'s tests `on_postgres_the_read_model_equals_the_log_exactly_once_through_kills`,
//! and the same on MySQL and SQLite.)
//!
//! ```text
//! cargo run -p checkpoint-examples --features postgres --bin exactly_once_projection
//! DATABASE_URL=postgres://user@host/db cargo run -p checkpoint-examples --features postgres --bin exactly_once_projection
//! ```
//!
//! The log is in process (an in-memory source of `OrderPlaced` events: "customer amount").
//! The projection keeps a total per customer in the table `exactly_once_example_totals`.

use std::error::Error as StdError;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use checkpoint_core::source::{Entry, InMemorySource};
use checkpoint_core::{CheckpointStore, Fingerprint, Query, QueryItem, fingerprint};
use checkpoint_postgres::PostgresCheckpointStore;
use checkpoint_subscription::{BoxFuture, HandlerResult, Subscription, TransactionalHandler};
use sqlx::{Postgres, Transaction};

const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/test";
const SUBSCRIPTION: &str = "order-totals";
const CUSTOMERS: [&str; 3] = ["acme", "globex", "initech"];

/// The projection: adds each order's amount to its customer's total, in the batch's
/// transaction. It never commits: the subscription commits after advancing the checkpoint.
struct Totals {
    run: String,
}

impl TransactionalHandler<Transaction<'static, Postgres>> for Totals {
    fn handle<'a>(
        &'a self,
        transaction: &'a mut Transaction<'static, Postgres>,
        entries: &'a [Entry],
    ) -> BoxFuture<'a, HandlerResult> {
        Box::pin(async move {
            for entry in entries {
                let text = std::str::from_utf8(&entry.payload)?;
                let (customer, amount) = text.split_once(' ').ok_or("not `customer amount`")?;
                let amount: i64 = amount.parse()?;
                sqlx::query(
                    "INSERT INTO exactly_once_example_totals (run, customer, total) \
                     VALUES ($1, $2, $3) \
                     ON CONFLICT (run, customer) DO UPDATE \
                     SET total = exactly_once_example_totals.total + EXCLUDED.total",
                )
                .bind(&self.run)
                .bind(customer)
                .bind(amount)
                .execute(&mut **transaction)
                .await?;
            }
            Ok(())
        })
    }
}

/// Appends orders `first..=last` (amount: 10 × the order's number).
fn place_orders(source: &InMemorySource, first: u64, last: u64) -> Result<(), Box<dyn StdError>> {
    for n in first..=last {
        let customer = CUSTOMERS[(n % 3) as usize];
        source.append(0, format!("{customer} {}", n * 10).into_bytes())?;
    }
    Ok(())
}

/// A process of the projection: its own store (its own pool), as a separate process has.
async fn process(
    name: &str,
    url: &str,
    source: &Arc<InMemorySource>,
    run: &str,
    query: Fingerprint,
) -> Result<Subscription, Box<dyn StdError>> {
    let store = Arc::new(PostgresCheckpointStore::connect(url).await?);
    let name = name.to_owned();
    let subscription = Subscription::transactional(store, source.clone(), run, SUBSCRIPTION, query)
        .handler(Totals {
            run: run.to_owned(),
        })
        .batch_size(10) // one transaction per 10 events at most
        .worker(|worker| {
            worker
                .worker_id(name)
                .lease_duration(Duration::from_secs(2))
        })
        .start()?;
    Ok(subscription)
}

/// Waits until `subscription` has handled `count` entries (20 s at most).
async fn handled(subscription: &Subscription, count: u64) -> Result<(), Box<dyn StdError>> {
    let deadline = Instant::now() + Duration::from_secs(20);
    while subscription.stats().handled < count {
        if Instant::now() > deadline {
            return Err(format!("{count} events not projected within 20 s").into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn StdError>> {
    let url = std::env::var("DATABASE_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned());
    // A group of its own per run, so the example can run again and again on one database.
    let run = format!(
        "exactly-once-example-{}",
        SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis()
    );
    prepare(&url).await?;
    // The subscription's query. Its fingerprint is stored by the first claim: a later claim
    // under another query is refused, because a position only means something over the query
    // it was computed for.
    let query = fingerprint(Some(&Query::new([QueryItem::new(
        ["OrderPlaced"],
        ["shop:eu"],
    )])));
    let source = Arc::new(InMemorySource::new(1));
    println!("group {run}, subscription {SUBSCRIPTION}");

    println!(
        "1. process A projects orders 1 to 15; process B starts under the same name and waits"
    );
    place_orders(&source, 1, 15)?;
    let a = process("process-a", &url, &source, &run, query).await?;
    handled(&a, 15).await?;
    let b = process("process-b", &url, &source, &run, query).await?;

    println!("2. process A stops (a deploy); orders 16 to 30 arrive; B resumes where A committed");
    a.shutdown().await?; // a crash instead would lose A's open transaction, nothing committed
    place_orders(&source, 16, 30)?;
    handled(&b, 15).await?;
    b.shutdown().await?; // graceful: B releases the partition
    println!("  process B projected {} events", b.stats().handled);

    println!("3. a process with a changed query is refused: its partition stops, saying why");
    let changed = Query::new([QueryItem::new(
        ["OrderPlaced", "OrderCancelled"],
        ["shop:eu"],
    )]);
    a_changed_query_is_refused(&url, &source, &run, fingerprint(Some(&changed))).await?;

    println!("4. the read model counts every order exactly once");
    the_read_model_counts_every_order_once(&url, &run).await
}

/// The checkpoint table and the example's read model.
async fn prepare(url: &str) -> Result<(), Box<dyn StdError>> {
    let store = PostgresCheckpointStore::connect(url).await?;
    store.migrate().await?;
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS exactly_once_example_totals \
         (run TEXT NOT NULL, customer TEXT NOT NULL, total BIGINT NOT NULL, \
          PRIMARY KEY (run, customer))",
    )
    .execute(store.pool())
    .await?;
    Ok(())
}

/// Step 3: a process under the same name whose query changed gets the partition's lease but
/// not its checkpoint: it projects nothing.
async fn a_changed_query_is_refused(
    url: &str,
    source: &Arc<InMemorySource>,
    run: &str,
    changed: Fingerprint,
) -> Result<(), Box<dyn StdError>> {
    let c = process("process-c", url, source, run, changed).await?;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let stats = c.stats();
        if let Some(stopped) = stats.partitions.iter().find_map(|p| p.stopped_at) {
            println!(
                "  process C: stopped at position {stopped}, {} events projected",
                stats.handled
            );
            break;
        }
        if Instant::now() > deadline {
            return Err("the changed query was not refused within 20 s".into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    c.shutdown().await?;
    Ok(())
}

/// Step 4: the totals sum to the sum of all 30 orders, each counted once, and the checkpoint
/// is past the last order.
async fn the_read_model_counts_every_order_once(
    url: &str,
    run: &str,
) -> Result<(), Box<dyn StdError>> {
    let store = PostgresCheckpointStore::connect(url).await?;
    let totals: Vec<(String, i64)> = sqlx::query_as(
        "SELECT customer, total FROM exactly_once_example_totals WHERE run = $1 ORDER BY customer",
    )
    .bind(run)
    .fetch_all(store.pool())
    .await?;
    for (customer, total) in &totals {
        println!("  {customer:<8} {total:>5}");
    }
    let projected: i64 = totals.iter().map(|(_, total)| total).sum();
    let expected: i64 = (1..=30).map(|n| n * 10).sum();
    let position = store.load(run, SUBSCRIPTION, 0).await?;
    println!(
        "  checkpoint at {position:?}; projected total {projected}, the 30 orders sum to {expected}"
    );
    if projected != expected || position != Some(31) {
        return Err("the read model does not count every order exactly once".into());
    }
    Ok(())
}
