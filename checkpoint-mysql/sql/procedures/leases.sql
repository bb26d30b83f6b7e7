-- leases(group, subscription). One read-only transaction, one snapshot: the server's clock read
-- once (the first result set, one row), the live leases by partition, the live owners
-- (heartbeat not expired) by id (bytes).
CREATE PROCEDURE {leases_procedure}(
    IN p_group VARBINARY(512), IN p_subscription VARBINARY(512)
)
READS SQL DATA
SQL SECURITY INVOKER
BEGIN
    DECLARE v_now BIGINT;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
        ROLLBACK;
        RESIGNAL;
    END;
    START TRANSACTION READ ONLY;
    SET v_now = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000;
    SELECT v_now;
    SELECT partition_id, CONVERT(owner USING utf8mb4), epoch, expires_at_ms,
        CONVERT(handover_requested_by USING utf8mb4)
    FROM {leases}
    WHERE group_name = p_group AND subscription = p_subscription AND owner IS NOT NULL
        AND expires_at_ms > v_now
    ORDER BY partition_id;
    SELECT CONVERT(owner USING utf8mb4), expires_at_ms FROM {lease_owners}
    WHERE group_name = p_group AND subscription = p_subscription AND expires_at_ms > v_now
    ORDER BY owner;
    COMMIT;
END
