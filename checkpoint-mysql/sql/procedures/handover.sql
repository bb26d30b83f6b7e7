-- request_handover(group, subscription, requester, partitions: a JSON array of integers,
-- sorted). One transaction: the server's clock read once; each of the partitions held live by
-- another owner than the requester marked as wanted by it; free ones are left as they are.
-- Joined from the array, so that each partition is one primary-key lookup and only those rows
-- are locked, in partition order (an `IN (subquery)` lets the server scan, and lock, every
-- lease of the subscription). No result set.
CREATE PROCEDURE {handover_procedure}(
    IN p_group VARBINARY(512), IN p_subscription VARBINARY(512), IN p_requester VARBINARY(512),
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
    UPDATE {leases} AS l
    JOIN JSON_TABLE(p_partitions, '$[*]' COLUMNS (p BIGINT PATH '$')) AS b ON l.partition_id = b.p
    SET l.handover_requested_by = p_requester
    WHERE l.group_name = p_group AND l.subscription = p_subscription AND l.owner IS NOT NULL
        AND l.owner <> p_requester AND l.expires_at_ms > v_now;
    COMMIT;
END
