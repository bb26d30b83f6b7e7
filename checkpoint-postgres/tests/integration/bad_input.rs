//! Bad input through every public entry point, counted on the wire: invalid names and
//! positions are refused with the invalid-input error before any request leaves the process.
//! Names that look like SQL, Lua, key or shell syntax are stored and read back verbatim.
//! (Valid arbitrary inputs round-trip in the kit's `arbitrary_inputs_round_trip_or_are_rejected`,
//! which runs in `conformance`.)

use checkpoint_conformance::fresh_group;
use checkpoint_conformance::history::HistoryConfig;
use checkpoint_conformance::round_trips::CountingProxy;
use checkpoint_core::validation::{MAX_NAME_BYTES, MAX_POSITION};
use checkpoint_core::{
    Argument, Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint,
    InvalidReason,
};
use checkpoint_postgres::PostgresCheckpointStore;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use sqlx::postgres::{PgPoolOptions, PgSslMode};

use crate::support;

/// An invalid name: empty, one byte too long, far too long, too long in multi-byte
/// characters, or with a NUL anywhere.
fn invalid_name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("n".repeat(MAX_NAME_BYTES + 1)),
        (MAX_NAME_BYTES + 2..4 * MAX_NAME_BYTES).prop_map(|len| "x".repeat(len)),
        Just("é".repeat(MAX_NAME_BYTES / 2 + 1)),
        ("[^\u{0}]{0,8}", "[^\u{0}]{0,8}").prop_map(|(a, b)| format!("{a}\0{b}")),
    ]
}

/// A valid name, including characters that mean something in SQL, Lua or keys.
fn valid_name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[^\u{0}]{1,16}",
        "[a-z{}:%*?\\[\\]'\";|\\\\ \n\r$()-]{1,16}",
    ]
}

fn invalid_position() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(MAX_POSITION + 1),
        Just(u64::MAX),
        MAX_POSITION + 1..=u64::MAX
    ]
}

/// Which argument of a call is wrong.
#[derive(Debug, Clone)]
enum Wrong {
    Group(String),
    Subscription(String),
    Position(u64),
    /// `to` at or behind `from` (advance only; the others get a bad position instead).
    NotAhead {
        from: u64,
        back: u64,
    },
}

#[derive(Debug, Clone)]
struct Case {
    wrong: Wrong,
    group: String,
    subscription: String,
    partition: u32,
    position: u64,
    /// A batch with a bad entry at this index (of `len` valid entries plus it).
    batch_len: usize,
    bad_index: usize,
}

fn cases() -> impl Strategy<Value = Case> {
    let wrong = prop_oneof![
        invalid_name().prop_map(Wrong::Group),
        invalid_name().prop_map(Wrong::Subscription),
        invalid_position().prop_map(Wrong::Position),
        (0..=MAX_POSITION, 0..=3u64).prop_map(|(from, back)| Wrong::NotAhead { from, back }),
    ];
    (
        wrong,
        valid_name(),
        valid_name(),
        any::<u32>(),
        0..=MAX_POSITION,
        0..4usize,
        0..4usize,
    )
        .prop_map(
            |(wrong, group, subscription, partition, position, batch_len, bad_index)| Case {
                wrong,
                group,
                subscription,
                partition,
                position,
                batch_len,
                bad_index: bad_index.min(batch_len),
            },
        )
}

/// Asserts that `result` is the invalid-input error for `argument`.
fn refused<T: std::fmt::Debug>(
    call: &str,
    result: Result<T, Error>,
    argument: Argument,
    case: &Case,
) {
    match result {
        Err(Error::InvalidInput(invalid)) => {
            assert_eq!(invalid.argument, argument, "{call}: {invalid} for {case:?}");
        }
        other => panic!("{call} should refuse its {argument}, got {other:?} for {case:?}"),
    }
}

/// Every entry point, on the pool and on a connection of the caller's (the `*_in` methods),
/// with one argument wrong at a time: each is refused with `Error::InvalidInput` naming that
/// argument, and the proxy between the store and the server sees no request at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_inputs_are_refused_with_no_request() {
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

    let config = HistoryConfig::from_env();
    let cases_to_run = config.cases.clamp(64, 512);
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&config.seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases: cases_to_run,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    );
    let strategy = cases();
    let mut calls = 0u64;
    for _ in 0..cases_to_run {
        let case = strategy.new_tree(&mut runner).unwrap().current();
        let (mut g, mut s, p, mut position) = (
            case.group.clone(),
            case.subscription.clone(),
            case.partition,
            case.position,
        );
        let (argument, position_argument_wrong) = match &case.wrong {
            Wrong::Group(name) => {
                g = name.clone();
                (Argument::Group, false)
            }
            Wrong::Subscription(name) => {
                s = name.clone();
                (Argument::Subscription, false)
            }
            Wrong::Position(bad) | Wrong::NotAhead { from: bad, .. } => {
                position = *bad;
                (Argument::Position, true)
            }
        };
        // A position that is wrong only for advance (`to` not ahead) is valid elsewhere, so
        // the other calls are made only with a position out of range.
        let out_of_range = position > MAX_POSITION;
        let mut batch: Vec<Checkpoint> = (0..case.batch_len)
            .map(|i| Checkpoint::new(format!("ok{i}"), p, i as u64))
            .collect();
        batch.insert(case.bad_index, Checkpoint::new(s.clone(), p, position));

        if !position_argument_wrong {
            refused("load", store.load(&g, &s, p).await, argument, &case);
            refused(
                "load_in",
                store.load_in(&mut connection, &g, &s, p).await,
                argument,
                &case,
            );
            if argument == Argument::Group {
                refused("list", store.list(&g).await, argument, &case);
                refused(
                    "list_in",
                    store.list_in(&mut connection, &g).await,
                    argument,
                    &case,
                );
            }
            calls += 4;
        }
        if !position_argument_wrong || out_of_range {
            refused(
                "save",
                store.save(&g, &s, p, position).await,
                argument,
                &case,
            );
            refused(
                "save_in",
                store.save_in(&mut connection, &g, &s, p, position).await,
                argument,
                &case,
            );
            // A batch with one bad entry is refused whole, naming that entry.
            let result = store.save_all(&g, &batch).await;
            if argument != Argument::Group
                && let Err(Error::InvalidInput(invalid)) = &result
            {
                assert_eq!(invalid.batch_index, Some(case.bad_index), "{case:?}");
            }
            refused("save_all", result, argument, &case);
            refused(
                "save_all_in",
                store.save_all_in(&mut connection, &g, &batch).await,
                argument,
                &case,
            );
            let claim_argument = if position_argument_wrong {
                Argument::InitialPosition
            } else {
                argument
            };
            refused(
                "claim",
                store.claim(&g, &s, p, fingerprint, position).await,
                claim_argument,
                &case,
            );
            refused(
                "claim_in",
                store
                    .claim_in(&mut connection, &g, &s, p, fingerprint, position)
                    .await,
                claim_argument,
                &case,
            );
            calls += 6;
        }
        // advance: the wrong argument as `from` or `to`, or `to` not ahead of `from`.
        let (from, to, advance_argument) = match &case.wrong {
            Wrong::NotAhead { from, back } => {
                let to = from.saturating_sub(*back);
                (*from, to, Argument::To)
            }
            Wrong::Position(bad) if case.bad_index.is_multiple_of(2) => (*bad, 0, Argument::From),
            Wrong::Position(bad) => (0, *bad, Argument::To),
            _ => (0, 1, argument),
        };
        if let Wrong::NotAhead { .. } = case.wrong {
            let result = store.advance(&g, &s, p, from, to).await;
            assert!(
                matches!(
                    &result,
                    Err(Error::InvalidInput(invalid))
                        if matches!(invalid.reason, InvalidReason::NotAhead { .. })
                ),
                "{result:?} for {case:?}"
            );
        }
        refused(
            "advance",
            store.advance(&g, &s, p, from, to).await,
            advance_argument,
            &case,
        );
        refused(
            "advance_in",
            store.advance_in(&mut connection, &g, &s, p, from, to).await,
            advance_argument,
            &case,
        );
        calls += 2;
        // Nothing reached the server, checked after every case so a failure names it.
        assert_eq!(
            proxy.round_trips(),
            0,
            "a request reached the server for {case:?}"
        );
    }
    eprintln!(
        "{cases_to_run} invalid cases (CHECKPOINT_SEED={}), {calls} calls refused, {} round \
         trips",
        config.seed,
        proxy.round_trips()
    );

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
