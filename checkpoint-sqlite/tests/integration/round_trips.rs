//! What each lease operation costs, as the crate doc states it. An embedded database has no
//! wire for the kit's counting proxy. Its round trip is an **exchange with sqlx's worker
//! thread**: sqlx runs each SQLite connection on a thread of its own, and every command the
//! store (or the pool, for it) sends there, a query (one statement or several in one text),
//! `BEGIN`, `COMMIT`, `ROLLBACK` or the pool's ping, is one message the caller waits for. The
//! tests count them: each call runs inside a span of this module's own, sqlx sends that span
//! with every command, and the worker thread enters it to run the command, so the number of
//! times a `sqlx-sqlite-worker` thread enters the call's span is the number of exchanges the
//! call waited for. Every call starts with the pool's ping of the connection it hands out
//! (sqlx's `test_before_acquire`, on by default); the ping after a connection returns to the
//! pool runs in a task of the pool's, outside the span, and the caller does not wait for it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use checkpoint_core::{CheckpointAdmin, Error, LeaseStore};
use checkpoint_sqlite::SqliteCheckpointStore;
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Instrument, Metadata, Subscriber};
use tracing_core::span::Current;

use crate::support::TempDb;

const LEASE: Duration = Duration::from_secs(30);

/// The name of the span each counted call runs in.
const CALL: &str = "counted_call";

/// The exchanges of every counted call so far, by its span's id.
#[derive(Default)]
struct ExchangeLog {
    next_id: AtomicU64,
    exchanges: Mutex<HashMap<u64, usize>>,
}

thread_local! {
    /// The spans entered on this thread, innermost last: what `Span::current()` returns, which
    /// sqlx sends with each command.
    static ENTERED: RefCell<Vec<(Id, &'static Metadata<'static>)>> = const { RefCell::new(Vec::new()) };
}

fn is_counted(metadata: &Metadata<'_>) -> bool {
    metadata.is_span() && metadata.name() == CALL
}

fn on_a_worker_thread() -> bool {
    std::thread::current()
        .name()
        .is_some_and(|name| name.starts_with("sqlx-sqlite-worker"))
}

impl Subscriber for ExchangeLog {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        if is_counted(metadata) {
            Interest::always()
        } else {
            Interest::never()
        }
    }
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        is_counted(metadata)
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        METADATA.get_or_init(|| span.metadata());
        Id::from_u64(self.next_id.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn record(&self, _span: &Id, _values: &Record<'_>) {}
    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}
    fn event(&self, _event: &Event<'_>) {}
    fn enter(&self, span: &Id) {
        if on_a_worker_thread() {
            *self
                .exchanges
                .lock()
                .expect("log")
                .entry(span.into_u64())
                .or_default() += 1;
        }
        let metadata = *METADATA
            .get()
            .expect("a counted span was made before it was entered");
        ENTERED.with(|entered| entered.borrow_mut().push((span.clone(), metadata)));
    }
    fn exit(&self, _span: &Id) {
        ENTERED.with(|entered| entered.borrow_mut().pop());
    }
    fn current_span(&self) -> Current {
        ENTERED.with(|entered| match entered.borrow().last() {
            Some((id, metadata)) => Current::new(id.clone(), metadata),
            None => Current::none(),
        })
    }
}

/// The metadata of [`CALL`] spans (the only ones enabled), kept from the first one made.
static METADATA: OnceLock<&'static Metadata<'static>> = OnceLock::new();

/// The process's exchange log, installed as the global subscriber on first use.
fn log() -> &'static ExchangeLog {
    static LOG: OnceLock<&'static ExchangeLog> = OnceLock::new();
    LOG.get_or_init(|| {
        let log: &'static ExchangeLog = Box::leak(Box::default());
        tracing::subscriber::set_global_default(Forward(log))
            .expect("no other global subscriber in this test binary");
        log
    })
}

/// The global subscriber, handing every call to the leaked log.
struct Forward(&'static ExchangeLog);

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
    fn current_span(&self) -> Current {
        self.0.current_span()
    }
}

/// A store on a fresh file.
struct Counted {
    store: SqliteCheckpointStore,
    _db: TempDb,
}

impl Counted {
    async fn new() -> Self {
        let _ = log();
        let db = TempDb::new();
        let store = db.store().await;
        store.migrate().await.expect("migrate");
        Self { store, _db: db }
    }

    /// The exchanges with sqlx's worker threads `call` waited for, and its result.
    async fn count<T>(&self, call: impl Future<Output = T>) -> (usize, T) {
        let span = tracing::info_span!(CALL);
        let id = span.id().expect("the exchange log enables counted spans");
        let result = call.instrument(span).await;
        let exchanges = log().exchanges.lock().expect("log");
        (exchanges.get(&id.into_u64()).copied().unwrap_or(0), result)
    }
}

/// The pool's ping of the connection it hands out, before every call.
const PING: usize = 1;

/// A transaction of one request: `BEGIN IMMEDIATE`, the request, `COMMIT` (or `ROLLBACK`).
const ONE_REQUEST_TRANSACTION: usize = PING + 3;

/// One statement in autocommit.
const ONE_STATEMENT: usize = PING + 1;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_is_one_request_in_a_transaction_whatever_it_grants_or_refuses() {
    let counted = Counted::new().await;
    let store = &counted.store;
    let hundred: Vec<u32> = (0..100).collect();
    let calls = [
        ("a", &[0, 1, 2][..], 3),
        ("b", &[][..], 0),
        ("b", &[1, 2, 3][..], 1),
        ("c", &hundred[..], 96),
    ];
    for (owner, partitions, granted) in calls {
        let (exchanges, acquired) = counted
            .count(store.acquire("g", "s", owner, partitions, LEASE))
            .await;
        assert_eq!(acquired.expect("acquire").granted.len(), granted, "{owner}");
        assert_eq!(exchanges, ONE_REQUEST_TRANSACTION, "acquire by {owner}");
    }
    // Refused whole: the tombstone, found by the request, then `ROLLBACK`.
    store.retire("g", "s").await.expect("retire");
    let (exchanges, acquired) = counted
        .count(store.acquire("g", "s", "a", &[0], LEASE))
        .await;
    assert!(
        matches!(acquired, Err(Error::Retired { .. })),
        "{acquired:?}"
    );
    assert_eq!(
        exchanges, ONE_REQUEST_TRANSACTION,
        "acquire of a retired one"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renew_is_one_request_in_a_transaction_for_one_lease_or_a_hundred() {
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
        let (exchanges, renewed) = counted.count(store.renew("g", "s", owner, LEASE)).await;
        assert_eq!(renewed.expect("renew").len(), leases);
        assert_eq!(
            exchanges, ONE_REQUEST_TRANSACTION,
            "renew of {leases} leases"
        );
    }
    let (exchanges, renewed) = counted.count(store.renew("g", "s", "nobody", LEASE)).await;
    assert!(matches!(renewed, Err(Error::NotHeld { .. })), "{renewed:?}");
    assert_eq!(exchanges, ONE_REQUEST_TRANSACTION, "renew refused");
    store.retire("g", "s").await.expect("retire");
    let (exchanges, renewed) = counted.count(store.renew("g", "s", "one", LEASE)).await;
    assert!(matches!(renewed, Err(Error::Retired { .. })), "{renewed:?}");
    assert_eq!(exchanges, ONE_REQUEST_TRANSACTION, "renew of a retired one");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_request_handover_and_leases_are_one_statement_and_leave_one_request() {
    let counted = Counted::new().await;
    let store = &counted.store;
    store
        .acquire("g", "s", "a", &[0, 1, 2, 3], LEASE)
        .await
        .expect("acquire");

    let (exchanges, released) = counted.count(store.release("g", "s", "a", &[0, 9])).await;
    assert_eq!(released.expect("release").released, [0]);
    assert_eq!(exchanges, ONE_STATEMENT, "release");
    let (exchanges, released) = counted.count(store.release("g", "s", "b", &[1])).await;
    assert_eq!(released.expect("release").not_held, [1]);
    assert_eq!(exchanges, ONE_STATEMENT, "release of none held");

    let (exchanges, requested) = counted
        .count(store.request_handover("g", "s", "b", &[1, 2]))
        .await;
    requested.expect("request_handover");
    assert_eq!(exchanges, ONE_STATEMENT, "request_handover");

    let (exchanges, table) = counted.count(store.leases("g", "s")).await;
    let table = table.expect("leases");
    assert_eq!(table.leases.len(), 3);
    assert_eq!(table.owners.len(), 1);
    assert_eq!(exchanges, ONE_STATEMENT, "leases");

    let (exchanges, left) = counted.count(store.leave("g", "s", "a")).await;
    assert_eq!(left.expect("leave"), [1, 2, 3]);
    assert_eq!(exchanges, ONE_REQUEST_TRANSACTION, "leave");
    let (exchanges, left) = counted.count(store.leave("g", "s", "a")).await;
    assert!(left.expect("leave").is_empty());
    assert_eq!(exchanges, ONE_REQUEST_TRANSACTION, "leave again");
}

/// `purge` of a retired subscription deletes its leases and heartbeats in its own transaction:
/// `BEGIN IMMEDIATE`, the presence check, then the tombstone, the checkpoints, the leases and
/// the heartbeats, each a statement of its own, and `COMMIT`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purge_deletes_the_leases_in_its_transaction() {
    let counted = Counted::new().await;
    let store = &counted.store;
    store
        .acquire("g", "s", "a", &[0], LEASE)
        .await
        .expect("acquire");
    store.retire("g", "s").await.expect("retire");
    let (exchanges, purged) = counted.count(store.purge("g", "s")).await;
    purged.expect("purge");
    assert_eq!(exchanges, PING + 1 + 5 + 1);
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
        let (exchanges, parked) = counted.count(store.park("g", &entry)).await;
        parked.expect("park");
        assert_eq!(exchanges, ONE_STATEMENT, "park");
    }
    let (exchanges, parked) = counted.count(store.parked("g")).await;
    assert_eq!(parked.expect("parked"), std::slice::from_ref(&entry));
    assert_eq!(exchanges, ONE_STATEMENT, "parked");
    let (exchanges, found) = counted.count(store.retry_parked("g", "s", 3, 41)).await;
    assert!(found.expect("retry_parked"));
    assert_eq!(exchanges, ONE_STATEMENT, "retry_parked");
    for found in [true, false] {
        let (exchanges, unparked) = counted.count(store.unpark("g", "s", 3, 41)).await;
        assert_eq!(unparked.expect("unpark"), found);
        assert_eq!(exchanges, ONE_STATEMENT, "unpark");
    }
}
