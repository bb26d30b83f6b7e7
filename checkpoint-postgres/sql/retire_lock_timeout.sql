-- $1 the store's timeout in milliseconds, as text. The first statement of retire's
-- transaction: its LOCK (retire_lock.sql) gives up after this long rather than wait on. A
-- LOCK waiting in the queue makes every later save on the table wait behind it, so it must
-- not outlive the call that asked for it. Local to the transaction.
SELECT set_config('lock_timeout', $1, true)
