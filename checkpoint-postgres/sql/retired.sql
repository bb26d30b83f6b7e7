-- $1 group: its retired subscriptions, sorted by bytes (COLLATE "C").
SELECT subscription
FROM {retired}
WHERE group_name = $1
ORDER BY subscription
