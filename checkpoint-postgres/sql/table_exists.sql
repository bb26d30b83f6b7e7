-- $1 the table name as quoted in every other statement: whether it resolves to a table, through
-- the connection's search_path as those statements resolve it.
SELECT to_regclass($1) IS NOT NULL
