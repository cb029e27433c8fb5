-- Table mode: fails rows for good, with the reason and the attempts made.
update {outbox} as o
set status = 'failed',
    finished_at = now(),
    last_error = u.reason,
    attempts_started = u.attempts,
    attempts_finished = u.attempts
from unnest($1::bigint[], $2::text[], $3::integer[]) as u(id, reason, attempts)
where o.id = u.id
returning o.id
