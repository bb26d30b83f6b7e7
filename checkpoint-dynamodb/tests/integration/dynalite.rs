//! The whole kit on a second, independent emulator, dynalite (`DYNALITE_ENDPOINT`; see
//! `support::dynalite`), and what the two servers answer differently.
//!
//! On moto (`kit`) every request runs under one lock, so the histories there prove the store's
//! requests but not that they stay right when the server really runs them at the same time.
//! dynalite runs them concurrently with a lock per item, as DynamoDB promises per-item
//! atomicity: the same cases and histories, no global lock. Transactions (`advance_in`) stay on
//! moto: dynalite has no `TransactWriteItems` (leases use none, and run on both).
//!
//! dynalite ignores `ReturnValuesOnConditionCheckFailure`: a refused advance never comes back
//! with the old item, so every refusal here goes through the store's consistent read.

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use checkpoint_conformance::fresh_group;
use checkpoint_conformance::round_trips::CountingProxy;
use checkpoint_core::{CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint};
use checkpoint_dynamodb::DynamoDbCheckpointStore;

use crate::support::{client_for, dynalite};

/// Every clause of the monotonic contract, the concurrent histories included.
mod monotonic {
    checkpoint_conformance::checkpoint_store_tests!(crate::support::dynalite::store);
}

/// Every clause of the exclusive contract, the contenders included.
mod exclusive {
    checkpoint_conformance::exclusive_store_tests!(crate::support::dynalite::store);
}

/// The exclusive contract again through a client that drops every item an `UpdateItem` reply
/// carries, so each claim also takes its fallback read, under real per-item concurrency.
mod exclusive_without_returned_items {
    checkpoint_conformance::exclusive_store_tests!(
        crate::support::dynalite::store_without_returned_items
    );
}

/// Every clause of the operations API, under real per-item concurrency: the retire histories
/// here race zombies' saves (new and existing partitions) against the retire for real, and
/// every refusal takes the consistent read (dynalite sends no old item).
mod admin {
    checkpoint_conformance::admin_store_tests!(crate::support::dynalite::store);
}

/// Every clause of the lease contract under real per-item concurrency (the concurrent
/// acquirers, the histories): two clients of one table per test.
mod leases {
    checkpoint_conformance::lease_store_tests!(crate::support::dynalite::lease_store);
}

/// Every clause of the parked-entries contract, the conditional retry and unpark included.
mod parked {
    checkpoint_conformance::parked_store_tests!(crate::support::dynalite::store);
}

const QUERY: Fingerprint = Fingerprint::from_bytes([7; 32]);

/// The premise of the tests below: dynalite refuses a condition without sending the old item,
/// though the request asks for it. (If a later dynalite sends it, the store's refusals are
/// still right, but this module would no longer cover the read that replaces it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_condition_comes_back_without_the_old_item() {
    let store = dynalite::store().await;
    let group = fresh_group("no-old-item");
    store.claim(&group, "s", 0, QUERY, 10).await.unwrap();
    let key = |group: &str| {
        std::collections::HashMap::from([
            ("group".to_owned(), AttributeValue::S(group.to_owned())),
            (
                "key".to_owned(),
                AttributeValue::S("0000000000#s".to_owned()),
            ),
        ])
    };
    let refused = store
        .client()
        .update_item()
        .table_name(store.table())
        .set_key(Some(key(&group)))
        .update_expression("SET #p = :to")
        .condition_expression("#p = :from")
        .expression_attribute_names("#p", "position")
        .expression_attribute_values(":from", AttributeValue::N("9".to_owned()))
        .expression_attribute_values(":to", AttributeValue::N("11".to_owned()))
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .send()
        .await
        .expect_err("the condition is false");
    match refused.as_service_error() {
        Some(UpdateItemError::ConditionalCheckFailedException(failed)) => assert_eq!(
            failed.item(),
            None,
            "dynalite now returns the old item of a failed condition; the store's read after a \
             refusal without it is then covered only by exclusive_without_returned_items"
        ),
        _ => panic!("expected ConditionalCheckFailedException, got {refused:?}"),
    }
}

/// A refused advance names where the checkpoint is, read consistently, never "absent" for a
/// checkpoint that exists; the read is the one request more it costs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moved_reads_the_position_the_reply_left_out() {
    let (store, proxy) = counted_dynalite_store().await;
    let group = fresh_group("moved-read");
    store.claim(&group, "s", 0, QUERY, 10).await.unwrap();
    store.advance(&group, "s", 0, 10, 20).await.unwrap();
    proxy.reset();

    for (from, what) in [(10, "a stale position"), (15, "a position never stored")] {
        match store.advance(&group, "s", 0, from, 30).await {
            Err(Error::Moved {
                expected,
                current: Some(20),
            }) if expected == from => {}
            other => panic!("advance from {what} ({from}): expected Moved to 20, got {other:?}"),
        }
        assert_eq!(
            proxy.round_trips(),
            2,
            "the refused UpdateItem and one consistent GetItem"
        );
        proxy.reset();
    }
    match store.advance(&group, "absent", 0, 1, 2).await {
        Err(Error::Moved {
            expected: 1,
            current: None,
        }) => {}
        other => panic!("advance of a checkpoint never claimed: got {other:?}"),
    }
    assert_eq!(
        proxy.round_trips(),
        2,
        "the refused UpdateItem and the read"
    );
    assert_eq!(store.load(&group, "absent", 0).await.unwrap(), None);
    assert_eq!(store.load(&group, "s", 0).await.unwrap(), Some(20));
}

/// An advance racing the claim that creates its checkpoint at `from`: its condition may fail
/// while the item is absent, and the read after it may already find the claim's position. The
/// store must then never report `Moved` to `from` itself (the position it expected): it tries
/// again, or reports the checkpoint absent when the read found none. The two are sent together
/// (polled in either order); the requests counted on the wire show how often the read found the
/// claim's position and the advance was sent again (most races, when measured).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_advance_racing_the_first_claim_never_reports_its_own_position() {
    let (store, proxy) = counted_dynalite_store().await;
    let group = fresh_group("race-claim");
    let races = 200u32;
    let (mut won, mut absent) = (0, 0);
    for partition in 0..races {
        let claim = store.claim(&group, "s", partition, QUERY, 5);
        let advance = store.advance(&group, "s", partition, 5, 6);
        let (claimed, advanced) = if partition % 2 == 0 {
            tokio::join!(claim, advance)
        } else {
            let (advanced, claimed) = tokio::join!(advance, claim);
            (claimed, advanced)
        };
        // The claim creates the checkpoint at 5 and an advance never creates one, so the claim
        // always comes first.
        assert_eq!(claimed.unwrap(), 5, "partition {partition}");
        match advanced {
            Ok(()) => won += 1,
            Err(Error::Moved {
                expected: 5,
                current: None,
            }) => absent += 1,
            other => panic!("partition {partition}: {other:?}"),
        }
    }
    // Each race is one claim and 1 (won at once), 2 (refused, read: absent) or 3 (refused, read:
    // at 5, won on the second attempt) advance requests; a fourth would be a second refusal.
    let resent = proxy.round_trips() - u64::from(races) * 2 - absent;
    eprintln!(
        "advance racing the first claim, {races} races: {won} won ({resent} of them on a second \
         attempt after the read found the claim's position), {absent} found it absent"
    );
    let listed = store.list(&group).await.unwrap();
    assert_eq!(listed.len(), races as usize);
    let at_six = listed.iter().filter(|c| c.position == 6).count();
    assert_eq!(
        at_six, won as usize,
        "every advance reported won moved its checkpoint"
    );
    assert!(
        listed.iter().all(|c| c.position == 5 || c.position == 6),
        "{listed:?}"
    );
}

/// A store on dynalite whose requests go through a counting proxy, and the proxy (reset).
async fn counted_dynalite_store() -> (DynamoDbCheckpointStore, CountingProxy) {
    let table = dynalite::store().await.table().to_owned();
    let address = dynalite::endpoint()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let proxy = CountingProxy::start(address)
        .await
        .expect("a counting proxy in front of dynalite");
    let store = DynamoDbCheckpointStore::new(client_for(&format!("http://{}", proxy.local_addr())))
        .with_table(&table)
        .unwrap();
    store.load(&fresh_group("warm-up"), "s", 0).await.unwrap();
    proxy.reset();
    (store, proxy)
}
