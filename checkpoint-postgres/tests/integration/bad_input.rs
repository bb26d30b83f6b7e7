//! Bad input through every public entry point, counted on the wire: the kit's bad-input
//! driver, with exactly one argument wrong per case, on the pool and on a connection of the
//! caller's (the `*_in` family): each call is refused with the invalid-input error naming that
//! argument before any request leaves the process. Names that look like SQL, Lua, key or shell
//! syntax are stored and read back verbatim. The lease operations' invalid inputs, through
//! the kit's `bad_lease_input`, are refused the same way. (Valid arbitrary inputs round-trip in the kit's
//! `arbitrary_inputs_round_trip_or_are_rejected`, which runs in `kit`.)

use async_trait::async_trait;
use checkpoint_conformance::fresh_group;
use checkpoint_conformance::harness::bad_input::{BadInput, Call, MoreEntryPoints, Reply};
use checkpoint_conformance::round_trips::CountingProxy;
use checkpoint_core::{Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint};
use checkpoint_postgres::PostgresCheckpointStore;
use sqlx::PgConnection;
use sqlx::postgres::{PgPoolOptions, PgSslMode};

use crate::support;

/// A counting proxy, and a migrated store whose pool of one connection goes through it.
async fn counted_store() -> (CountingProxy, PostgresCheckpointStore) {
    let options = support::connect_options();
    let upstream = format!("{}:{}", options.get_host(), options.get_port());
    let proxy = CountingProxy::start(upstream.as_str())
        .await
        .expect("starting the counting proxy");
    let pool = PgPoolOptions::new()
        .max_connections(1)
        // A ping before each acquire would be I/O of the pool's own, not of a call.
        .test_before_acquire(false)
        .connect_lazy_with(
            options
                .host("127.0.0.1")
                .port(proxy.local_addr().port())
                // No TLS through the proxy, so every message is one it can see.
                .ssl_mode(PgSslMode::Disable),
        );
    let store = PostgresCheckpointStore::new(pool);
    store.migrate().await.unwrap();
    (proxy, store)
}

/// Every invalid lease call of the kit (`bad_lease_input`: bad names, owners, durations and
/// partitions through all six lease operations) is refused with `Error::InvalidInput` naming
/// the argument, and the proxy between the store and the server sees no request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_lease_calls_are_refused_with_no_request() {
    use checkpoint_conformance::harness::bad_input::bad_lease_input;
    use checkpoint_core::LeaseStore;

    let (proxy, store) = counted_store().await;
    // Warm-up: the connection is open; the pool's own exchange when it comes back is over.
    store
        .leases(&fresh_group("bad-lease-warm"), "warm")
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    proxy.reset();
    let refused = bad_lease_input(&store, Some(&proxy))
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert!(refused > 0, "no invalid lease call was tried");
    assert_eq!(proxy.round_trips(), 0, "a request reached the server");
}

/// The `*_in` family on one connection of the caller's, for the kit's bad-input driver.
struct OnConnection<'a> {
    store: &'a PostgresCheckpointStore,
    connection: &'a mut PgConnection,
}

#[async_trait(?Send)]
impl MoreEntryPoints for OnConnection<'_> {
    async fn send(&mut self, call: Call<'_>) -> Option<(&'static str, Result<Reply, Error>)> {
        let (store, connection) = (self.store, &mut *self.connection);
        Some(checkpoint_conformance::call_through!(
            call, store, (connection), load_in list_in save_in save_all_in claim_in advance_in
        ))
    }
}

/// Every entry point, on the pool and on a connection of the caller's (the `*_in` methods),
/// with one argument wrong at a time: each is refused with `Error::InvalidInput` naming that
/// argument (a batch naming its bad entry, an advance whose `to` is not ahead saying so), and
/// the proxy between the store and the server sees no request at all.
///
/// Refusals only: the pool pings a connection as it takes it back, in a task of its own after
/// the call has returned, so a valid call on the pool would put a round trip into the count
/// of the next refused one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_inputs_are_refused_with_no_request() {
    let (proxy, store) = counted_store().await;
    let fingerprint = Fingerprint::from_bytes([9; 32]);
    let warm = fresh_group("bad-input");
    // Warm-up: the connection is open and has prepared every statement.
    store.save(&warm, "warm", 0, 1).await.unwrap();
    store
        .save_all(&warm, &[Checkpoint::new("warm", 1, 1)])
        .await
        .unwrap();
    store.load(&warm, "warm", 0).await.unwrap();
    store.list(&warm).await.unwrap();
    store.claim(&warm, "excl", 0, fingerprint, 0).await.unwrap();
    store.advance(&warm, "excl", 0, 0, 1).await.unwrap();
    // The one connection, held for the `*_in` calls; acquiring it sends nothing.
    let mut connection = store.pool().acquire().await.unwrap();
    // The pool's own exchange when a connection comes back has happened by now.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    proxy.reset();

    let mut on_connection = OnConnection {
        store: &store,
        connection: &mut connection,
    };
    BadInput::new(&store, &proxy)
        .cases_between(64, 512)
        .refusals_only()
        .run(&mut on_connection)
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert_eq!(proxy.round_trips(), 0, "a request reached the server");

    // The proxy does count: one valid call on the held connection is one round trip.
    store
        .load_in(&mut connection, &warm, "warm", 0)
        .await
        .unwrap();
    assert_eq!(proxy.round_trips(), 1, "the proxy should see a valid call");
}

/// Names with SQL, Lua, key, shell and format syntax, quotes, escapes and non-ASCII, each a
/// group and a subscription: stored verbatim (the row holds exactly those bytes) and read back
/// through every read path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_that_look_like_code_are_stored_verbatim() {
    let store = support::store().await;
    let names = [
        "'; DROP TABLE checkpoints; --",
        "\" OR 1=1 --",
        "a'b\"c`d",
        "$1",
        "$$ SELECT 1 $$",
        "E'\\x00'",
        "/* comment */ x",
        "redis.call('FLUSHALL')",
        "]] .. os.exit() .. [[",
        "{hash}:tag:*",
        "key\\with\\backslashes",
        "%s %n %% {}",
        "${HOME} $(rm -rf /) `id`",
        "line\nbreak\ttab\r",
        "\u{7f}\u{1}",
        "ünïcødé ✓ 𝄞",
        "\u{feff}bom",
        "trailing space ",
        " ",
        "NULL",
        "null",
        "\\N",
        "groups/with/slashes",
        "a:b::c",
        "_%",
    ];
    let base = fresh_group("verbatim");
    let mut admin = support::admin_connection().await;
    for (i, name) in names.iter().enumerate() {
        let group = format!("{base}{name}");
        let position = 1_000 + i as u64;
        store.save(&group, name, 7, position).await.unwrap();
        store
            .save_all(&group, &[Checkpoint::new(*name, 8, position + 1)])
            .await
            .unwrap();
        assert_eq!(
            store.load(&group, name, 7).await.unwrap(),
            Some(position),
            "{name:?}"
        );
        let mut listed = store.list(&group).await.unwrap();
        listed.sort();
        assert_eq!(
            listed,
            vec![
                Checkpoint::new(*name, 7, position),
                Checkpoint::new(*name, 8, position + 1)
            ],
            "{name:?}"
        );
        let claimed = store
            .claim(&group, name, 9, Fingerprint::from_bytes([1; 32]), position)
            .await
            .unwrap();
        assert_eq!(claimed, position);
        store
            .advance(&group, name, 9, position, position + 5)
            .await
            .unwrap();

        // The table holds exactly these bytes, and nothing else under the group.
        let rows: Vec<(Vec<u8>, Vec<u8>, i64, i64)> = sqlx::query_as(
            "SELECT convert_to(group_name, 'UTF8'), convert_to(subscription, 'UTF8'), \
             partition_id, position FROM checkpoints WHERE group_name = $1 ORDER BY partition_id",
        )
        .bind(&group)
        .fetch_all(&mut admin)
        .await
        .unwrap();
        let p = i64::try_from(position).unwrap();
        let want: Vec<(Vec<u8>, Vec<u8>, i64, i64)> = [(7, p), (8, p + 1), (9, p + 5)]
            .into_iter()
            .map(|(partition, at)| {
                (
                    group.clone().into_bytes(),
                    name.as_bytes().to_vec(),
                    partition,
                    at,
                )
            })
            .collect();
        assert_eq!(rows, want, "{name:?}");
    }
    // The table is still there, with its rows.
    let count: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM checkpoints WHERE left(group_name, length($1)) = $1",
    )
    .bind(&base)
    .fetch_one(&mut admin)
    .await
    .unwrap();
    assert_eq!(count, 3 * names.len() as i64);
}
