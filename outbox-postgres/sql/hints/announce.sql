-- Wakes relays after a staging transaction committed. A hint only, so this
-- statement's own commit does not wait for the WAL flush. The payload names
-- the sending store, whose own listeners were woken in process already.
select set_config('synchronous_commit', 'off', true), pg_notify($1, $2)
