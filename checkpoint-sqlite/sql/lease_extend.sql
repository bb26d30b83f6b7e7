-- ?1 group_name, ?2 subscription, ?3 owner, ?4 now (ms), ?5 expires_at_ms. In acquire's and
-- renew's write transactions: every lease the owner holds live now expires at ?5; an expired
-- one is not revived. Returns them.
UPDATE {leases} SET expires_at_ms = ?5
WHERE group_name = ?1 AND subscription = ?2 AND owner = ?3 AND expires_at_ms > ?4
RETURNING partition_id, epoch, handover_requested_by
