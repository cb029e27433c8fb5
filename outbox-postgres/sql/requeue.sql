-- Moves failed rows of a route (all of them with $2, else those listed in
-- $3) back to pending with fresh attempt counters.
update {outbox}
set status = 'pending',
    available_at = now(),
    finished_at = null,
    attempts_started = 0,
    attempts_finished = 0
where route = $1 and status = 'failed' and ($2 or event_id = any($3::uuid[]))
