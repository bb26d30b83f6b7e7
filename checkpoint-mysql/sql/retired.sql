-- ? group_name: its retired subscriptions, sorted by bytes.
SELECT CONVERT(subscription USING utf8mb4) FROM {retired}
WHERE group_name = ?
ORDER BY subscription
