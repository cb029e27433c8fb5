-- Settles a locked batch whose every row was published, on a store keeping
-- published rows, inside the transaction holding the rows' locks, which
-- also deletes the claim's record ($3); counts the attempt as started and
-- finished. Takes the batch's runs of row ids and returns what it
-- settled, as settle_locked_published.sql does.
with released as (
    delete from {claims} where token = $3
),
settled as (
    update {outbox} as o
    set status = 'published',
        finished_at = now(),
        attempts_started = o.attempts_started + 1,
        attempts_finished = o.attempts_finished + 1
    from unnest($1::bigint[], $2::bigint[]) as run(first_id, last_id)
    where o.id between run.first_id and run.last_id
    returning o.id
)
select case when n.settled <> $4 then array(select s.id from settled as s) end as settled
from (select count(*) as settled from settled) as n
