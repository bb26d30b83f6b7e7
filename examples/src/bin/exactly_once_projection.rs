//! An exactly-once projection on PostgreSQL: the read model and its checkpoint commit in one
//! transaction, and a second process under the same name is stopped instead of projecting the
//! same events twice.
//!
//! ```text
//! cargo run -p checkpoint-examples --features postgres --bin exactly_once_projection
//! DATABASE_URL=postgres://user@host/db cargo run -p checkpoint-examples --features postgres --bin exactly_once_projection
//! ```
//!
//! The log is in process: 30 `OrderPlaced` events. The projection keeps a total per customer
//! in the table `exactly_once_example_totals`. Two "processes" (two tasks with stores of their
//! own) run it under one name; each batch is projected and advanced in one transaction, so only
//! one of them can commit any batch.

use std::error::Error as StdError;
use std::time::{SystemTime, UNIX_EPOCH};

use checkpoint_core::{
    CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint, Query, QueryItem, fingerprint,
};
use checkpoint_postgres::PostgresCheckpointStore;

const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/test";
const SUBSCRIPTION: &str = "order-totals";
const PARTITION: u32 = 0;
const BATCH: u64 = 10;

/// One event of the log: its position, the customer and the amount.
struct OrderPlaced {
    position: u64,
    customer: &'static str,
    amount: i64,
}

fn log() -> Vec<OrderPlaced> {
    let customers = ["acme", "globex", "initech"];
    (1..=30u64)
        .map(|position| OrderPlaced {
            position,
            customer: customers[(position % 3) as usize],
            amount: i64::try_from(position).unwrap_or(0) * 10,
        })
        .collect()
}

/// One process of the projection: its own store (its own pool), as a separate process has.
struct Projection {
    name: &'static str,
    store: PostgresCheckpointStore,
    group: String,
}

impl Projection {
    /// Projects the events after `from`, up to `BATCH` of them, and advances the checkpoint
    /// from `from` to the last one, all in one transaction. Returns the new position.
    async fn project_batch(
        &self,
        from: u64,
        log: &[OrderPlaced],
    ) -> Result<u64, Box<dyn StdError>> {
        let batch: Vec<&OrderPlaced> = log
            .iter()
            .filter(|e| e.position > from)
            .take(BATCH as usize)
            .collect();
        let Some(last) = batch.last() else {
            return Ok(from);
        };
        let to = last.position;

        let mut transaction = self.store.pool().begin().await?;
        for event in &batch {
            sqlx::query(
                "INSERT INTO exactly_once_example_totals (run, customer, total) \
                 VALUES ($1, $2, $3) \
                 ON CONFLICT (run, customer) DO UPDATE \
                 SET total = exactly_once_example_totals.total + EXCLUDED.total",
            )
            .bind(&self.group)
            .bind(event.customer)
            .bind(event.amount)
            .execute(&mut *transaction)
            .await?;
        }
        // The checkpoint moves in the same transaction: if another process has moved it since
        // `from`, this fails with Moved and the read-model writes above roll back with it.
        match self
            .store
            .advance_in(
                &mut transaction,
                &self.group,
                SUBSCRIPTION,
                PARTITION,
                from,
                to,
            )
            .await
        {
            Ok(()) => {
                transaction.commit().await?;
                println!(
                    "  {}: projected events {}..={to} and committed",
                    self.name,
                    from + 1
                );
                Ok(to)
            }
            Err(error) => {
                transaction.rollback().await?;
                Err(error.into())
            }
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn StdError>> {
    let url = std::env::var("DATABASE_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned());
    let log = log();
    // A group of its own per run, so the example can run again and again on one database.
    let group = format!(
        "exactly-once-example-{}",
        SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis()
    );
    let (a, b) = two_processes(&url, &group).await?;

    // The subscription's query. Its fingerprint is stored by the first claim: a later claim
    // under another query is refused, because a position only means something over the query
    // it was computed for.
    let query = Query::new([QueryItem::new(["OrderPlaced"], ["shop:eu"])]);
    let query_fingerprint = fingerprint(Some(&query));

    println!("group {group}, subscription {SUBSCRIPTION}");
    println!("1. process A claims the checkpoint and projects a first batch");
    let from = a
        .store
        .claim(&group, SUBSCRIPTION, PARTITION, query_fingerprint, 0)
        .await?;
    println!("  process A: claimed at position {from}");
    a.project_batch(from, &log).await?;

    println!("2. process B starts under the same name; both claim and read the next batch");
    one_batch_two_processes(&a, &b, query_fingerprint, &log).await?;

    println!("4. a process under the same name with a different query is refused");
    a_changed_query_is_refused(&b).await?;

    println!("5. the read model counts every event exactly once");
    the_read_model_matches_the_checkpoint(&b, &log).await
}

/// Two processes' stores on one database (the checkpoint table and the example's read model
/// created), projecting into `group`.
async fn two_processes(
    url: &str,
    group: &str,
) -> Result<(Projection, Projection), Box<dyn StdError>> {
    let first = PostgresCheckpointStore::connect(url).await?;
    first.migrate().await?;
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS exactly_once_example_totals \
         (run TEXT NOT NULL, customer TEXT NOT NULL, total BIGINT NOT NULL, \
          PRIMARY KEY (run, customer))",
    )
    .execute(first.pool())
    .await?;
    let a = Projection {
        name: "process A",
        store: first,
        group: group.to_owned(),
    };
    let b = Projection {
        name: "process B",
        store: PostgresCheckpointStore::connect(url).await?,
        group: group.to_owned(),
    };
    Ok((a, b))
}

/// Steps 2 and 3: both processes claim and read the same next batch; B commits first, and
/// A's commit of the same batch is refused (its read-model writes roll back with it).
async fn one_batch_two_processes(
    a: &Projection,
    b: &Projection,
    query_fingerprint: Fingerprint,
    log: &[OrderPlaced],
) -> Result<(), Box<dyn StdError>> {
    let from_a = a
        .store
        .claim(&a.group, SUBSCRIPTION, PARTITION, query_fingerprint, 0)
        .await?;
    let from_b = b
        .store
        .claim(&b.group, SUBSCRIPTION, PARTITION, query_fingerprint, 0)
        .await?;
    println!("  both resume from position {from_a} / {from_b}");

    println!("3. process B commits first; process A's commit of the same batch is refused");
    b.project_batch(from_b, log).await?;
    match a.project_batch(from_a, log).await {
        Err(error) => match error.downcast_ref::<Error>() {
            Some(Error::Moved { expected, current }) => {
                println!(
                    "  process A: stopped, the checkpoint moved (expected {expected}, it is at \
                     {}); its read-model writes were rolled back",
                    current.map_or("nothing".to_owned(), |p| p.to_string())
                );
                Ok(())
            }
            _ => Err(error),
        },
        Ok(to) => Err(format!("process A also committed up to {to}").into()),
    }
}

/// Step 4: a claim under the same name with a different query is refused.
async fn a_changed_query_is_refused(b: &Projection) -> Result<(), Box<dyn StdError>> {
    let changed = Query::new([QueryItem::new(
        ["OrderPlaced", "OrderCancelled"],
        ["shop:eu"],
    )]);
    let claimed = b
        .store
        .claim(
            &b.group,
            SUBSCRIPTION,
            PARTITION,
            fingerprint(Some(&changed)),
            0,
        )
        .await;
    match claimed {
        Err(Error::QueryChanged { stored, requested }) => {
            println!(
                "  refused: stored query {}…, requested {}…",
                &stored.to_hex()[..12],
                &requested.to_hex()[..12]
            );
            Ok(())
        }
        other => Err(format!("expected QueryChanged, got {other:?}").into()),
    }
}

/// Step 5: the read model holds exactly the events up to the checkpoint, each once.
async fn the_read_model_matches_the_checkpoint(
    b: &Projection,
    log: &[OrderPlaced],
) -> Result<(), Box<dyn StdError>> {
    let totals: Vec<(String, i64)> = sqlx::query_as(
        "SELECT customer, total FROM exactly_once_example_totals WHERE run = $1 ORDER BY customer",
    )
    .bind(&b.group)
    .fetch_all(b.store.pool())
    .await?;
    let position = b
        .store
        .load(&b.group, SUBSCRIPTION, PARTITION)
        .await?
        .unwrap_or(0);
    let expected: i64 = log
        .iter()
        .filter(|e| e.position <= position)
        .map(|e| e.amount)
        .sum();
    let projected: i64 = totals.iter().map(|(_, total)| total).sum();
    for (customer, total) in &totals {
        println!("  {customer:<8} {total:>5}");
    }
    println!(
        "  checkpoint at {position}; projected total {projected}, events up to it sum to {expected}"
    );
    if projected != expected {
        return Err("the read model does not match the checkpoint".into());
    }
    Ok(())
}
