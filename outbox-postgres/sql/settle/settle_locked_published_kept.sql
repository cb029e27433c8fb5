-- Settles a locked batch whose every row was published, on a store keeping
-- published rows, inside the transaction holding the rows' locks, which
-- also deletes the claim's record ($2); counts the attempt as started and
-- finished. Returns the rows settled.
with released as (
    delete from {claims} where token = $2
)
update {outbox}
set status = 'published',
    finished_at = now(),
    attempts_started = attempts_started + 1,
    attempts_finished = attempts_finished + 1
where id = any($1::bigint[])
returning event_id, 'published' as outcome
