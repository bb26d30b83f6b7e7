-- ? group_name. Names are bytes (VARBINARY): CONVERT reads them back as UTF-8 text.
SELECT CONVERT(subscription USING utf8mb4), partition_id, position FROM {table}
WHERE group_name = ?
