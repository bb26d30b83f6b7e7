-- acquire(group, subscription, owner, partitions: a JSON array of integers, duration in ms).
-- One transaction: the server's clock read once and the tombstone checked (status 1: retired,
-- nothing written); the heartbeat started or extended; every lease the owner holds live
-- extended (an expired one is not revived); each partition asked for that has no lease yet
-- granted at epoch 1, one free or expired at its epoch + 1 (the handover request cleared), one
-- held live by another owner left as it is. Result sets: the status (0), then the leases the
-- owner now holds live by partition, read with locks (as the rows are now, not as the
-- transaction's snapshot shows them). Rows are locked in partition order.
CREATE PROCEDURE {acquire_procedure}(
    IN p_group VARBINARY(512), IN p_subscription VARBINARY(512), IN p_owner VARBINARY(512),
    IN p_partitions LONGTEXT, IN p_duration_ms BIGINT
)
MODIFIES SQL DATA
SQL SECURITY INVOKER
BEGIN
    DECLARE v_now, v_expires BIGINT;
    DECLARE v_retired INT;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
        ROLLBACK;
        RESIGNAL;
    END;
    START TRANSACTION;
    -- Integer milliseconds of UTC_TIMESTAMP(6): no time zone enters it.
    SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000,
        EXISTS (SELECT 1 FROM {retired} WHERE group_name = p_group AND subscription = p_subscription)
    INTO v_now, v_retired;
    IF v_retired THEN
        ROLLBACK;
        SELECT 1 AS status;
    ELSE
        SET v_expires = v_now + p_duration_ms;
        INSERT INTO {lease_owners} (group_name, subscription, owner, expires_at_ms)
        VALUES (p_group, p_subscription, p_owner, v_expires)
        ON DUPLICATE KEY UPDATE expires_at_ms = v_expires;
        UPDATE {leases} SET expires_at_ms = v_expires
        WHERE group_name = p_group AND subscription = p_subscription AND owner = p_owner
            AND expires_at_ms > v_now;
        IF JSON_LENGTH(p_partitions) > 0 THEN
            -- The assignments run left to right: those before `owner` judge the stored lease;
            -- `expires_at_ms`, last, follows the new owner.
            INSERT INTO {leases} (group_name, subscription, partition_id, owner, epoch, expires_at_ms)
            SELECT p_group, p_subscription, b.partition_id, p_owner, 1, v_expires
            FROM JSON_TABLE(p_partitions, '$[*]' COLUMNS (partition_id BIGINT PATH '$')) AS b
            ORDER BY b.partition_id
            ON DUPLICATE KEY UPDATE
                epoch = IF(owner IS NULL OR expires_at_ms <= v_now, epoch + 1, epoch),
                handover_requested_by = IF(owner IS NULL OR expires_at_ms <= v_now, NULL, handover_requested_by),
                owner = IF(owner IS NULL OR expires_at_ms <= v_now, p_owner, owner),
                expires_at_ms = IF(owner = p_owner, v_expires, expires_at_ms);
        END IF;
        SELECT 0 AS status;
        SELECT partition_id, epoch, CONVERT(handover_requested_by USING utf8mb4) FROM {leases}
        WHERE group_name = p_group AND subscription = p_subscription AND owner = p_owner
            AND expires_at_ms > v_now
        ORDER BY partition_id
        FOR UPDATE;
        COMMIT;
    END IF;
END
