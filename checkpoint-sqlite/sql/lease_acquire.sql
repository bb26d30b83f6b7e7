-- ?1 group_name, ?2 subscription, ?3 owner, ?4 the duration (ms), ?5 partitions (a JSON array
-- of integers). Three statements sent as one request, in acquire's write transaction.
-- 1. Starts or extends the owner's heartbeat to SQLite's clock (read once: integer
--    milliseconds of `unixepoch('subsec')`, one value within the statement) + ?4, unless the
--    subscription is retired (a tombstone in {retired}); its row (-1, 0, NULL) says it did.
--    No row: retired, and the client rolls the transaction back, so what the next two
--    statements may write is undone.
-- 2. Every lease the owner holds live now expires with the heartbeat; an expired one is not
--    revived. Returns them. "Now" is the heartbeat's expiry less ?4: the instant statement 1
--    read, so one instant judges every expiry of the call.
--    `INDEXED BY {leases_by_owner}`: without it SQLite's planner searches the primary key by
--    (group, subscription), reading every lease of the subscription (136 µs against 9 µs
--    with 2,000 leases in it, measured with SQLite 3.40).
-- 3. Grants each partition asked for that has no lease yet (epoch 1) or whose lease is free
--    or expired (epoch + 1), with the heartbeat's expiry, and clears any handover request. A
--    lease held live, by this owner (extended by 2) or by another (refused), is left
--    untouched and not returned. Returns the grants.
INSERT INTO {lease_owners} (group_name, subscription, owner, expires_at_ms)
SELECT ?1, ?2, ?3, CAST(unixepoch('subsec') * 1000 AS INTEGER) + ?4
WHERE NOT EXISTS (SELECT 1 FROM {retired} WHERE group_name = ?1 AND subscription = ?2)
ON CONFLICT (group_name, subscription, owner) DO UPDATE
SET expires_at_ms = excluded.expires_at_ms
RETURNING -1, 0, NULL;
UPDATE {leases} INDEXED BY {leases_by_owner}
SET expires_at_ms = (
    SELECT expires_at_ms FROM {lease_owners}
    WHERE group_name = ?1 AND subscription = ?2 AND owner = ?3
)
WHERE group_name = ?1 AND subscription = ?2 AND owner = ?3
    AND expires_at_ms > (
        SELECT expires_at_ms - ?4 FROM {lease_owners}
        WHERE group_name = ?1 AND subscription = ?2 AND owner = ?3
    )
RETURNING partition_id, epoch, handover_requested_by;
INSERT INTO {leases} (group_name, subscription, partition_id, owner, epoch, expires_at_ms)
SELECT ?1, ?2, requested.value, ?3, 1, heartbeat.expires_at_ms
FROM json_each(?5) AS requested, {lease_owners} AS heartbeat
WHERE heartbeat.group_name = ?1 AND heartbeat.subscription = ?2 AND heartbeat.owner = ?3
ON CONFLICT (group_name, subscription, partition_id) DO UPDATE
SET owner = excluded.owner,
    epoch = {leases}.epoch + 1,
    expires_at_ms = excluded.expires_at_ms,
    handover_requested_by = NULL
WHERE {leases}.owner IS NULL OR {leases}.expires_at_ms <= excluded.expires_at_ms - ?4
RETURNING partition_id, epoch, handover_requested_by
