//! A DynamoDB checkpoint store on `aws-sdk-dynamodb`: one table, one conditional request per
//! checkpoint.
//!
//! [`DynamoDbCheckpointStore`] implements [`CheckpointStore`](checkpoint_core::CheckpointStore),
//! [`ExclusiveCheckpointStore`](checkpoint_core::ExclusiveCheckpointStore) and the operations
//! API [`CheckpointAdmin`](checkpoint_core::CheckpointAdmin) (see
//! [Operating checkpoints](#operating-checkpoints-tombstones-without-transactions)) with requests
//! whose conditions DynamoDB evaluates atomically, so nothing is read before it is written and
//! no concurrency loses an update or moves a checkpoint back:
//!
//! | operation | request | requests |
//! | --- | --- | --- |
//! | `save` | `UpdateItem`, condition `position < :p AND attribute_not_exists(retired) AND attribute_not_exists(pending)`, old item returned on failure | 1; the first save of a checkpoint 4 (below) |
//! | `save_all` of N distinct keys | the same `UpdateItem` per key, up to 32 in flight | N (4 per key saved for the first time) |
//! | `load` | `GetItem`, `ConsistentRead` | 1 |
//! | `list` | `Query` on the group, `ConsistentRead`, every page followed | 1 per page (1 MB) |
//! | `claim` | `UpdateItem` with `if_not_exists` on a live item, `ReturnValues = ALL_NEW` | 1 (2 if the reply lacks the item); the first claim of a checkpoint 4 |
//! | `advance` | `UpdateItem`, condition `position = :from` and neither flag, old item returned on failure | 1 (2 if refused without the old item) |
//!
//! A failed condition of `save` on a live item means "not ahead": the save succeeds and changes
//! nothing, and the old item in the same reply says so. It is recognised from the SDK's typed
//! error, never from a message.
//!
//! The store takes a [`Client`](aws_sdk_dynamodb::Client) the application has built, with its
//! own region, credentials and retry configuration: throttling and transient errors are
//! retried by the SDK as that configuration says. Errors that remain keep the SDK error as
//! their source and say whether a later retry may help.
//!
//! ```no_run
//! # async fn example(client: aws_sdk_dynamodb::Client) -> Result<(), checkpoint_core::Error> {
//! use checkpoint_core::CheckpointStore;
//! use checkpoint_dynamodb::DynamoDbCheckpointStore;
//!
//! let store = DynamoDbCheckpointStore::new(client).with_table("checkpoints")?;
//! store.create_table().await?; // idempotent; or provision the table as shown below
//! store.save("billing", "invoices", 0, 42).await?;
//! store.save("billing", "invoices", 0, 17).await?; // behind: changes nothing
//! assert_eq!(store.load("billing", "invoices", 0).await?, Some(42));
//! # Ok(())
//! # }
//! ```
//!
//! A client for a local emulator (for a real table, build the configuration from the
//! environment with `aws-config` instead):
//!
//! ```no_run
//! use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
//!
//! let config = aws_sdk_dynamodb::Config::builder()
//!     .behavior_version(BehaviorVersion::latest())
//!     .endpoint_url("http://127.0.0.1:8765")
//!     .region(Region::new("us-east-1"))
//!     .credentials_provider(Credentials::new("test", "test", None, None, "static"))
//!     .build();
//! let client = aws_sdk_dynamodb::Client::from_conf(config);
//! let store = checkpoint_dynamodb::DynamoDbCheckpointStore::new(client); // table `checkpoints`
//! ```
//!
//! # Table
//!
//! The table is [`DEFAULT_TABLE`] unless
//! [`with_table`](DynamoDbCheckpointStore::with_table) names another; a name that is not a
//! DynamoDB table name (3 to 255 characters of `A-Z`, `a-z`, `0-9`, `_`, `-`, `.`) is refused
//! there, before any request. One item per (group, subscription, partition):
//!
//! | attribute | type | holds |
//! | --- | --- | --- |
//! | `group` | S, partition key (HASH) | the group, exactly as given |
//! | `key` | S, sort key (RANGE) | the partition as exactly ten decimal digits, `#`, the subscription as given |
//! | `subscription` | S | the subscription, as given (a plain copy for people and indexes) |
//! | `partition` | N | the partition (a plain copy) |
//! | `position` | N | the checkpoint position |
//! | `fingerprint` | B | the 32-byte query fingerprint; only on exclusive checkpoints |
//! | `updated_at` | N | the time of the last write, Unix epoch milliseconds (informational) |
//! | `retired` | BOOL | `true` once the subscription is retired: no read shows the item, no write changes it |
//! | `pending` | BOOL | `true` while the item's creation is unfinished (see below): no read shows it |
//!
//! A retired subscription also has a **tombstone**: an item of its group whose sort key is
//! `retired#` and the subscription (`retired#invoices`), with the plain `subscription` and
//! `updated_at`. A checkpoint's sort key starts with ten digits, so no checkpoint can have it,
//! and `list` and `load` never meet it as a checkpoint.
//!
//! Because the partition part of `key` has a fixed width, two different (subscription,
//! partition) pairs never share a sort key, whatever characters the subscription holds (`#`
//! included): `0000000001#a#b` can only be partition 1 of `a#b`. The longest sort key is
//! 523 bytes (the limit is 1024) and the longest partition key 512 bytes (the limit is 2048).
//!
//! Positions travel as DynamoDB numbers, which hold 38 decimal digits; they are sent and parsed
//! as decimal strings, exactly, never through a float. An item this store cannot have written
//! (a position of another type, negative or above `i64::MAX`, a key that is not a checkpoint
//! sort key, a fingerprint that is not 32 bytes) fails the call with a non-retryable
//! [`Error::Backend`](checkpoint_core::Error::Backend) whose source is a
//! [`checkpoint_core::UnexpectedValue`] naming the attribute: the range rules every store of
//! the workspace applies.
//!
//! [`DynamoDbCheckpointStore::create_table`] creates the table with on-demand billing. Teams
//! that provision tables themselves create the same key schema (the other attributes need no
//! definition), with the AWS CLI:
//!
//! ```text
//! aws dynamodb create-table \
//!     --table-name checkpoints \
//!     --attribute-definitions AttributeName=group,AttributeType=S AttributeName=key,AttributeType=S \
//!     --key-schema AttributeName=group,KeyType=HASH AttributeName=key,KeyType=RANGE \
//!     --billing-mode PAY_PER_REQUEST
//! ```
//!
//! or with CloudFormation:
//!
//! ```yaml
//! CheckpointsTable:
//!   Type: AWS::DynamoDB::Table
//!   Properties:
//!     TableName: checkpoints
//!     BillingMode: PAY_PER_REQUEST
//!     AttributeDefinitions:
//!       - { AttributeName: group, AttributeType: S }
//!       - { AttributeName: key, AttributeType: S }
//!     KeySchema:
//!       - { AttributeName: group, KeyType: HASH }
//!       - { AttributeName: key, KeyType: RANGE }
//!     PointInTimeRecoverySpecification:
//!       PointInTimeRecoveryEnabled: true
//! ```
//!
//! At run time the store needs `dynamodb:GetItem`, `dynamodb:PutItem` (a checkpoint's first
//! write), `dynamodb:UpdateItem` and `dynamodb:Query` on the table (plus `dynamodb:CreateTable`
//! and `dynamodb:DescribeTable` for `create_table`). The operations API needs `dynamodb:Scan`
//! (`groups`) and `dynamodb:DeleteItem` (`purge`, and a `start_at` taking back what it created
//! when refused); an application that only saves and loads never deletes anything, and its role
//! can leave both out.
//!
//! # Why `save_all` sends one request per key
//!
//! The contract wants every entry of a batch saved on its own: an entry that is not ahead of
//! its stored checkpoint must change nothing and must not stop the others. DynamoDB offers no
//! request that writes several items, each under its own condition, independently:
//!
//! - `BatchWriteItem` writes up to 25 items but takes no condition at all, so it would move
//!   checkpoints backwards;
//! - `TransactWriteItems` takes a condition per item but is all-or-nothing (and holds at most
//!   100 items): one stale entry would cancel the whole batch.
//!
//! So `save_all` collapses repeated keys to their highest position, then sends one conditional
//! `UpdateItem` per distinct key, at most [`DEFAULT_MAX_CONCURRENCY`] in flight (see
//! [`with_max_concurrency`](DynamoDbCheckpointStore::with_max_concurrency)). Wall time is
//! about N / concurrency request latencies; the request count (N) is the floor.
//!
//! # Exclusive checkpoints
//!
//! `claim` is one `UpdateItem`:
//! `SET position = if_not_exists(position, :initial), fingerprint = if_not_exists(fingerprint, :fp)`
//! on a live item (condition `attribute_exists(position)` and neither flag), returning the new
//! item. On first use the condition fails and the create protocol (below) creates the
//! checkpoint at the initial position with the fingerprint; on an existing one the claim keeps
//! the stored position; on a checkpoint only ever saved monotonically it
//! adopts it by setting the fingerprint. A stored fingerprint is never overwritten: when the
//! returned one differs from the claim's, the claim fails with
//! [`Error::QueryChanged`](checkpoint_core::Error::QueryChanged) and the item is unchanged.
//!
//! `advance` is one `UpdateItem` with the condition `position = :from` and
//! `ReturnValuesOnConditionCheckFailure = ALL_OLD`, so when it fails the response already holds
//! the item as it was, and [`Error::Moved`](checkpoint_core::Error::Moved) says where the
//! checkpoint is without a second request.
//!
//! A refusal may come back without the old item: DynamoDB sends none when there is no item (the
//! checkpoint was never claimed), and a server that ignores the setting (dynalite, and so perhaps
//! others) never sends it. The two look alike, and reporting `current: None` for the second
//! would call an existing checkpoint absent. So a refusal without the item is followed by one
//! `GetItem` with `ConsistentRead`, and `Moved` reports what it finds: the position, or `None`
//! only when there really is no item. Should that read find the checkpoint at `from` itself (it
//! was absent or behind when the condition was evaluated and has got there since), the advance
//! is sent again instead of reporting `Moved` to the position it expected; positions only move
//! forward, so the second attempt decides. The same holds for `claim`: a reply without the item
//! (a server or client that leaves `ReturnValues` out) is followed by a consistent read of it,
//! which returns what a claim at that moment returns. The store's timeout bounds each call as a
//! whole, these reads included.
//!
//! Inside the projection's own transaction: DynamoDB's transaction is one
//! `TransactWriteItems` request, so [`advance_in`](DynamoDbCheckpointStore::advance_in) sends
//! nothing and returns the same update as a `TransactWriteItem` for the caller's request, and
//! [`moved_in_transaction`](DynamoDbCheckpointStore::moved_in_transaction) turns a cancellation
//! caused by that item into `Error::Moved`, from the typed cancellation reason at its index.
//!
//! # Operating checkpoints: tombstones without transactions
//!
//! `retire` must keep a subscription gone for good: a zombie owner's later save, even to a
//! partition that never had a checkpoint, must be ignored, and checking that must cost the
//! normal save no extra request. A DynamoDB condition sees only its own item, and the design
//! may not use `TransactWriteItems` (dynalite, one of the two servers the whole suite runs on,
//! has none; and a transaction per save would double its cost). So the tombstone is in two
//! places: a **tombstone item** per retired subscription, for checkpoints created later, and
//! the **`retired` flag** on every item the subscription already has, which the normal save's
//! own condition sees:
//!
//! - **The normal save** (a checkpoint that exists, moving forward or not) is still one
//!   `UpdateItem`, with the condition
//!   `position < :p AND attribute_not_exists(retired) AND attribute_not_exists(pending)`, which
//!   is false when there is no item. When it fails, the old item comes back in the same reply
//!   (`ReturnValuesOnConditionCheckFailure = ALL_OLD`) and decides: `retired` means ignored
//!   (`Ok`), a position ahead or equal means ignored, `pending` means finishing a creation
//!   (below), and no item means creating it.
//! - **`retire`** puts the tombstone item first, then reads every item of the group with a
//!   consistent `Query` (every page) and sets `retired = true` on each of the subscription's
//!   (condition `attribute_exists`, so it never creates one). Items are marked, not deleted: a
//!   deleted item would be created again by the zombie's next save; a marked one fails that
//!   save's own condition at no extra cost.
//! - **The create protocol**, once in a checkpoint's lifetime (its first `save`, `claim` or a
//!   `start_at`): (a) `PutItem` of the item with `pending = true`, condition
//!   `attribute_not_exists(key)`; (b) a consistent `GetItem` of the tombstone (`start_at`: a
//!   consistent `Query` of the group, which holds the tombstone item): if there is one,
//!   the item is marked `retired` and the save is ignored (the claim fails with
//!   [`Error::Retired`](checkpoint_core::Error::Retired)); (c) `UpdateItem REMOVE pending`,
//!   condition `attribute_not_exists(retired)`: only now can a read see the item. When (c)
//!   finds the item ahead of its own position (another writer created it), the save goes on as
//!   a normal save. `load`, `list`, `groups` and `advance` treat a pending item as absent: it is
//!   a save that has not returned yet.
//!
//! **Why it is safe.** An item becomes visible only at (c), and (c) runs only after (b) found
//! no tombstone. If the retire's tombstone was written before (b) began, (b) sees it: a
//! consistent read reflects every write acknowledged before it. Otherwise (b) began before the
//! tombstone was acknowledged, so (a), which finished before (b), finished before the retire's
//! `Query` began (that `Query` starts only after the tombstone is acknowledged), and the
//! consistent `Query` finds the item and the retire marks it: (c), if it has not run yet, then
//! fails on `retired`, and if it has, the item was visible only before `retire` returned, as
//! the contract allows ("land before the retire, and be removed by it"). Items that existed
//! before are found by the same `Query`. So once `retire` returns, no item of the subscription
//! is ever visible again. The argument holds for any writer that runs (b) after seeing the item
//! exist, which is why a write that finds a pending item (another writer between (a) and (c))
//! runs (b) and (c) itself before its own write.
//!
//! **A crash between (a) and (c)** leaves a pending item: invisible, and finished by the next
//! save or claim of that partition (which runs (b) and (c), so a retire in between still
//! wins). A test writes such an item directly and checks both.
//!
//! **What it costs.** The normal save stays one request: its condition has two
//! `attribute_not_exists` terms more, and a refused save carries the old item back (no extra
//! capacity: a refused write is charged as a write either way). Measured on moto with the
//! bench's single-key save, see `BENCHMARKS.md`. A checkpoint's first write takes four
//! requests (the refused update, the put, the tombstone read, the update), once; a claim that
//! adopts a checkpoint a save created one more. On a server that never returns the old item
//! (dynalite), a refused save costs two more (the put is refused too, then a consistent read),
//! and a refused advance one more, as before. A zombie's save on a retired checkpoint is one
//! request; on a partition it never saved, four.
//!
//! | operation | requests |
//! | --- | --- |
//! | `retire` of a subscription with N checkpoints | 1 `PutItem`, 1 `Query` per page of the group, N `UpdateItem` (32 in flight) |
//! | `start_at` of N partitions | 1 `Query` per page of the group, N `PutItem`, 1 `Query` per page of the group again, N `UpdateItem`; a refused attempt under contention also N `DeleteItem`, and is tried again |
//! | `purge` of N items | 1 `Query` per page of the group, N `DeleteItem`, 1 `DeleteItem` of the tombstone |
//! | `retired(group)` | 1 `Query` (`begins_with(key, "retired#")`) per page |
//! | `groups()` | 1 `Scan` of the keys and flags per page ([`with_query_page_size`](DynamoDbCheckpointStore::with_query_page_size) items, else 1 MB), consistent |
//!
//! A subscription's checkpoints do not sit together in its group (the sort key starts with the
//! partition), so `retire`, `start_at` and `purge` read the whole group; `groups` reads the
//! whole table. These are operator commands, not the hot path.
//!
//! **`start_at` is not all-or-nothing on DynamoDB**: without transactions on every server it
//! runs on, it creates the partitions one by one with the create protocol (each conditional on
//! `attribute_not_exists(key)`, so it never moves an existing checkpoint). It first checks with
//! a consistent `Query` that the subscription has no item and no tombstone, then puts its
//! pending items, then reads the group again (consistently) before it makes any of them
//! visible: a tombstone refuses the call with [`Error::Retired`](checkpoint_core::Error::Retired),
//! and an item of the name on a partition this call did not create (a concurrent `start_at` or
//! save of the same name) with [`Error::Exists`](checkpoint_core::Error::Exists); a refused call
//! deletes the items it created that are still pending. Of two concurrent `start_at`s of one
//! name, whatever partitions they name, the one whose second read starts last sees every item
//! of the other (all written before the other's second read began), so **at most one
//! succeeds**; their partitions are never mixed into one subscription. Calls that refuse each
//! other that way have both taken back what they created: each tries again after a random
//! pause (up to twice its attempt's time, doubled each time, four attempts in all), and the
//! one that waits longer then finds the other's subscription and answers `Exists`. Only when
//! every attempt meets a concurrent writer are both refused (`Exists`): run it again. In the
//! kit's race of three calls over disjoint partitions, every round had exactly one winner on
//! moto and on dynalite. A call that **fails midway** (a timeout, a crash) can leave some partitions
//! created, visible or pending: an operator who sees a `start_at` fail with anything but
//! `Exists` or `Retired` lists the subscription, and either calls `start_at` for a new name or
//! retires the half-created one (`retire`, then `purge`) and starts it again.
//!
//! **`purge`**: without a tombstone, live checkpoints are refused
//! ([`Error::NotRetired`](checkpoint_core::Error::NotRetired)) and a name with nothing is
//! `Ok`. Under a tombstone it deletes every item of the subscription (those of a `retire` that
//! failed midway too), then the tombstone last, so a purge that fails midway leaves the name
//! retired and can be run again. As the contract says, purge only once no process can still
//! save under the name: a zombie that saves during a purge may leave an item marked `retired`
//! after the tombstone is gone (its save saw the tombstone, but marked its item after the
//! purge's `Query`); such an item is invisible, makes a later `start_at` of the name answer
//! `Exists`, and the next `purge` of the name deletes it.
//!
//! # Faults, timeouts and durability
//!
//! Every failure of a request is [`Error::Backend`](checkpoint_core::Error::Backend) with the
//! SDK error as its source and `retryable` decided from the SDK's error kind: a connection that
//! could not be opened or was closed before the response (a dropped connection, a server
//! restarting), a per-attempt timeout of the client's configuration, throttling and 5xx answers
//! are retryable; a missing table, a malformed item or a refused credential are not. A failed
//! call never reports success; a failed save may or may not have taken effect, and retrying it
//! is safe (saves only ever move forward). The SDK retries transient failures itself as the
//! client's retry configuration says (three attempts in standard mode), on a new connection.
//!
//! Every request is bounded by the store's timeout, [`checkpoint_core::DEFAULT_TIMEOUT`] (5 s)
//! unless [`with_timeout`](DynamoDbCheckpointStore::with_timeout) sets another (zero is
//! refused): a request that has not been answered by then, the SDK's retries of it included,
//! fails its call with [`Error::Timeout`](checkpoint_core::Error::Timeout) (retryable). It
//! bounds the whole call of `save`, `load`, `claim` and `advance` (the create protocol's
//! requests included), each entry's write of `save_all`, each page of `list`, and each request
//! of the operations API, so a large valid batch or subscription never fails for its size
//! alone; `create_table` bounds each of
//! its requests the same way and its wait for the table to become `ACTIVE` by five minutes.
//! [`without_timeout`](DynamoDbCheckpointStore::without_timeout) leaves a call bounded only by
//! the client's `TimeoutConfig` (`operation_attempt_timeout`, `connect_timeout`): without
//! those, a server that accepts connections and never answers keeps it waiting.
//!
//! Durability across server restarts is DynamoDB's: an acknowledged write is stored durably
//! before DynamoDB answers. The emulators the tests use cannot show it: moto and dynalite keep
//! every table in memory here, so a restart loses them all (a test shows exactly that on
//! moto). DynamoDB Local keeps its data across restarts only when started with
//! `-sharedDb -dbPath <dir>` on a kept directory (its container image starts it with
//! `-inMemory`, as the testcontainers fallback of the tests does); it is not run here, as its
//! licence is not an open-source one.
//!
//! What the integration tests inject, on moto servers of their own (`faults`):
//!
//! - connections cut by a proxy twice in each of 20 concurrent histories: without SDK retries
//!   the calls in flight fail, each with a retryable backend error, and the history checker
//!   finds nothing acknowledged lost and nothing moved back; with the standard retries the
//!   same cuts are retried away;
//! - the server killed while a `save_all` is in flight, then every operation during the
//!   outage, then a restart on the same port: retryable backend errors throughout; after the
//!   restart the table is gone (a permanent `ResourceNotFoundException`), and once it is
//!   created again every operation succeeds;
//! - the server paused with `SIGSTOP`: every operation returns `Error::Timeout` once the
//!   store's timeout has passed, and after `SIGCONT` the store works again;
//! - a black hole (the kit's `BlackHoleProxy` between the client and a moto of the test's own,
//!   and dynalite): below.
//!
//! **Connections that stop answering** (the server vanished without closing them: a cut
//! network path, a frozen host, a NAT that forgot them). A call on one times out, and the SDK
//! does not use that connection again: its HTTP client (hyper's pool) never takes back a
//! connection whose request was abandoned, so the store has nothing to replace; the next call
//! opens a new connection. A connection that was idle in the SDK's pool when the network
//! failed is another matter: the pool hands it out again as long as it has been idle for less
//! than the HTTP client's `pool_idle_timeout` (hyper's default is 90 s), and the call that
//! meets it times out; each such connection costs one call. (An `operation_attempt_timeout`
//! shorter than the store's timeout lets the SDK retry such a call within its time, but on the
//! next idle connection, which may be dead too.) The client's HTTP client bounds it: built
//! with a shorter `pool_idle_timeout` (`aws_smithy_http_client::Builder`), it drops the
//! connections that sat idle through an outage longer than that instead of reusing them.
//!
//! Measured by the tests with a 1 s timeout: every `save`, `load`, `save_all` and `list` in
//! the black hole returned `Error::Timeout` after 1.00 s, and once the proxy forwarded again
//! the first `save` succeeded after 7 to 13 ms on moto and 4 to 7 ms on dynalite, with no
//! failed attempt (moto closes every connection after its answer, so the pool is empty between
//! calls; on dynalite, which keeps them alive, the calls in the black hole had met and given
//! up the pool's idle connections). The bound the tests assert is the timeout and 2 s more.
//! With 16 idle connections in the pool, more than the calls in the black hole, the first
//! `save` after it succeeded only after 6.1 s, the six calls before it timing out on the dead
//! idle connections left.
//!
//! # Tracing
//!
//! Every operation is one `tracing` span at DEBUG named `checkpoint.<operation>`
//! (`checkpoint.save`, `checkpoint.save_all`, `checkpoint.advance_in`,
//! `checkpoint.create_table`, ...) with the field `backend = "dynamodb"`, the table and the
//! operation's arguments; the client and its credentials are never a field.
//!
//! # Security
//!
//! TLS: the crate depends on `aws-sdk-dynamodb` with its `default-https-client` feature, whose
//! HTTP client is hyper with rustls (the `aws-lc-rs` provider) and the platform's root
//! certificates. AWS endpoints are `https://` by default, so nothing needs enabling; only an
//! explicit `http://` endpoint (an emulator) is spoken to in plain text. A test checks that an
//! `https://` endpoint gets a TLS handshake.
//!
//! Secrets: the store's `Debug` output shows the table and the options, never the client (its
//! configuration holds the credentials provider). The SDK's own configuration redacts the
//! secret key and session token in its `Debug` output, and errors carry the response, never
//! the signed request. Tests check that the store's `Debug`, a failed call's error (`Display`,
//! `Debug` and its whole source chain) and the client configuration's `Debug` never show the
//! secret key or the session token. Requests are signed (SigV4); the secret never travels.
//!
//! # Testing against emulators: which server covers what
//!
//! The integration tests run the conformance kit (every clause of both contracts and of the
//! operations API, the concurrent histories, the retire histories and the exclusive
//! contenders) on two independent DynamoDB emulators,
//! each installed and started by the project's scripts, and neither is DynamoDB:
//!
//! - **moto** (`scripts/services/dynamodb.sh`, `DYNAMODB_ENDPOINT`; or, without it and with
//!   Docker, DynamoDB Local in a container) runs everything: the kit, `advance_in` inside a
//!   `TransactWriteItems` with its typed cancellation reasons, the old item of a failed
//!   condition, `Query` paging with `Limit`, the round-trip counts, the faults (connections cut,
//!   the server killed, paused and restarted) and the secrets checks. What it lacks is
//!   concurrency: moto evaluates a condition and applies the update in separate steps, on many
//!   threads, without a lock (two concurrent compare-and-sets from one position both won, and a
//!   concurrent batch lost an update), so the script runs it with one lock around every
//!   request. The histories on moto therefore prove that this store's requests are right given
//!   per-item atomicity, not that they stay right when a server really runs them at the same
//!   time.
//! - **dynalite** (`scripts/services/dynalite.sh`, `DYNALITE_ENDPOINT`, no fallback: without
//!   the variable its tests fail) runs requests concurrently with a lock per item, as DynamoDB
//!   promises atomicity per item, and no global lock: the whole kit runs on it again, so the
//!   histories and the contenders there meet real per-item concurrency. It has no
//!   `TransactWriteItems` (so `advance_in` is tested on moto only) and no PartiQL, and it never
//!   returns the old item of a failed condition: every refused advance there takes the
//!   consistent read described above, and a test checks that `Moved` then still names the
//!   stored position. The kit runs once more there through a client that also drops the item
//!   a claim's reply carries, so both fallbacks run under concurrency.
//!
//! The two answered every case alike but for that old item; that one difference is why
//! `advance` reads after a refusal that comes back without it.
//!
//! What neither emulator gives, and so what a user should still run against real DynamoDB (a
//! table of their own, with the same kit: `checkpoint_conformance::checkpoint_store_tests!` and
//! `exclusive_store_tests!` over a store on it):
//!
//! - DynamoDB's own concurrency control across its storage nodes, and `TransactWriteItems`
//!   conflicting with concurrent writes (`TransactionConflictException`);
//! - throttling, and the SDK's retries under it; real latency and capacity; IAM permissions
//!   (the least-privilege policy above);
//! - the 1 MB page boundary of a real `Query`: the tests page with a small `Limit` instead
//!   (`with_query_page_size`) and count the requests. moto answers a `Query` whose last page is
//!   exactly full without a `LastEvaluatedKey`; DynamoDB sends one and then an empty page.
//!   `list` handles both;
//! - durability across restarts (both emulators run in memory here).
//!
//! moto answers a `Query` by scanning every item of the table (seconds per page once a table
//! holds a few hundred thousand items), so the tests give each case a table of its own, on both
//! emulators. On DynamoDB a `Query` reads only the group's partition.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod admin;
mod compare_and_set;
mod error;
mod layout;
mod requests;
mod store;
mod transaction;
mod write;

pub use store::DynamoDbCheckpointStore;

/// The backend name in [`Error::Backend`](checkpoint_core::Error::Backend),
/// [`Error::Timeout`](checkpoint_core::Error::Timeout) and the `backend` field of every span.
pub const BACKEND: &str = "dynamodb";

/// The table a store uses unless [`with_table`](DynamoDbCheckpointStore::with_table) names
/// another.
pub const DEFAULT_TABLE: &str = "checkpoints";

/// How many `UpdateItem` requests [`save_all`](checkpoint_core::CheckpointStore::save_all) keeps
/// in flight unless [`with_max_concurrency`](DynamoDbCheckpointStore::with_max_concurrency) says
/// otherwise.
pub const DEFAULT_MAX_CONCURRENCY: usize = 32;

/// The README's example, compiled as a doc test so that it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
