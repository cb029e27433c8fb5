-- Settles a batch whose every row was published, on a store keeping
-- published rows: the update settle.sql makes for them, without its
-- outcome join. Fenced on the lease token like it; returns the rows
-- settled, and the caller reports the others as lost.
update {outbox}
set status = 'published',
    finished_at = now(),
    lease_token = null,
    lease_expires_at = null,
    key_lock = null,
    attempts_finished = attempts_finished + 1
where route = $1 and event_id = any($3::uuid[])
    and status = 'in_flight' and lease_token = $2
returning event_id, 'published' as outcome
