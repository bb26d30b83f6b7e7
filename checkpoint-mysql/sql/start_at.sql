-- ? group_name, ? subscription, ? a JSON array of [partition, position] pairs, each partition
-- once. Run after presence.sql in the same transaction, only when the subscription has
-- neither a checkpoint nor a tombstone: a plain INSERT.
INSERT INTO {table} (group_name, subscription, partition_id, position)
SELECT v.g, v.s, b.partition_id, b.position
FROM (SELECT ? AS g, ? AS s) AS v
JOIN JSON_TABLE(?, '$[*]' COLUMNS (
    partition_id BIGINT PATH '$[0]',
    position     BIGINT PATH '$[1]'
)) AS b
