-- renew(group, subscription, owner, duration in ms). One transaction: the server's clock read
-- once and the tombstone checked (status 1: retired); the owner's heartbeat locked and, if
-- live, extended (status 2 when it expired or never existed: NotHeld, nothing written); every
-- lease the owner holds live extended. Result sets: the status (0), then the leases the owner
-- holds live by partition, read with locks. Whether the heartbeat is live is read, not taken
-- from an UPDATE's count, which would depend on the session counting matched or changed rows.
CREATE PROCEDURE {renew_procedure}(
    IN p_group VARBINARY(512), IN p_subscription VARBINARY(512), IN p_owner VARBINARY(512),
    IN p_duration_ms BIGINT
)
MODIFIES SQL DATA
SQL SECURITY INVOKER
BEGIN
    DECLARE v_now, v_expires BIGINT;
    DECLARE v_retired, v_live INT;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
        ROLLBACK;
        RESIGNAL;
    END;
    START TRANSACTION;
    SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000,
        EXISTS (SELECT 1 FROM {retired} WHERE group_name = p_group AND subscription = p_subscription)
    INTO v_now, v_retired;
    IF v_retired THEN
        ROLLBACK;
        SELECT 1 AS status;
    ELSE
        SELECT COUNT(*) INTO v_live FROM {lease_owners}
        WHERE group_name = p_group AND subscription = p_subscription AND owner = p_owner
            AND expires_at_ms > v_now
        FOR UPDATE;
        IF v_live = 0 THEN
            ROLLBACK;
            SELECT 2 AS status;
        ELSE
            SET v_expires = v_now + p_duration_ms;
            UPDATE {lease_owners} SET expires_at_ms = v_expires
            WHERE group_name = p_group AND subscription = p_subscription AND owner = p_owner;
            UPDATE {leases} SET expires_at_ms = v_expires
            WHERE group_name = p_group AND subscription = p_subscription AND owner = p_owner
                AND expires_at_ms > v_now;
            SELECT 0 AS status;
            SELECT partition_id, epoch, CONVERT(handover_requested_by USING utf8mb4) FROM {leases}
            WHERE group_name = p_group AND subscription = p_subscription AND owner = p_owner
                AND expires_at_ms > v_now
            ORDER BY partition_id
            FOR UPDATE;
            COMMIT;
        END IF;
    END IF;
END
