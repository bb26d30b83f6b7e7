//! What each lease operation costs, as the crate doc states it. An embedded database has no
//! wire for the kit's counting proxy: what is counted here is the statements SQLite runs for
//! one call (`BEGIN` and `COMMIT` aside), as sqlx reports each one it executes (its
//! `sqlx::query` events, caught by a subscriber of this module's own). Every operation is one
//! transaction; the counts show that none grows with the number of partitions or leases.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use checkpoint_core::{CheckpointAdmin, LeaseStore};
use checkpoint_sqlite::SqliteCheckpointStore;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};

use crate::support::TempDb;

const LEASE: Duration = Duration::from_secs(30);

/// The text of every statement sqlx executed in this process (from any test), as sqlx logs it.
#[derive(Default)]
struct StatementLog {
    statements: Mutex<Vec<String>>,
}

fn is_statement(metadata: &Metadata<'_>) -> bool {
    metadata.target() == "sqlx::query"
}

/// The text fields of an event, concatenated.
struct Text(String);

impl Visit for Text {
    fn record_str(&mut self, _field: &Field, value: &str) {
        self.0.push_str(value);
        self.0.push('\n');
    }
    fn record_debug(&mut self, _field: &Field, _value: &dyn std::fmt::Debug) {}
}

impl Subscriber for StatementLog {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        if is_statement(metadata) {
            Interest::always()
        } else {
            Interest::never()
        }
    }
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        is_statement(metadata)
    }
    fn new_span(&self, _span: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _span: &Id, _values: &Record<'_>) {}
    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut text = Text(String::new());
        event.record(&mut text);
        self.statements.lock().expect("log").push(text.0);
    }
    fn enter(&self, _span: &Id) {}
    fn exit(&self, _span: &Id) {}
}

/// The process's statement log, installed as the global subscriber on first use.
fn log() -> &'static StatementLog {
    static LOG: OnceLock<&'static StatementLog> = OnceLock::new();
    LOG.get_or_init(|| {
        let log: &'static StatementLog = Box::leak(Box::default());
        tracing::subscriber::set_global_default(Forward(log))
            .expect("no other global subscriber in this test binary");
        log
    })
}

/// The global subscriber, handing every call to the leaked log.
struct Forward(&'static StatementLog);

impl Subscriber for Forward {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        self.0.register_callsite(metadata)
    }
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        self.0.enabled(metadata)
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        self.0.new_span(span)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        self.0.record(span, values)
    }
    fn record_follows_from(&self, span: &Id, follows: &Id) {
        self.0.record_follows_from(span, follows)
    }
    fn event(&self, event: &Event<'_>) {
        self.0.event(event)
    }
    fn enter(&self, span: &Id) {
        self.0.enter(span)
    }
    fn exit(&self, span: &Id) {
        self.0.exit(span)
    }
}

/// A store on a table of its own (its name in every statement it sends), on a fresh file.
struct Counted {
    store: SqliteCheckpointStore,
    marker: String,
    _db: TempDb,
}

impl Counted {
    async fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let _ = log();
        let db = TempDb::new();
        let table = format!("counted_{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let store = db
            .store()
            .await
            .with_table(&table)
            .expect("a valid table name");
        store.migrate().await.expect("migrate");
        Self {
            store,
            marker: format!("\"{table}"),
            _db: db,
        }
    }

    fn statements(&self) -> usize {
        let statements = log().statements.lock().expect("log");
        statements
            .iter()
            .filter(|text| text.contains(&self.marker))
            .count()
    }

    /// The statements `call` ran (each lease operation commits before it returns, and sqlx
    /// logs a statement before it runs the connection's next command, the `COMMIT`).
    async fn count<T>(&self, call: impl std::future::Future<Output = T>) -> (usize, T) {
        let before = self.statements();
        let result = call.await;
        (self.statements() - before, result)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_is_one_transaction_of_four_statements() {
    let counted = Counted::new().await;
    let store = &counted.store;
    let (statements, acquired) = counted
        .count(store.acquire("g", "s", "a", &[0, 1, 2], LEASE))
        .await;
    assert_eq!(acquired.expect("acquire").granted.len(), 3);
    assert_eq!(statements, 4);
    // Joining (no partition) leaves out the grant.
    let (statements, joined) = counted
        .count(store.acquire("g", "s", "b", &[], LEASE))
        .await;
    assert!(joined.expect("join").granted.is_empty());
    assert_eq!(statements, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renew_is_three_statements_for_one_lease_or_a_hundred() {
    let counted = Counted::new().await;
    let store = &counted.store;
    store
        .acquire("g", "s", "one", &[0], LEASE)
        .await
        .expect("acquire");
    let hundred: Vec<u32> = (1..=100).collect();
    let acquired = store
        .acquire("g", "s", "many", &hundred, LEASE)
        .await
        .expect("acquire");
    assert_eq!(acquired.granted.len(), 100);
    for (owner, leases) in [("one", 1), ("many", 100)] {
        let (statements, renewed) = counted.count(store.renew("g", "s", owner, LEASE)).await;
        assert_eq!(renewed.expect("renew").len(), leases);
        assert_eq!(statements, 3, "renew of {leases} leases");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_leave_leases_and_request_handover_are_each_one_transaction() {
    let counted = Counted::new().await;
    let store = &counted.store;
    store
        .acquire("g", "s", "a", &[0, 1, 2, 3], LEASE)
        .await
        .expect("acquire");

    let (statements, released) = counted.count(store.release("g", "s", "a", &[0, 9])).await;
    assert_eq!(released.expect("release").released, [0]);
    assert_eq!(statements, 2, "release");

    let (statements, requested) = counted
        .count(store.request_handover("g", "s", "b", &[1, 2]))
        .await;
    requested.expect("request_handover");
    assert_eq!(statements, 2, "request_handover");

    let (statements, table) = counted.count(store.leases("g", "s")).await;
    assert_eq!(table.expect("leases").leases.len(), 3);
    assert_eq!(statements, 3, "leases");

    let (statements, left) = counted.count(store.leave("g", "s", "a")).await;
    assert_eq!(left.expect("leave"), [1, 2, 3]);
    assert_eq!(statements, 3, "leave");
}

/// `purge` of a retired subscription deletes its leases and heartbeats in its own transaction:
/// the presence check, then the tombstone, the checkpoints, the leases and the heartbeats.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purge_deletes_the_leases_in_its_transaction() {
    let counted = Counted::new().await;
    let store = &counted.store;
    store
        .acquire("g", "s", "a", &[0], LEASE)
        .await
        .expect("acquire");
    store.retire("g", "s").await.expect("retire");
    let (statements, purged) = counted.count(store.purge("g", "s")).await;
    purged.expect("purge");
    assert_eq!(statements, 5);
    let acquired = store
        .acquire("g", "s", "a", &[0], LEASE)
        .await
        .expect("acquire");
    assert_eq!(acquired.granted[0].epoch, 1, "the epochs start anew");
}

/// Each parked-entry operation is one statement in autocommit mode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_parked_operation_is_one_statement() {
    use checkpoint_core::parked::{ParkedEntry, ParkedStore};

    let counted = Counted::new().await;
    let store = &counted.store;
    let entry = ParkedEntry::new("s", 3, 41, "no such customer", 5);
    for _ in 0..2 {
        let (statements, parked) = counted.count(store.park("g", &entry)).await;
        parked.expect("park");
        assert_eq!(statements, 1, "park");
    }
    let (statements, parked) = counted.count(store.parked("g")).await;
    assert_eq!(parked.expect("parked"), std::slice::from_ref(&entry));
    assert_eq!(statements, 1, "parked");
    let (statements, found) = counted.count(store.retry_parked("g", "s", 3, 41)).await;
    assert!(found.expect("retry_parked"));
    assert_eq!(statements, 1, "retry_parked");
    for found in [true, false] {
        let (statements, unparked) = counted.count(store.unpark("g", "s", 3, 41)).await;
        assert_eq!(unparked.expect("unpark"), found);
        assert_eq!(statements, 1, "unpark");
    }
}
