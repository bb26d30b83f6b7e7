-- ?1 group_name, ?2 subscription, ?3 a JSON array of [partition, position] pairs, each
-- partition once. Run after presence.sql in the same write transaction, only when the
-- subscription has neither a checkpoint nor a tombstone: a plain INSERT.
INSERT INTO {table} (group_name, subscription, partition_id, position)
SELECT ?1, ?2, entry.value ->> 0, entry.value ->> 1
FROM json_each(?3) AS entry
