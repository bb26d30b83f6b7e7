-- groups(). Every group with a checkpoint or a tombstone, each once, sorted by bytes (the
-- columns are VARBINARY), as one result set per group (one row each; the client reads them all
-- from one answer). The primary keys are walked group by group: each step is one index dive
-- per table (the first key after the last group found), so the cost follows the number of
-- groups, whatever the number of rows and whatever the optimizer's statistics know of them (a
-- `SELECT DISTINCT` gets its loose index scan only once they do). A result set per group
-- rather than one list: a temporary table would need CREATE TEMPORARY TABLES, and a JSON text
-- grown by CONCAT is copied whole at every step. In one read-only transaction, one snapshot.
CREATE PROCEDURE {groups_procedure}()
READS SQL DATA
SQL SECURITY INVOKER
BEGIN
    DECLARE v_last, v_checkpoint, v_retired VARBINARY(512);
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
        ROLLBACK;
        RESIGNAL;
    END;
    START TRANSACTION READ ONLY;
    SELECT MIN(group_name) INTO v_checkpoint FROM {table};
    SELECT MIN(group_name) INTO v_retired FROM {retired};
    walk: LOOP
        SET v_last = CASE
            WHEN v_checkpoint IS NULL THEN v_retired
            WHEN v_retired IS NULL THEN v_checkpoint
            ELSE LEAST(v_checkpoint, v_retired)
        END;
        IF v_last IS NULL THEN
            LEAVE walk;
        END IF;
        SELECT CONVERT(v_last USING utf8mb4) AS group_name;
        SELECT MIN(group_name) INTO v_checkpoint FROM {table} WHERE group_name > v_last;
        SELECT MIN(group_name) INTO v_retired FROM {retired} WHERE group_name > v_last;
    END LOOP walk;
    COMMIT;
END
