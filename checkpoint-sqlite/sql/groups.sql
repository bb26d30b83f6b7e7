-- No parameters. Every group with a checkpoint or a tombstone, each once, sorted by bytes
-- (TEXT compares with the BINARY collation). UNION removes duplicates; DISTINCT on the
-- primary key's first column reads the index in order.
SELECT DISTINCT group_name FROM {table}
UNION
SELECT group_name FROM {retired}
ORDER BY group_name
