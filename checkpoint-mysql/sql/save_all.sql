-- ? group_name, ? the whole batch as one JSON array of [subscription, partition, position]
-- triples, at most one per (subscription, partition), sorted by key (collapsed and sorted by
-- the caller, so each row is written once and concurrent batches lock rows in one order).
-- JSON_TABLE expands it into rows; its BIGINT columns read every integer up to i64::MAX
-- exactly (its columns are named apart from the table's, which the update refers to). The
-- subscription is read as bytes, as the table keeps it: a text column would take the
-- connection's collation (case-, accent- and trailing-space-insensitive), and MariaDB's
-- subquery cache would then judge the tombstone of look-alike names as one.
-- Entries of a retired subscription are left out, as in save.sql.
INSERT INTO {table} (group_name, subscription, partition_id, position)
SELECT v.g, b.s, b.p, b.pos
FROM (SELECT ? AS g) AS v
JOIN JSON_TABLE(?, '$[*]' COLUMNS (
    ordinal FOR ORDINALITY,
    s       VARBINARY(512) PATH '$[0]',
    p       BIGINT PATH '$[1]',
    pos     BIGINT PATH '$[2]'
)) AS b
WHERE NOT EXISTS (
    SELECT 1 FROM {retired} AS r WHERE r.group_name = v.g AND r.subscription = b.s
)
ORDER BY b.ordinal
ON DUPLICATE KEY UPDATE
    updated_at = IF(VALUES(position) > position, CURRENT_TIMESTAMP(6), updated_at),
    position = GREATEST(position, VALUES(position))
