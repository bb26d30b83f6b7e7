-- ? group_name, ? subscription. The first statement of every lease transaction: the server's
-- clock, read once, as integer milliseconds since the Unix epoch (every later statement of the
-- transaction gets it as a parameter, so one instant judges every expiry), and whether the
-- subscription is retired. UTC_TIMESTAMP and TIMESTAMPDIFF between two DATETIMEs involve no
-- time zone, so neither the session's zone nor daylight saving time can shift the count.
SELECT
    TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000,
    EXISTS (SELECT 1 FROM {retired} WHERE group_name = ? AND subscription = ?)
