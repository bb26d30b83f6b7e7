-- No parameters. Every group with a checkpoint or a tombstone, each once, sorted by bytes
-- (the columns are VARBINARY). DISTINCT on the primary key's first column reads it as a loose
-- index scan (one probe per group); UNION removes duplicates.
SELECT CONVERT(g.group_name USING utf8mb4) FROM (
    SELECT DISTINCT group_name FROM {table}
    UNION
    SELECT group_name FROM {retired}
) AS g
ORDER BY g.group_name
