//! Bad input: arbitrary names, partitions and positions through every public entry point,
//! counted on the wire. Invalid ones are refused with the invalid-input error before any
//! request leaves the process; valid ones round-trip exactly. Names that look like SQL, Lua,
//! DynamoDB expression or key syntax are stored verbatim.

use std::collections::BTreeMap;

use checkpoint_conformance::fresh_group;
use checkpoint_conformance::inputs::{Inputs, first_invalid, inputs, valid_name};
use checkpoint_conformance::round_trips::CountingProxy;
use checkpoint_core::error::Argument;
use checkpoint_core::validation::{MAX_NAME_BYTES, MAX_POSITION};
use checkpoint_core::{Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint};
use checkpoint_dynamodb::DynamoDbCheckpointStore;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use crate::support::{client_for, endpoint_address, store};

/// A store on a table of its own whose requests go through a counting proxy, warmed up.
async fn counted_store() -> (DynamoDbCheckpointStore, CountingProxy) {
    let table = store().await.table().to_owned();
    let proxy = CountingProxy::start(endpoint_address())
        .await
        .expect("starting the counting proxy");
    let store = DynamoDbCheckpointStore::new(client_for(&format!("http://{}", proxy.local_addr())))
        .with_table(&table)
        .expect("a valid table name");
    // Warm-up: the client resolves its endpoint and credentials on first use.
    store
        .load(&fresh_group("warm-up"), "s", 0)
        .await
        .expect("warm-up load");
    proxy.reset();
    (store, proxy)
}

/// Runs arbitrary inputs through every entry point of a store whose requests go through a
/// counting proxy. Each refused call must leave the count where it was; each valid call must
/// cost at least one request (which shows the proxy counts) and read back exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_inputs_are_refused_with_no_request_and_valid_ones_round_trip() {
    let (store, proxy) = counted_store().await;
    let fingerprint = Fingerprint::from_bytes([4; 32]);
    let base = fresh_group("dynamodb-bad-input");

    let config = checkpoint_conformance::history::HistoryConfig::from_env();
    // moto serves some 60 requests a second and a case sends up to 10: a few dozen cases.
    let cases = config.cases.clamp(16, 48);
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&config.seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    );
    let strategy = inputs();
    let (mut refused, mut performed) = (0u64, 0u64);
    // What the valid saves stored, to read back.
    let mut model: BTreeMap<(String, String, u32), u64> = BTreeMap::new();
    for case in 0..cases {
        let inputs = strategy
            .new_tree(&mut runner)
            .expect("generating inputs")
            .current();
        let context = format!("case {case} (CHECKPOINT_SEED={}): {inputs:?}", config.seed);
        // A fresh group per case unless the generated one is invalid (kept as generated).
        let unique = format!("{base}/{case}/{}", inputs.group);
        let group = if valid_name(&inputs.group) && unique.len() <= MAX_NAME_BYTES {
            unique
        } else {
            inputs.group.clone()
        };
        let Inputs {
            subscription: s,
            partition: p,
            position,
            from,
            to,
            ..
        } = &inputs;
        let (s, p, position, from, to) = (s.as_str(), *p, *position, *from, *to);

        // Runs one call: refused with `argument` and no request, or performed with at least one.
        macro_rules! call {
            ($name:literal, $expected:expr, $call:expr) => {{
                let before = proxy.round_trips();
                let result = $call.await;
                let trips = proxy.round_trips() - before;
                match ($expected, result) {
                    (Some(argument), Err(Error::InvalidInput(invalid))) => {
                        assert_eq!(invalid.argument, argument, "{} in {context}", $name);
                        assert_eq!(
                            trips, 0,
                            "{} sent a request for invalid input in {context}",
                            $name
                        );
                        refused += 1;
                        None
                    }
                    (Some(argument), other) => panic!(
                        "{} should be refused for its {argument}, got {other:?} in {context}",
                        $name
                    ),
                    (None, Ok(value)) => {
                        assert!(
                            trips >= 1,
                            "{} of valid input made no request in {context}",
                            $name
                        );
                        performed += 1;
                        Some(value)
                    }
                    (None, Err(error)) => {
                        panic!("{} of valid input failed: {error:?} in {context}", $name)
                    }
                }
            }};
        }

        let save_check = first_invalid(&group, Some(s), &[(Argument::Position, position)]);
        if call!("save", save_check, store.save(&group, s, p, position)).is_some() {
            let stored = model
                .entry((group.clone(), s.to_owned(), p))
                .or_insert(position);
            *stored = (*stored).max(position);
        }
        let load_check = first_invalid(&group, Some(s), &[]);
        if let Some(loaded) = call!("load", load_check, store.load(&group, s, p)) {
            assert_eq!(
                loaded,
                model.get(&(group.clone(), s.to_owned(), p)).copied(),
                "load in {context}"
            );
        }

        // A batch is refused whole for its first invalid entry.
        let batch: Vec<Checkpoint> = inputs
            .batch
            .iter()
            .map(|(s, p, position)| Checkpoint::new(s.clone(), *p, *position))
            .collect();
        let batch_check = if valid_name(&group) {
            inputs.batch.iter().find_map(|(s, _, position)| {
                first_invalid(&group, Some(s), &[(Argument::Position, *position)])
            })
        } else {
            Some(Argument::Group)
        };
        if call!("save_all", batch_check, store.save_all(&group, &batch)).is_some() {
            for (s, p, position) in &inputs.batch {
                let stored = model
                    .entry((group.clone(), s.clone(), *p))
                    .or_insert(*position);
                *stored = (*stored).max(*position);
            }
        }
        let list_check = first_invalid(&group, None, &[]);
        if let Some(listed) = call!("list", list_check, store.list(&group)) {
            let mut listed: Vec<(String, u32, u64)> = listed
                .into_iter()
                .map(|c| (c.subscription, c.partition, c.position))
                .collect();
            listed.sort();
            let want: Vec<(String, u32, u64)> = model
                .iter()
                .filter(|((g, _, _), _)| *g == group)
                .map(|((_, s, p), position)| (s.clone(), *p, *position))
                .collect();
            assert_eq!(listed, want, "list in {context}");
        }

        // The exclusive entry points, on a subscription of their own so that the monotonic
        // model above is not disturbed.
        let exclusive = format!("excl/{s}");
        let e = if valid_name(s) && exclusive.len() <= MAX_NAME_BYTES {
            exclusive.as_str()
        } else {
            s
        };
        let claim_check = first_invalid(&group, Some(e), &[(Argument::InitialPosition, position)]);
        let claimed = call!(
            "claim",
            claim_check,
            store.claim(&group, e, p, fingerprint, position)
        );
        if let Some(claimed) = claimed {
            assert_eq!(
                claimed, position,
                "a first claim returns its initial position in {context}"
            );
        }
        // From the claimed position when there is one, so that a valid advance can succeed.
        let (from, to) = match claimed {
            Some(at) if at < MAX_POSITION => (at, at + 1),
            _ => (from, to),
        };
        let mut advance_check = first_invalid(
            &group,
            Some(e),
            &[(Argument::From, from), (Argument::To, to)],
        );
        if advance_check.is_none() && to <= from {
            advance_check = Some(Argument::To);
        }

        // The transactional advance builds a request without sending it: the same rules, an
        // error rather than a panic, and never a request.
        let before = proxy.round_trips();
        match (advance_check, store.advance_in(&group, e, p, from, to)) {
            (Some(argument), Err(Error::InvalidInput(invalid))) => {
                assert_eq!(invalid.argument, argument, "advance_in in {context}");
                refused += 1;
            }
            (None, Ok(item)) => assert!(item.update().is_some(), "{context}"),
            (expected, other) => panic!(
                "advance_in (refusal expected for {expected:?}) gave {other:?} in \
                 {context}"
            ),
        }
        assert_eq!(proxy.round_trips(), before, "advance_in made a request");

        if advance_check.is_some() {
            call!(
                "advance",
                advance_check,
                store.advance(&group, e, p, from, to)
            );
        } else {
            // Valid: it moves when the checkpoint is at `from`, and is refused as moved
            // otherwise; either way the server was asked.
            let before = proxy.round_trips();
            let result = store.advance(&group, e, p, from, to).await;
            assert!(
                proxy.round_trips() > before,
                "a valid advance made no request in {context}"
            );
            performed += 1;
            match result {
                Ok(()) => {
                    assert_eq!(
                        claimed,
                        Some(from),
                        "advance moved an unclaimed checkpoint in {context}"
                    );
                    assert_eq!(
                        store.load(&group, e, p).await.expect("load"),
                        Some(to),
                        "{context}"
                    );
                }
                Err(Error::Moved { .. }) => assert_ne!(
                    claimed,
                    Some(from),
                    "advance from the claimed position refused in {context}"
                ),
                Err(error) => panic!("advance of valid input failed: {error:?} in {context}"),
            }
        }
    }
    eprintln!(
        "bad input: {cases} cases (CHECKPOINT_SEED={}), {refused} calls refused with no \
         request, {performed} performed, {} requests in all",
        config.seed,
        proxy.round_trips()
    );
    assert!(
        refused > 0 && performed > 0,
        "both kinds of input were tried"
    );
}

/// Names that mean something in SQL, Lua, DynamoDB expressions or this store's own sort key are
/// stored and listed verbatim, and never collide.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_that_look_like_syntax_are_stored_verbatim() {
    let store = store().await;
    let names = [
        "'; DROP TABLE checkpoints; --",
        "\" OR 1=1 --",
        "redis.call('FLUSHALL')",
        "]] .. os.exit() .. [[",
        "#",
        "#pos",
        ":pos",
        ":",
        "{a}",
        "{",
        "%",
        "%s%n",
        "\n",
        "\r\n",
        "\\",
        "0000000001#a",
        "attribute_not_exists(position)",
        "position < :pos OR",
        "*",
        "\u{feff}",
        "é",
        "😀",
        " ",
    ];
    // Every name as a subscription of one group, each under its own partition.
    let group = fresh_group("verbatim");
    for (partition, subscription) in (0_u32..).zip(names) {
        store
            .save(&group, subscription, partition, u64::from(partition) + 1)
            .await
            .unwrap_or_else(|error| panic!("save {subscription:?}: {error:?}"));
    }
    let mut listed: Vec<(String, u32, u64)> = store
        .list(&group)
        .await
        .expect("list")
        .into_iter()
        .map(|c| (c.subscription, c.partition, c.position))
        .collect();
    listed.sort();
    let mut want: Vec<(String, u32, u64)> = (0_u32..)
        .zip(names)
        .map(|(partition, name)| (name.to_owned(), partition, u64::from(partition) + 1))
        .collect();
    want.sort();
    assert_eq!(listed, want);
    for (partition, subscription) in (0_u32..).zip(names) {
        assert_eq!(
            store
                .load(&group, subscription, partition)
                .await
                .expect("load"),
            Some(u64::from(partition) + 1),
            "{subscription:?}"
        );
    }

    // Every name as a group (the table is the test's own), holding one checkpoint named after
    // it: listing one never shows another's.
    for (position, name) in (1_u64..).zip(names) {
        store.save(name, name, 7, position).await.expect("save");
    }
    for (position, name) in (1_u64..).zip(names) {
        assert_eq!(
            store.list(name).await.expect("list"),
            vec![Checkpoint::new(name, 7, position)],
            "group {name:?}"
        );
    }
}
