-- release(group, subscription, owner, partitions: a JSON array of integers). One transaction:
-- the server's clock read once; those of the partitions the owner holds live, locked and
-- returned (the one result set, by partition); then each of them freed (no owner, the epoch
-- kept, the handover request cleared) by the same condition, which now matches exactly the
-- rows locked. The rest of the partitions asked for are not touched.
CREATE PROCEDURE {release_procedure}(
    IN p_group VARBINARY(512), IN p_subscription VARBINARY(512), IN p_owner VARBINARY(512),
    IN p_partitions LONGTEXT
)
MODIFIES SQL DATA
SQL SECURITY INVOKER
BEGIN
    DECLARE v_now BIGINT;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
        ROLLBACK;
        RESIGNAL;
    END;
    START TRANSACTION;
    SET v_now = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000;
    SELECT l.partition_id FROM {leases} AS l
    WHERE l.group_name = p_group AND l.subscription = p_subscription AND l.owner = p_owner
        AND l.expires_at_ms > v_now
        AND l.partition_id IN (
            SELECT b.partition_id
            FROM JSON_TABLE(p_partitions, '$[*]' COLUMNS (partition_id BIGINT PATH '$')) AS b
        )
    ORDER BY l.partition_id
    FOR UPDATE;
    UPDATE {leases} AS l
    SET l.owner = NULL, l.expires_at_ms = v_now, l.handover_requested_by = NULL
    WHERE l.group_name = p_group AND l.subscription = p_subscription AND l.owner = p_owner
        AND l.expires_at_ms > v_now
        AND l.partition_id IN (
            SELECT b.partition_id
            FROM JSON_TABLE(p_partitions, '$[*]' COLUMNS (partition_id BIGINT PATH '$')) AS b
        );
    COMMIT;
END
