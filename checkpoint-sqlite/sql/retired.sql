-- ?1 group_name: its retired subscriptions, sorted by bytes.
SELECT subscription FROM {retired} WHERE group_name = ?1 ORDER BY subscription
