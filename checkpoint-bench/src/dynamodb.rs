//! DynamoDB (on the local emulator): the store on an SDK client, and the same client sending
//! `GetItem` of a missing key, the store's own conditional `UpdateItem`, and a hand-written
//! `GetItem` followed by a conditional `PutItem`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_dynamodb::types::AttributeValue;
use checkpoint_conformance::round_trips::CountingProxy;
use checkpoint_dynamodb::DynamoDbCheckpointStore;

use crate::subject::{
    Backend, BenchError, Documented, ListFn, SaveArgs, SaveFn, Subject, UnitFn, context,
};

/// The bench's own table, deleted and created again at the start of every run.
const TABLE: &str = "checkpoint_bench";

/// The table of the `groups` rows, deleted and created again at the start of every run.
const GROUPS_TABLE: &str = "checkpoint_bench_groups";

// The store's save request as it was before the operations API (issue 13), copied from
// checkpoint-dynamodb/src/requests.rs of then (`SAVE_UPDATE`, `SAVE_CONDITION`, the attribute
// names and sort key format of layout.rs): the crate keeps them private. Kept at that version
// on purpose: the store's save now adds the tombstone's terms to the condition
// (`AND attribute_not_exists(retired) AND attribute_not_exists(pending)`) and asks for the old
// item on a refusal, so the ratio of the store's save to this row is what the tombstone costs
// a normal save (docs/performance.md, "The tombstone check").
const SAVE_UPDATE: &str = "SET #pos = :pos, #sub = :sub, #part = :part, #at = :at";
const SAVE_CONDITION: &str = "attribute_not_exists(#pos) OR #pos < :pos";

fn sort_key(subscription: &str, partition: u32) -> String {
    format!("{partition:010}#{subscription}")
}

fn primary_key(group: &str, subscription: &str, partition: u32) -> HashMap<String, AttributeValue> {
    HashMap::from([
        ("group".to_owned(), AttributeValue::S(group.to_owned())),
        (
            "key".to_owned(),
            AttributeValue::S(sort_key(subscription, partition)),
        ),
    ])
}

fn now_millis() -> AttributeValue {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_millis())
        .unwrap_or(0);
    AttributeValue::N(millis.to_string())
}

fn client(endpoint: &str) -> Client {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("bench", "bench", None, None, "static"))
        .build();
    Client::from_conf(config)
}

/// Connects, recreates the bench table and builds the direct and the counted subjects.
pub async fn setup(smoke: bool) -> Result<Backend, BenchError> {
    let endpoint = std::env::var("DYNAMODB_ENDPOINT").map_err(|_| {
        "DYNAMODB_ENDPOINT is not set: start the local server with \
         `eval \"$(bash scripts/services/dynamodb.sh up)\"` (scripts/bench.sh does)"
    })?;
    let direct_client = client(&endpoint);
    match direct_client.delete_table().table_name(TABLE).send().await {
        Ok(_) => {}
        Err(error)
            if error
                .as_service_error()
                .is_some_and(|e| e.is_resource_not_found_exception()) => {}
        Err(error) => {
            return Err(context(format!(
                "DynamoDB is not reachable at DYNAMODB_ENDPOINT={endpoint}"
            ))(error));
        }
    }
    let store = DynamoDbCheckpointStore::new(direct_client.clone()).with_table(TABLE)?;
    store.create_table().await?;
    let groups_store = DynamoDbCheckpointStore::new(direct_client.clone())
        .with_table(GROUPS_TABLE)?
        .without_timeout();
    match direct_client
        .delete_table()
        .table_name(GROUPS_TABLE)
        .send()
        .await
    {
        Ok(_) => {}
        Err(error)
            if error
                .as_service_error()
                .is_some_and(|e| e.is_resource_not_found_exception()) => {}
        Err(error) => return Err(context("deleting the groups table")(error)),
    }
    groups_store.create_table().await?;

    let authority = endpoint
        .split_once("://")
        .map_or(endpoint.as_str(), |(_, rest)| rest)
        .trim_end_matches('/');
    let proxy = CountingProxy::start(authority)
        .await
        .map_err(context("DynamoDB endpoint for the counting proxy"))?;
    let counted_client = client(&format!("http://{}", proxy.local_addr()));

    Ok(Backend {
        name: "dynamodb",
        server: "moto (DynamoDB emulator, Python; see scripts/services/dynamodb.sh)".to_owned(),
        direct: subject(direct_client)?,
        counted: Some((subject(counted_client)?, proxy)),
        groups_store: Arc::new(groups_store),
        documented: Documented {
            save: 1,
            load: 1,
            // One request per key moving forward; a key saved for the first time takes the
            // create protocol's four (the counted batch's keys are new).
            save_all: |n| n as u64..=4 * n as u64,
            // One page per 1 MB; the bench's 10,000 items are far below it.
            list: Some(|_| 1),
        },
        // `save_all` of N keys is N requests, counted, and moto serves a few hundred (tens,
        // on a busy machine) a second: 10,000 would take many minutes and show nothing the
        // smaller batches do not. The save_all targets are PostgreSQL's and Redis's.
        batch_sizes: if smoke { [50, 500] } else { [100, 1_000] },
        note: "moto is a Python emulator: its absolute figures mean little; ratios to its own floor still do",
        slow: true,
        release_exchanges: 0,
    })
}

/// The store on `client`, and the same client sending `GetItem` of a missing key, the
/// store's former conditional `UpdateItem`, the raw `Query` and the hand-written save.
fn subject(client: Client) -> Result<Subject, BenchError> {
    // No store timeout: the emulator serves one request at a time, so a request can wait
    // behind others for longer than the default 5 s; the bench measures, it does not bound.
    let store = DynamoDbCheckpointStore::new(client.clone())
        .with_table(TABLE)?
        .without_timeout();
    let floor: UnitFn = {
        let client = client.clone();
        Arc::new(move || {
            let client = client.clone();
            Box::pin(async move {
                client
                    .get_item()
                    .table_name(TABLE)
                    .set_key(Some(primary_key("bench-floor", "missing", 0)))
                    .send()
                    .await?;
                Ok(())
            })
        })
    };
    let raw_save: SaveFn = {
        let client = client.clone();
        Arc::new(move |args: SaveArgs| {
            let client = client.clone();
            Box::pin(async move { raw_update(&client, &args).await })
        })
    };
    let hand_save: SaveFn = {
        let client = client.clone();
        Arc::new(move |args: SaveArgs| {
            let client = client.clone();
            Box::pin(async move { hand_written_save(&client, &args).await })
        })
    };
    let raw_list: ListFn = Arc::new(move |group: Arc<str>| {
        let client = client.clone();
        Box::pin(async move { query_all(&client, &group).await })
    });
    Ok(Subject {
        store: Arc::new(store),
        floor,
        commit_floor: None,
        raw_save,
        hand_save,
        raw_list,
        raw_save_all: None,
        script_save_all: None,
        acquire_floor: None,
    })
}

/// The store's save request as it was (see [`SAVE_UPDATE`]), sent by the SDK directly; a
/// refusal (the position is not behind) is a save that had nothing to do, as in the store.
async fn raw_update(client: &Client, args: &SaveArgs) -> Result<(), BenchError> {
    let sent = client
        .update_item()
        .table_name(TABLE)
        .set_key(Some(primary_key(
            &args.group,
            &args.subscription,
            args.partition,
        )))
        .update_expression(SAVE_UPDATE)
        .condition_expression(SAVE_CONDITION)
        .expression_attribute_names("#pos", "position")
        .expression_attribute_names("#sub", "subscription")
        .expression_attribute_names("#part", "partition")
        .expression_attribute_names("#at", "updated_at")
        .expression_attribute_values(":pos", AttributeValue::N(args.position.to_string()))
        .expression_attribute_values(":sub", AttributeValue::S(args.subscription.to_string()))
        .expression_attribute_values(":part", AttributeValue::N(args.partition.to_string()))
        .expression_attribute_values(":at", now_millis())
        .send()
        .await;
    match sent {
        Ok(_) => Ok(()),
        Err(error)
            if error
                .as_service_error()
                .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
        {
            Ok(())
        }
        Err(error) => Err(error.into()),
    }
}

/// The raw query behind `list`: every page of the group's items, consistent, keys and
/// positions only; the number of items read.
async fn query_all(client: &Client, group: &str) -> Result<usize, BenchError> {
    let mut rows = 0;
    let mut start_key = None;
    loop {
        let page = client
            .query()
            .table_name(TABLE)
            .key_condition_expression("#g = :g")
            .projection_expression("#k, #pos")
            .expression_attribute_names("#g", "group")
            .expression_attribute_names("#k", "key")
            .expression_attribute_names("#pos", "position")
            .expression_attribute_values(":g", AttributeValue::S(group.to_owned()))
            .consistent_read(true)
            .set_exclusive_start_key(start_key.take())
            .send()
            .await?;
        rows += page.items().len();
        match page.last_evaluated_key {
            Some(key) if !key.is_empty() => start_key = Some(key),
            _ => return Ok(rows),
        }
    }
}

/// What a user writes without a conditional update on the position: a consistent `GetItem`,
/// a comparison in the client, then a `PutItem` guarded by "the position is still what I
/// read" (optimistic concurrency), again when that guard fails. Two requests when nothing
/// interferes.
async fn hand_written_save(client: &Client, args: &SaveArgs) -> Result<(), BenchError> {
    loop {
        let read = client
            .get_item()
            .table_name(TABLE)
            .set_key(Some(primary_key(
                &args.group,
                &args.subscription,
                args.partition,
            )))
            .consistent_read(true)
            .send()
            .await?;
        let stored = match read.item().and_then(|item| item.get("position")) {
            Some(AttributeValue::N(number)) => Some(number.parse::<u64>()?),
            Some(_) => return Err("a position that is not a number".into()),
            None => None,
        };
        if stored.is_some_and(|stored| stored >= args.position) {
            return Ok(());
        }
        let mut item = primary_key(&args.group, &args.subscription, args.partition);
        item.insert(
            "position".to_owned(),
            AttributeValue::N(args.position.to_string()),
        );
        item.insert(
            "subscription".to_owned(),
            AttributeValue::S(args.subscription.to_string()),
        );
        item.insert(
            "partition".to_owned(),
            AttributeValue::N(args.partition.to_string()),
        );
        item.insert("updated_at".to_owned(), now_millis());
        let put = client.put_item().table_name(TABLE).set_item(Some(item));
        let put = match stored {
            None => put.condition_expression("attribute_not_exists(#pos)"),
            Some(stored) => put
                .condition_expression("#pos = :seen")
                .expression_attribute_values(":seen", AttributeValue::N(stored.to_string())),
        };
        match put
            .expression_attribute_names("#pos", "position")
            .send()
            .await
        {
            Ok(_) => return Ok(()),
            Err(error)
                if error
                    .as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) => {}
            Err(error) => return Err(error.into()),
        }
    }
}
