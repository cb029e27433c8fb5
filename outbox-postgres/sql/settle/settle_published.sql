-- Settles a batch whose every row was published, on a store deleting
-- published rows: the common case, in a plain delete instead of the
-- outcome join of settle.sql. Fenced on the lease token like it; returns
-- the rows settled, and the caller reports the others as lost.
delete from {outbox}
where route = $1 and event_id = any($3::uuid[])
    and status = 'in_flight' and lease_token = $2
returning event_id, 'published' as outcome
