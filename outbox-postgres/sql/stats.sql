-- Counts per status, each served by the partial index over that status, and
-- the age of the oldest pending row (the first in staging order), in
-- microseconds.
select
    (select count(*) from {outbox} where route = $1 and status = 'pending') as pending,
    (select count(*) from {outbox} where route = $1 and status = 'in_flight') as in_flight,
    (select count(*) from {outbox} where route = $1 and status = 'failed') as failed,
    (select count(*) from {outbox} where route = $1 and status = 'published') as published,
    (
        select (extract(epoch from now() - created_at) * 1000000)::bigint
        from {outbox}
        where route = $1 and status = 'pending'
        order by id + 0
        limit 1
    ) as oldest_pending_us
