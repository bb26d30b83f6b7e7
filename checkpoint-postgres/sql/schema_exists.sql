-- $1 the schema of a schema-qualified table name: whether it exists. CREATE SCHEMA IF NOT
-- EXISTS needs the CREATE privilege on the database even when the schema is there, so the
-- migration only runs it when this says the schema is missing.
SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1)
