-- Settles a locked batch whose every row was published, on a store keeping
-- published rows, inside the transaction holding the rows' locks, which
-- also deletes the claim's record ($2); counts the attempt as started and
-- finished. Returns the ids of the rows it did not find, as
-- settle_locked_published.sql does.
with released as (
    delete from {claims} where token = $2
),
settled as (
    update {outbox}
    set status = 'published',
        finished_at = now(),
        attempts_started = attempts_started + 1,
        attempts_finished = attempts_finished + 1
    where id = any($1::bigint[])
    returning id
)
select u.id
from unnest($1::bigint[]) as u(id)
where u.id not in (select s.id from settled as s)
