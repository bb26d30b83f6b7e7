-- $1 group, $2 subscription.
-- The live leases (owner, epoch, handover request: a row whose owner's heartbeat has its
-- generation and has not expired), then the live owners (heartbeats), each with the
-- microseconds left until it expires (a lease's is its owner's heartbeat's), all judged by
-- the server's clock (now()). A lease row has its partition; an owner row has none. Leases by
-- partition, owners by id (byte order: the "C" collation).
SELECT
    l.partition_id,
    l.owner,
    l.epoch,
    floor(extract(epoch FROM o.expires_at - now()) * 1000000)::bigint AS micros_left,
    l.handover_requested_by
FROM {leases} AS l
JOIN {owners} AS o
    ON o.group_name = l.group_name AND o.subscription = l.subscription AND o.owner = l.owner
        AND o.generation = l.owner_generation
WHERE l.group_name = $1 AND l.subscription = $2 AND o.expires_at > now()
UNION ALL
SELECT
    NULL::bigint,
    o.owner,
    NULL::bigint,
    floor(extract(epoch FROM o.expires_at - now()) * 1000000)::bigint,
    NULL::text
FROM {owners} AS o
WHERE o.group_name = $1 AND o.subscription = $2 AND o.expires_at > now()
ORDER BY 1 NULLS LAST, 2
