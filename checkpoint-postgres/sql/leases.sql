-- $1 group, $2 subscription.
-- The live leases (owner, epoch, handover request), then the live owners (heartbeats), each
-- with the microseconds left until it expires, all judged by the server's clock (now()).
-- A lease row has its partition; an owner row has none. Leases by partition, owners by id
-- (byte order: the "C" collation).
SELECT
    l.partition_id,
    l.owner,
    l.epoch,
    floor(extract(epoch FROM l.expires_at - now()) * 1000000)::bigint AS micros_left,
    l.handover_requested_by
FROM {leases} AS l
WHERE l.group_name = $1 AND l.subscription = $2
    AND l.owner IS NOT NULL AND l.expires_at > now()
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
