//! A DynamoDB checkpoint store on `aws-sdk-dynamodb`: one table, conditional writes.
//!
//! [`DynamoDbCheckpointStore`] implements [`CheckpointStore`](checkpoint_core::CheckpointStore),
//! [`ExclusiveCheckpointStore`](checkpoint_core::ExclusiveCheckpointStore), the operations
//! API [`CheckpointAdmin`](checkpoint_core::CheckpointAdmin), partition leases,
//! [`LeaseStore`](checkpoint_core::LeaseStore) (see [Leases](#leases): DynamoDB has no clock),
//! and parked entries, [`ParkedStore`](checkpoint_core::parked::ParkedStore) (see
//! [Parked entries](#parked-entries)). Every write is a request whose
//! condition DynamoDB evaluates atomically on its item, so nothing is read before it is written
//! and no concurrency loses an update or moves a checkpoint back. The store takes the
//! [`Client`](aws_sdk_dynamodb::Client) the application built: its region, credentials and
//! retry configuration are used as they are.
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
//! A client for a local emulator (for a real table, build it from the environment with
//! `aws-config`):
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
//! [`DEFAULT_TABLE`] unless [`with_table`](DynamoDbCheckpointStore::with_table) names another
//! (a name DynamoDB would refuse is refused there). One item per (group, subscription,
//! partition):
//!
//! | attribute | type | holds |
//! | --- | --- | --- |
//! | `group` | S, partition key (HASH) | the group, as given |
//! | `key` | S, sort key (RANGE) | the partition as exactly ten decimal digits, `#`, the subscription as given |
//! | `subscription`, `partition` | S, N | plain copies of the key parts, for people and indexes |
//! | `position` | N | the checkpoint position, sent and parsed as a decimal string, exactly |
//! | `fingerprint` | B | the 32-byte query fingerprint; only on exclusive checkpoints |
//! | `updated_at` | N | the time of the last write, Unix epoch milliseconds (informational) |
//! | `retired` | BOOL | `true` once the subscription is retired: no read shows the item, no write changes it |
//! | `pending` | BOOL | `true` while the item's creation is unfinished (below): no read shows it |
//!
//! A retired subscription also has a **tombstone**: an item of its group with the sort key
//! `retired#` and the subscription. A checkpoint's sort key starts with ten digits, so the two
//! never meet, and two (subscription, partition) pairs never share a sort key, whatever the
//! subscription holds (`0000000001#a#b` can only be partition 1 of `a#b`). An item this store
//! cannot have written (a position of another type, negative or above `i64::MAX`, a foreign
//! sort key, a fingerprint that is not 32 bytes) fails the call with a non-retryable
//! [`Error::Backend`](checkpoint_core::Error::Backend) whose source is a
//! [`checkpoint_core::UnexpectedValue`].
//!
//! Every group also has a **marker**, an item under the partition key `"\0groups"` whose sort
//! key is the group's name, which `groups` reads instead of the checkpoints (see
//! [Groups](#groups-a-marker-per-group)); the leases have items of their own (see
//! [Leases](#leases)), and so do parked entries (see [Parked entries](#parked-entries)). All
//! live under partition keys that start with NUL, which no group name holds, so no read of a
//! group ever meets them.
//!
//! [`create_table`](DynamoDbCheckpointStore::create_table) creates the table with on-demand
//! billing. To provision it yourself, only the key schema needs defining:
//!
//! ```text
//! aws dynamodb create-table \
//!     --table-name checkpoints \
//!     --attribute-definitions AttributeName=group,AttributeType=S AttributeName=key,AttributeType=S \
//!     --key-schema AttributeName=group,KeyType=HASH AttributeName=key,KeyType=RANGE \
//!     --billing-mode PAY_PER_REQUEST
//! ```
//!
//! # Requests per operation
//!
//! Counted on the wire by the integration tests (`round_trips`). A checkpoint that exists costs
//! one request per write; its first write (a `save`, `claim` or `start_at`) takes the create
//! protocol's four, once, and one more, the group's marker `PutItem` (sent at the same time as
//! the tombstone read), when this store instance has not written that group's marker yet.
//!
//! | operation | requests |
//! | --- | --- |
//! | `save` | 1 `UpdateItem` (condition `position < :p AND attribute_not_exists(retired) AND attribute_not_exists(pending)`), ahead or behind; the first save of a checkpoint 4, or 5 with the group's marker (the first this instance makes in the group) |
//! | `save_all` of N distinct keys | N `UpdateItem`, at most [`DEFAULT_MAX_CONCURRENCY`] in flight; 4 per key saved for the first time, and the group's marker once if this instance has not written it (60 new keys of a new group: 241); an empty batch 0 |
//! | `load` | 1 `GetItem`, `ConsistentRead` |
//! | `list` | 1 `Query`, `ConsistentRead`, per page (1 MB, or [`with_query_page_size`](DynamoDbCheckpointStore::with_query_page_size) items) |
//! | `claim` | 1 `UpdateItem` with `if_not_exists`, returning the item, refused or not (a monotonic checkpoint is adopted in it); 2 when the reply lacks the item; the first claim of a checkpoint 4 (5 with the group's marker) |
//! | `advance` | 1 `UpdateItem`, condition `position = :from`, the old item returned when refused; 2 when a refusal comes back without it (no checkpoint, or a server that leaves it out) |
//! | `start_at` of 3 partitions | 8: a `Query` of the group, a `PutItem` each, a second `Query`, an `UpdateItem` each; 9 when this instance has not written the group's marker (its `PutItem` beside the second `Query`) |
//! | `retire` of 3 checkpoints | 5: the tombstone `PutItem`, a `Query` of the group, an `UpdateItem` each; 6 when this instance has not written the group's marker (its `PutItem` first) |
//! | a save of a retired subscription | 1 on an existing checkpoint; 4 on a partition it never saved |
//! | `retired` | 1 `Query` per page |
//! | `purge` of 4 items | 7: a `Query` of the group, a `DeleteItem` each, a `Query` of the subscription's leases (and a `DeleteItem` per lease and heartbeat it finds), the tombstone's `DeleteItem` |
//! | `groups` of G groups | 1 + G, however many checkpoints: a `Query` of the markers per page, then a `Query` with `Limit` 1 per marked group, at most [`DEFAULT_MAX_CONCURRENCY`] at once (more only for a group whose last items are hidden: see below); the first call on a table without the "markers complete" item fills the markers in first |
//! | `park`, `retry_parked`, `unpark`, `parked` | 1 each: see [Parked entries](#parked-entries) |
//! | `create_table` of an existing table | `CreateTable` (refused), `DescribeTable`, a `GetItem` of the "markers complete" item; the first time on a table of an earlier version, the filling-in too |
//!
//! A `Query` of the group counts once per page. `save_all` sends one request per key because
//! no DynamoDB request writes several items each under its own condition independently:
//! `BatchWriteItem` takes no condition (it would move checkpoints back), `TransactWriteItems`
//! is all-or-nothing (one stale entry would cancel the batch).
//!
//! A refusal of `advance` carries the item as it was (`ReturnValuesOnConditionCheckFailure`), so
//! [`Error::Moved`](checkpoint_core::Error::Moved) names the current position without a read.
//! Without that item the store reads the position consistently instead, so that `Moved` never
//! calls an existing checkpoint absent; should the read find it at `from`, the advance is sent
//! again (positions only move forward, so that attempt decides). `claim` keeps a stored
//! fingerprint and fails with [`Error::QueryChanged`](checkpoint_core::Error::QueryChanged)
//! when it differs.
//!
//! In the projection's own transaction: [`advance_in`](DynamoDbCheckpointStore::advance_in)
//! sends nothing and returns the advance as a `TransactWriteItem` for the caller's
//! `TransactWriteItems`; [`moved_in_transaction`](DynamoDbCheckpointStore::moved_in_transaction)
//! reads `Error::Moved` from a cancellation caused by that item.
//!
//! # Retire without transactions: tombstones and the create protocol
//!
//! After `retire`, a zombie owner's later save, even to a partition never saved, must be
//! ignored, at no extra request for the normal save. A condition sees only its own item, and
//! the store uses no transactions (dynalite, one of the servers the tests run on, has none). So
//! the tombstone is in two places: the **`retired` flag** on every existing item, which the
//! normal save's own condition sees, and the **tombstone item**, which a checkpoint's creation
//! reads:
//!
//! - **`retire`** puts the tombstone, then reads the group with a consistent `Query` and sets
//!   `retired` on each of the subscription's items (only where the item exists). Marked, not
//!   deleted: a deleted item would be created again by the zombie's next save.
//! - **The create protocol**: (a) `PutItem` of the item with `pending = true`, only where no
//!   item is; (b) a consistent `GetItem` of the tombstone: if there is one, the item is marked
//!   `retired` and the save ignored (a claim fails with
//!   [`Error::Retired`](checkpoint_core::Error::Retired)), and at the same time the group's
//!   marker is put (see [Groups](#groups-a-marker-per-group)); (c) `REMOVE pending`, only if
//!   not `retired`. Reads treat a pending item as absent.
//!
//! **Why it is safe.** An item becomes visible only at (c), after (b) found no tombstone. If
//! the tombstone was acknowledged before (b) began, (b) sees it (a consistent read reflects
//! every acknowledged write). Otherwise (a) finished before the tombstone was acknowledged, so
//! before the retire's `Query` began: the `Query` finds the item and marks it, and (c) then
//! fails, or ran before `retire` returned, as the contract allows. Every writer that finds a
//! pending item runs (b) and (c) itself before its own write, so the argument holds for it too,
//! and a crash between (a) and (c) leaves an invisible item that the next write of that
//! partition finishes.
//!
//! **`start_at`** runs the protocol for every partition at once, reading the group again after
//! its pending puts: a tombstone refuses it with `Retired`, another writer's item of the name
//! with [`Error::Exists`](checkpoint_core::Error::Exists), and a refused call deletes what it
//! created. Of concurrent calls for one name at most one succeeds; calls that refused each
//! other try again after a random pause (four attempts in all). It is **not all-or-nothing**: a
//! call that fails midway (a timeout, a crash) can leave some partitions; retire and purge the
//! name, or use a new one.
//!
//! **`purge`** refuses live checkpoints without a tombstone
//! ([`Error::NotRetired`](checkpoint_core::Error::NotRetired)); under one it deletes every item
//! of the subscription, then the tombstone last, so a purge that fails midway can run again.
//! Purge only once no process can still save under the name: a zombie saving during a purge
//! may leave an invisible retired item, which makes a later `start_at` of the name answer
//! `Exists` until the next `purge`.
//!
//! # Groups: a marker per group
//!
//! `groups` must cost what the number of groups costs, not what the table holds: a `Scan`
//! reads (and DynamoDB bills) every checkpoint ever written. So every group has a **marker**:
//! an item with the partition key `"\0groups"` and the group's name as its sort key (plus
//! `updated_at`). `groups` is a consistent `Query` of that one partition key, which returns
//! the names sorted by their bytes, as the contract wants, then a check of each marked group.
//!
//! - **Written before anything of the group is visible.** The create protocol puts the marker
//!   at step (b), beside the tombstone read, and only after both does (c) make the item
//!   visible; `start_at` puts it beside its second `Query`, before its (c); `retire` puts it
//!   before the tombstone. A failed marker fails the call, which leaves nothing visible (a
//!   pending item, finished with its marker by the next write). So every group with a live
//!   checkpoint or a tombstone has its marker. The normal save, on an existing checkpoint,
//!   never touches it: still one request.
//! - **Never deleted, and checked.** `purge` leaves the marker: deleting it could race a
//!   first save in another process that has just written it (or remembers it), and lose a
//!   group that has a checkpoint. A stale marker is filtered out instead: for each marker,
//!   `groups` sends a consistent `Query` of the group from its last item backwards (a group's
//!   tombstones sort last), `Limit` 1, filtered to items neither `retired` nor `pending`; a
//!   group shows when one comes back. Only a group whose last items are all hidden (retired
//!   leftovers without a tombstone, pending items) takes more pages, each reading ten times
//!   more items (up to 1,000). A group emptied by `purge` costs its one `Query` in every
//!   `groups` after.
//! - **Written once per store instance.** Each instance (with its clones) remembers the
//!   groups whose marker it has written (up to 10,000, then it starts again), so only its
//!   first checkpoint creation, `start_at` or `retire` in a group pays the marker; concurrent
//!   first writes of a group (a `save_all` of new keys) send it once, the others waiting for
//!   it. That memory cannot go stale, as the store never deletes a marker (delete one by hand
//!   only with every writer stopped).
//! - **One partition key.** Markers are written at most once per group and instance, so their
//!   partition's throughput (1,000 writes and 3,000 reads per second on DynamoDB) limits only
//!   a table that creates groups faster than that.
//!
//! **Tables written by an earlier version** have no markers. The item with the sort key
//! `"\0complete"` under `"\0groups"` (it sorts before every group, so the markers' first page
//! shows it) says that every group has its marker. Without it, the filling-in runs first: one
//! consistent `Scan` of the partition keys, a marker `PutItem` per group found (any group
//! with an item: the check leaves out those with nothing to show), then the "complete" item.
//! [`create_table`](DynamoDbCheckpointStore::create_table) does it (after one `GetItem` of the
//! "complete" item), and so does the first `groups` on a table without it (a table
//! provisioned by hand and never given to `create_table`); after that no call scans again.
//! Concurrent fillings-in are harmless: each writes the same markers. On a new table the
//! `Scan` reads nothing.
//!
//! **A mixed-version deployment** (a process of an earlier version still writing while this one
//! has filled the markers in): the earlier version writes no markers, so a group whose first
//! item it writes after the filling-in is not listed by `groups` (its checkpoints are saved,
//! loaded and listed by `list` as always) until this version creates a checkpoint, a
//! `start_at` or a `retire` in it, or until
//! [`fill_in_group_markers`](DynamoDbCheckpointStore::fill_in_group_markers) runs: run it once
//! after the last process of the earlier version has stopped. Groups it wrote before the
//! filling-in are found by the `Scan` (a pending item counts). The earlier version's own
//! `groups` skips the markers (their partition key holds a NUL) and answers as before.
//!
//! # Leases
//!
//! DynamoDB has no clock a condition can read, so no request can say "expired". A lease is
//! held instead while its owner's **heartbeat** is alive, and liveness is judged on the
//! monotonic clocks of the store instances (`std::time::Instant`), never on wall clocks: the
//! Kinesis Client Library's lease counter, kept per owner instead of per lease, so that a
//! renew is the same requests whatever the number of leases.
//!
//! **Items**, in the same table, under a partition key no group can have (group names hold no
//! NUL): `group` = `"\0leases\0"` + group + `"\0"` + subscription. `list`, `groups` and the
//! rest of the operations API never show them.
//!
//! | sort key `key` | attributes |
//! | --- | --- |
//! | `lease#` + the partition as ten digits | `owner` S (absent when free), `owner_generation` N, `epoch` N, `handover_requested_by` S, `partition` N, `updated_at` N |
//! | `owner#` + the owner, its heartbeat | `counter` N (+1 on every acquire and renew), `generation` N, `duration_ms` N (of its last acquire or renew), `incarnation` N (random, set when the item is created), `ended` BOOL (left or taken over), `updated_at` N |
//!
//! A lease is **held by X** when its `owner` is X and its `owner_generation` is X's heartbeat's
//! `generation` (not ended). A generation only grows (until `purge` deletes the heartbeat
//! with every lease, which is why the heartbeat is ended, never deleted): acquiring with no live local deadline
//! (a new process, or one past its deadline) starts a new one, and `leave` and a takeover end
//! it, so every lease of an earlier generation is free at once and never held again.
//!
//! **What each store instance keeps in memory** (shared by its clones): for every owner it
//! acquired for, the generation and its **local deadline**,
//! [`holder_deadline`](checkpoint_core::lease::holder_deadline)`(sent, duration)` from when it
//! sent the last heartbeat write that succeeded; for every heartbeat it has read, the first
//! instant (after the reply arrived) it saw it with its current counter, generation and
//! incarnation. An owner whose heartbeat this instance has seen unchanged for the heartbeat's
//! `duration_ms` is **dead** to this instance: `leases` leaves it and its leases out, and
//! `acquire` may take them.
//!
//! **Taking over** a dead owner Y's lease: an `UpdateItem` ends Y's heartbeat (new generation,
//! `ended`) only if its counter, generation and incarnation are still the ones observed; that
//! frees every lease of Y at once, and each lease is then granted on its epoch (condition
//! `epoch = :seen`, next epoch). So the first `acquire` that meets a live-looking owner only
//! observes it, and one at least its duration later takes over. When the end is refused
//! because Y's heartbeat changed since the read, the taker reads the leases again (one more
//! consistent `Query`): a new generation of Y (Y acquiring again at that very moment, or
//! another taker's end) has freed those leases as surely, and they are granted on their epoch
//! all the same; a beat of the same generation means Y is live, and they are refused. (Without
//! that look, an expired lease was refused while its former holder was acquiring: the kit's
//! `an_expired_lease_goes_to_a_taker_racing_its_former_holder` failed in its first round.) No
//! transactions are used (dynalite has none).
//!
//! **Why it is safe.** The heartbeat write Y last made was sent (Y's deadline counts from there)
//! before DynamoDB executed it, which was before the read in which the taker first saw its
//! counter, whose reply came before the taker's first instant. The taker then waits Y's whole
//! `duration` on its own clock, while Y stops at `safe_duration(duration)` on its own: with both
//! clock rates within [`MAX_CLOCK_RATE_ERROR`](checkpoint_core::lease::MAX_CLOCK_RATE_ERROR)
//! of real time, Y has stopped before the heartbeat is ended. A heartbeat write of Y after the
//! observation changes the counter, and the end's condition refuses; one after the end fails
//! its own condition (`generation = :held`): [`Error::NotHeld`](checkpoint_core::Error::NotHeld).
//!
//! **What this assumes**: each taker measures `duration` on its own monotonic clock from when it
//! first saw the counter; clock *rates* are bounded by `MAX_CLOCK_RATE_ERROR`, no clock needs to
//! agree with another on the time; a holder stops using its leases at its local deadline (the
//! store refuses its renew and release after it); a holder renews well within `duration`
//! (a renew sent after the local deadline is `NotHeld`); an owner id is used by one process at
//! a time, and its `acquire`, `renew`, `release` and `leave` go through one store instance (or
//! its clones): another instance does not know its local deadline, so its `renew` is `NotHeld`
//! and its `release` reports `not_held` (its `leave` still ends the heartbeat, releasing
//! nothing it can name). An instance that has just started counts every heartbeat not ended as
//! live until it has watched it for its duration (a crashed owner's heartbeat stays until a
//! takeover ends it, or `purge`). The **failover time** is up to `duration` plus one acquire interval of the taker
//! after its first observation of the dead owner's last heartbeat. `time_left` is always `None`:
//! no clock can tell it.
//!
//! | operation | requests |
//! | --- | --- |
//! | `acquire` of N partitions | a consistent `GetItem` of the tombstone and a consistent `Query` of the subscription's leases (one per page), at once; an `UpdateItem` of the heartbeat; then, at once, an `UpdateItem` per dead owner taken over and a conditional `PutItem` (new) or `UpdateItem` (free, or taken over) per partition granted: 3 + N for N new partitions, 3 when all are held already; one more `Query` when a takeover's end is refused (the heartbeat changed since the read) |
//! | `renew` | 3 at once, whatever the number of leases: the heartbeat's conditional `UpdateItem`, the tombstone's `GetItem`, the `Query` (one per page); 1 (`GetItem`) when this instance holds the owner past its deadline or never did |
//! | `release` of N partitions | N conditional `UpdateItem` (`owner = :o AND owner_generation = :g`); 0 when this instance does not hold the owner live |
//! | `leave` | 2 at once: the `UpdateItem` ending the heartbeat (every lease of the owner free with it), the `Query` |
//! | `leases` | 1 `Query` per page |
//! | `request_handover` | the `Query`, then a conditional `UpdateItem` per partition named that another owner holds live |
//!
//! The tombstone's `GetItem` is the retired check: the heartbeat is in another partition key
//! than the tombstone, so no condition can see it, and a `TransactWriteItems` with a
//! `ConditionCheck` would cost as much (2 write units) and is missing on dynalite. A `renew`
//! of a retired subscription may still count one more beat (invisible); an `acquire` of one
//! writes nothing. `retire` does not touch leases; `purge` of a retired subscription deletes
//! them with its heartbeats.
//!
//! # Parked entries
//!
//! [`ParkedStore`](checkpoint_core::parked::ParkedStore): the entries a subscription's handler
//! failed on every retry. One item per entry, in the same table, under a partition key no
//! group, lease or marker can have: `group` = `"\0parked\0"` + group.
//!
//! | attribute | type | holds |
//! | --- | --- | --- |
//! | `group` | S, partition key | `"\0parked\0"` + the group |
//! | `key` | S, sort key | the partition as ten digits, `#`, the position as nineteen digits, `#`, the subscription as given |
//! | `subscription`, `partition`, `position` | S, N, N | plain copies of the key parts, for people |
//! | `error` | S | the handler's last error; absent when empty |
//! | `attempts` | N | how many times the handler ran |
//! | `parked_at` | N | when it was parked, Unix epoch milliseconds |
//! | `retry_requested` | BOOL | whether an operator asked for a retry since it was parked |
//!
//! Both numbers of the sort key have a fixed width (`i64::MAX` has nineteen digits), so no two
//! entries share a sort key, whatever the subscription holds; the entry is read back from the
//! sort key, the position exactly (a decimal string, never a float).
//!
//! | operation | requests |
//! | --- | --- |
//! | `park` | 1 `PutItem` of the whole item: an entry parked before is replaced, its retry request cleared |
//! | `parked` | 1 `Query` of the group's parked partition key, `ConsistentRead`, per page (as `list`), sorted by subscription bytes, partition and position in the client |
//! | `retry_parked` | 1 `UpdateItem` with the condition `attribute_exists(key)`; its refusal is `Ok(false)` |
//! | `unpark` | 1 `DeleteItem` with the condition `attribute_exists(key)`; its refusal is `Ok(false)` |
//!
//! Parked entries are independent of checkpoints: `retire` and `purge` leave them, and a group
//! that holds only parked entries has no marker, so `groups` does not list it. An item under
//! the parked partition key that this store cannot have written is a non-retryable
//! [`Error::Backend`](checkpoint_core::Error::Backend) whose source is a
//! [`checkpoint_core::UnexpectedValue`].
//!
//! # Faults and timeouts
//!
//! A failed request is [`Error::Backend`](checkpoint_core::Error::Backend) with the SDK error
//! as its source, retryable when a retry may help (no complete answer, throttling, 5xx,
//! transaction conflicts), not for a missing table, a malformed item or a refused credential.
//! The SDK first retries as the client's retry configuration says. A failed save may or may
//! not have taken effect; retrying it is safe.
//!
//! The store's timeout ([`checkpoint_core::DEFAULT_TIMEOUT`] unless
//! [`with_timeout`](DynamoDbCheckpointStore::with_timeout) says otherwise) fails a request, the
//! SDK's retries included, with [`Error::Timeout`](checkpoint_core::Error::Timeout). It bounds
//! the whole of `save`, `load`, `claim` and `advance`, each key of `save_all`, each page of
//! `list` and each request of the operations API and of the lease operations, so size alone
//! never fails a call. A lease call that timed out may or may not have taken effect: a
//! timed-out `acquire` leaves the local deadline as it was (a late heartbeat write only delays
//! a takeover), and the caller stops at its own deadline either way.
//! [`without_timeout`](DynamoDbCheckpointStore::without_timeout) leaves only the client's
//! `TimeoutConfig`. A connection idle in the SDK's pool through a network outage is handed out
//! again until the HTTP client's `pool_idle_timeout` (hyper's default 90 s) and costs the call
//! that meets it a timeout; a shorter `pool_idle_timeout` bounds that.
//!
//! Durability is DynamoDB's: a write is stored durably before it is acknowledged. The
//! repository's `docs/dynamodb.md` says what the tests inject, on which emulator, and what
//! neither emulator can show (run the kit against a table of your own for that).
//!
//! # Security
//!
//! IAM: `dynamodb:GetItem`, `PutItem` (a checkpoint's first write and its group's marker, a
//! lease's first grant), `UpdateItem` and `Query` on the table (leases need nothing more);
//! `CreateTable` and `DescribeTable` for `create_table`; `DeleteItem` (`purge`, and a refused
//! `start_at`) for the operations API and `unpark` only (`park` is a `PutItem`); `Scan` only to fill the groups' markers in on a
//! table of an earlier version (`create_table`, `fill_in_group_markers`, or the first
//! `groups` there).
//!
//! TLS: `aws-sdk-dynamodb`'s default HTTPS client (hyper, rustls, the platform's roots); only an
//! explicit `http://` endpoint is plain text. Requests are signed (SigV4): the secret never
//! travels. The store's `Debug` shows the table and the options, never the client, and errors
//! carry the response, never the signed request.
//!
//! Every operation is one `tracing` span at DEBUG named `checkpoint.<operation>` with the
//! fields `backend = "dynamodb"` and `table`, then those of `group`, `subscription` and
//! `partition` that the operation takes, and a count for a batch (`batch_size`) or a
//! `start_at`, `acquire`, `release` or `request_handover` (`partitions`); positions,
//! fingerprints and lease owners are not recorded, nor anything of the client.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod admin;
mod bounded;
mod clock;
mod error;
mod group_markers;
mod layout;
mod lease;
mod parked;
mod requests;
mod store;
mod transaction;

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
