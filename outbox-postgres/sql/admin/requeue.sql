-- Moves failed rows of a route (all of them with $2, else those listed in
-- $3) back to pending with fresh attempt counters.
--
-- It first locks the unfinished rows of the same ordering keys, waiting for
-- a locked claim that holds one of them to settle. A requeued row is older
-- than those rows, and a locked claim's rows read as pending, so without
-- the wait the requeued row could be claimed while a newer row of its key
-- is being published. The update reads the count of `held` so that those
-- locks are taken (a plain select in a WITH runs only when read) before
-- any row is requeued.
with requeued as (
    select id, ordering_key
    from {outbox}
    where route = $1 and status = 'failed' and ($2 or event_id = any($3::uuid[]))
),
held as (
    select 1
    from {outbox} as k
    where k.route = $1 and k.status = 'pending'
        and k.ordering_key in (select ordering_key from requeued)
    for update of k
)
update {outbox}
set status = 'pending',
    available_at = now(),
    finished_at = null,
    attempts_started = 0,
    attempts_finished = 0
where id in (select id from requeued)
    and status = 'failed'
    and (select count(*) from held) >= 0
