-- ? group_name, ? subscription, ? partition_id, ? from, ? to (named once in `v`, as MySQL's
-- placeholders are positional): a compare-and-set. Changes one row when the stored position
-- is still `from`, none otherwise (`to` > `from`, so a matched row always changes and counts
-- as affected).
UPDATE {table} AS t
JOIN (SELECT ? AS g, ? AS s, ? AS p, ? AS from_position, ? AS to_position) AS v
    ON t.group_name = v.g AND t.subscription = v.s AND t.partition_id = v.p
SET t.position = v.to_position, t.updated_at = CURRENT_TIMESTAMP(6)
WHERE t.position = v.from_position
