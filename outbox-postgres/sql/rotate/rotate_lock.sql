-- Locks slot {slot} for its truncation, or fails at once (lock_not_available)
-- while any transaction holds a lock on it: a claim, a settle, or a
-- transaction staging into it. Never queues behind them, so nothing else
-- ever waits for a rotation.
lock table {partition} in access exclusive mode nowait
