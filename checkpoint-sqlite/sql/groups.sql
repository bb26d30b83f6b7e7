-- No parameters. Every group with a checkpoint or a tombstone, each once, sorted by bytes
-- (TEXT compares with the BINARY collation). The checkpoints are walked group by group along
-- the primary key (a loose index scan: one index probe per group, not one row per
-- checkpoint, so the cost follows the number of groups); UNION removes duplicates.
WITH RECURSIVE live (group_name) AS (
    SELECT (SELECT group_name FROM {table} ORDER BY group_name LIMIT 1)
    UNION ALL
    SELECT (
        SELECT c.group_name FROM {table} AS c
        WHERE c.group_name > live.group_name
        ORDER BY c.group_name
        LIMIT 1
    )
    FROM live
    WHERE live.group_name IS NOT NULL
)
SELECT group_name FROM live WHERE group_name IS NOT NULL
UNION
SELECT group_name FROM {retired}
ORDER BY group_name
