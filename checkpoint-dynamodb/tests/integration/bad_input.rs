//! Bad input: arbitrary names, partitions and positions through every public entry point,
//! counted on the wire by the kit's bad-input driver. Invalid ones are refused with the
//! invalid-input error before any request leaves the process; valid ones round-trip exactly.
//! Names that look like SQL, Lua, DynamoDB expression or key syntax are stored verbatim.

use async_trait::async_trait;
use checkpoint_conformance::fresh_group;
use checkpoint_conformance::harness::bad_input::{BadInput, Call, MoreEntryPoints};
use checkpoint_core::{Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint};
use checkpoint_dynamodb::DynamoDbCheckpointStore;

use crate::support::{counted_store, store};

/// `advance_in`, which builds the caller's `TransactWriteItems` item without sending it: the
/// same rules as `advance`, an error rather than a panic, and never a request.
struct AdvanceIn<'a>(&'a DynamoDbCheckpointStore);

#[async_trait(?Send)]
impl MoreEntryPoints for AdvanceIn<'_> {
    fn build(&mut self, call: Call<'_>) -> Vec<(&'static str, Result<(), Error>)> {
        let Call::Advance {
            group,
            subscription,
            partition,
            from,
            to,
        } = call
        else {
            return Vec::new();
        };
        let built = self
            .0
            .advance_in(group, subscription, partition, from, to)
            .map(|item| assert!(item.update().is_some(), "an update item: {item:?}"));
        vec![("advance_in", built)]
    }
}

/// Runs arbitrary inputs through every entry point of a store whose requests go through a
/// counting proxy. Each refused call must leave the count where it was; each valid call must
/// cost at least one request (which shows the proxy counts) and read back exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_inputs_are_refused_with_no_request_and_valid_ones_round_trip() {
    let (store, proxy) = counted_store().await;
    let report = BadInput::new(&store, &proxy)
        // moto serves some 60 requests a second and a case sends up to 10: a few dozen cases.
        .cases_between(16, 48)
        .run(&mut AdvanceIn(&store))
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    eprintln!("{} requests in all: {report}", proxy.round_trips());
}

/// A few invalid calls, one per entry point, against a store behind the proxy: not one
/// request, and nothing of a refused batch stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_input_sends_nothing() {
    let (store, proxy) = counted_store().await;
    let group = fresh_group("invalid");
    let batch = [Checkpoint::new("ok", 0, 1), Checkpoint::new("bad\0", 0, 1)];
    let fingerprint = Fingerprint::from_bytes([1; 32]);
    let refused = [
        ("save", store.save(&group, "", 0, 1).await),
        ("save", store.save(&group, "s", 0, u64::MAX).await),
        ("load", store.load("", "s", 0).await.map(drop)),
        ("list", store.list(&"g".repeat(513)).await.map(drop)),
        ("save_all", store.save_all(&group, &batch).await),
        (
            "claim",
            store
                .claim(&group, "s", 0, fingerprint, u64::MAX)
                .await
                .map(drop),
        ),
        ("advance", store.advance(&group, "s", 0, 5, 5).await),
        (
            "advance_in",
            store.advance_in(&group, "s", 0, 5, 4).map(drop),
        ),
    ];
    for (call, result) in refused {
        assert!(
            result.unwrap_err().invalid_input().is_some(),
            "{call} was not refused as invalid input"
        );
    }
    assert_eq!(
        proxy.round_trips(),
        0,
        "invalid input must be rejected before any request"
    );
    assert_eq!(
        store.load(&group, "ok", 0).await.unwrap(),
        None,
        "nothing of the invalid batch was stored"
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

/// Every invalid lease call of the kit, through all six lease operations: refused with the
/// invalid-input error naming the argument, and not one request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_lease_input_sends_nothing() {
    let (store, proxy) = counted_store().await;
    let refused = checkpoint_conformance::harness::bad_input::bad_lease_input(&store, Some(&proxy))
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert!(refused > 0, "the kit made no invalid lease call");
    eprintln!("{refused} invalid lease calls refused with no request");
}
