-- leave(group, subscription, owner). One transaction: the server's clock read once; the
-- owner's heartbeat deleted; every lease it holds live locked and returned (the one result
-- set, by partition), then freed (no owner, the epoch kept, the handover request cleared).
CREATE PROCEDURE {leave_procedure}(
    IN p_group VARBINARY(512), IN p_subscription VARBINARY(512), IN p_owner VARBINARY(512)
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
    DELETE FROM {lease_owners}
    WHERE group_name = p_group AND subscription = p_subscription AND owner = p_owner;
    SELECT partition_id FROM {leases}
    WHERE group_name = p_group AND subscription = p_subscription AND owner = p_owner
        AND expires_at_ms > v_now
    ORDER BY partition_id
    FOR UPDATE;
    UPDATE {leases} SET owner = NULL, expires_at_ms = v_now, handover_requested_by = NULL
    WHERE group_name = p_group AND subscription = p_subscription AND owner = p_owner
        AND expires_at_ms > v_now;
    COMMIT;
END
