-- Counts per status, each served by the partial index over that status, and
-- the age of the oldest pending row (the first in staging order), in
-- microseconds. Pending rows named by a live locked claim's record are
-- counted in flight: such a claim holds them without rewriting them.
with held as (
    select count(*) as n
    from {outbox}
    where route = $1
        and status = 'pending'
        and (
            id in (
                select unnest(ids) from {claims} where route = $1 and expires_at > now()
            )
            or id <@ any (
                select id_ranges from {claims} where route = $1 and expires_at > now()
            )
        )
)
select
    (select count(*) from {outbox} where route = $1 and status = 'pending') - held.n as pending,
    (select count(*) from {outbox} where route = $1 and status = 'in_flight') + held.n as in_flight,
    (select count(*) from {outbox} where route = $1 and status = 'failed') as failed,
    (select count(*) from {outbox} where route = $1 and status = 'published') as published,
    (
        select (extract(epoch from now() - created_at) * 1000000)::bigint
        from {outbox}
        where route = $1 and status = 'pending'
        order by id + 0
        limit 1
    ) as oldest_pending_us
from held
