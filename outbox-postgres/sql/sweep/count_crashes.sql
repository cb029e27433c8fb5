-- Counts a crash against each pending row of $2 (row ids, one entry per
-- expired claim record naming the row) that no claim holds now; rows a live
-- claim has locked are left for a later sweep. Returns the rows counted.
with crashes as (
    select id, count(*) as n
    from unnest($2::bigint[]) as id
    group by id
),
free as (
    select o.id
    from {outbox} as o
    where o.route = $1 and o.id = any($2) and o.status = 'pending'
    for update of o skip locked
)
update {outbox} as o
set attempts_started = o.attempts_started + c.n
from crashes as c, free as f
where o.id = c.id and o.id = f.id
returning o.id
