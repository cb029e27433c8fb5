-- Counts per status and the age of the oldest pending row, in microseconds.
select
    count(*) filter (where status = 'pending') as pending,
    count(*) filter (where status = 'in_flight') as in_flight,
    count(*) filter (where status = 'failed') as failed,
    count(*) filter (where status = 'published') as published,
    (extract(epoch from now() - min(created_at) filter (where status = 'pending'))
        * 1000000)::bigint as oldest_pending_us
from {outbox}
where route = $1
